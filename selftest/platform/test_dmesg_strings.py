"""PLAT-DMESG reads the amdgpu driver's own strings: the messages of a hung or reset GPU, lost data
and a poisoned page fail, the banners of a healthy bring-up (which carry words like RAS, ECC,
error, reset) pass. Each line is the driver's format string (drivers/gpu/drm/amd/amdgpu) filled in
as the kernel prints it."""
import pytest

from rackgate.probes import dmesg

pytestmark = pytest.mark.unit

FAULTS = [
    # amdgpu_job.c amdgpu_job_timedout: "ring %s timeout, signaled seq=%u, emitted seq=%u"
    ("[ 2210.004700] amdgpu 0000:05:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=88, emitted seq=90",
     "ring timeout"),
    # amdgpu_device.c amdgpu_device_gpu_recover: "GPU reset begin!" / "GPU reset(%d) succeeded!"
    ("[ 2211.000000] amdgpu 0000:05:00.0: amdgpu: GPU reset begin!", "GPU reset"),
    ("[ 2213.500000] amdgpu 0000:05:00.0: amdgpu: GPU reset(2) failed", "GPU reset"),
    # amdgpu_ras.c amdgpu_ras_global_ras_isr
    ("[ 1358.996458] amdgpu 0000:83:00.0: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
     "uncorrectable hardware error (RAS interrupt)"),
    # amdgpu_ras.c amdgpu_ras_error_print_error_data: "socket: %d, die: %d, %lld new uncorrectable hardware
    # errors detected in %s block" and "%ld uncorrectable hardware errors detected in total in %s block"
    ("[ 2301.000100] amdgpu 0000:05:00.0: amdgpu: socket: 0, die: 1, 3 new uncorrectable hardware errors detected "
     "in umc block", "uncorrectable errors in a block"),
    ("[ 2301.000200] amdgpu 0000:05:00.0: amdgpu: 12 uncorrectable hardware errors detected in total in umc block",
     "uncorrectable errors in a block"),
    # amdgpu_ras.c amdgpu_ras_interrupt_poison_creation_handler (and the RAS manager's "{%llu} RAS poison ...")
    ("[ 2300.000000] amdgpu 0000:05:00.0: amdgpu: Poison is created, no user action is needed.", "RAS poison created"),
    ("[ 2300.000000] amdgpu 0000:05:00.0: amdgpu: {7} RAS poison is created, no user action is needed.",
     "RAS poison created"),
]
BANNERS = [
    # amdgpu_ras.c amdgpu_ras_init: "RAS INFO: ras initialized successfully, hardware ability[%x] ras_mask[%x]"
    "[    3.292351] amdgpu 0000:05:00.0: amdgpu: RAS INFO: ras initialized successfully, hardware ability[7ff7f] "
    "ras_mask[7ff7f]",
    # amdgpu_ras.c amdgpu_ras_check_supported: "MEM ECC is active." / "SRAM ECC is active."
    "[    3.281115] amdgpu 0000:05:00.0: amdgpu: MEM ECC is active.",
    "[    3.286679] amdgpu 0000:05:00.0: amdgpu: SRAM ECC is active.",
    # amdgpu_ras.c: corrected errors are the ECC doing its job; zero uncorrectable is no loss
    "[ 2301.000300] amdgpu 0000:05:00.0: amdgpu: socket: 0, die: 1, 4 new correctable hardware errors detected in umc "
    "block",
    "[ 2301.000400] amdgpu 0000:05:00.0: amdgpu: 0 uncorrectable hardware errors detected in total in umc block",
    # drm_drv.c drm_dev_register: "Initialized %s %d.%d.%d %s for %s on minor %d"
    "[    4.120000] [drm] Initialized amdgpu 3.57.0 20150101 for 0000:05:00.0 on minor 1",
    # amdgpu_ttm.c: "amdgpu: %uM of VRAM memory ready"
    "[    3.400000] [drm] amdgpu: 196592M of VRAM memory ready",
    # amdgpu_ras.c: "No RAS poison status in %s poison IH." (an interrupt that was not a consumption)
    "[ 2302.000000] amdgpu 0000:05:00.0: amdgpu: No RAS poison status in gfx poison IH.",
]


@pytest.mark.parametrize("line, name", FAULTS)
def test_a_driver_fault_message_fails_plat_dmesg(line, name):
    hits = dmesg.match(dmesg.parse(line + "\n"), dmesg.PLAT_DMESG)
    assert hits and name in hits[0].patterns, (line, hits)


def test_a_healthy_bring_up_s_banners_match_nothing():
    hits = dmesg.match(dmesg.parse("\n".join(BANNERS) + "\n"), dmesg.PLAT_DMESG)
    assert hits == [], [(h.line.raw, h.patterns) for h in hits]

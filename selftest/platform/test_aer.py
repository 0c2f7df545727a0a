"""PCIe AER in the kernel log (rackgate/probes/aer.py, rackgate/gates/aer.py) and in the bracket
(gates/ras.py: correctable AER judged by its storm rate). The lines are built from
drivers/pci/pcie/aer.c's format strings (aer_print_source / aer_print_port_info, aer_print_error,
__aer_print_error's "   [%2d] %-22s%s", pci_print_aer's firmware-first lines) and err.c's recovery
line, both severity vocabularies (Uncorrected/Corrected before the rename, Uncorrectable/Correctable
after), and mutated as real logs are (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.config import load
from rackgate.config.model import Rack
from rackgate.errors import CouldNotObserve
from rackgate.gates import aer as judge
from rackgate.gates import ras as ras_judge
from rackgate.probes import aer, dmesg
from rackgate.probes.ras import Rise
from rackgate.simrack import shipped_rack

from ..properties.mutate import SETTINGS

pytestmark = pytest.mark.unit

GPU, PORT, OTHER = "0000:25:00.0", "0000:00:03.1", "0000:c1:00.0"
# current kernels: "... error message received from", the Uncorrectable/Correctable names
NONFATAL_NEW = f"""[ 5012.100001] pcieport {PORT}: AER: Uncorrectable (Non-Fatal) error message received from {GPU}
[ 5012.100010] amdgpu {GPU}: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)
[ 5012.100015] amdgpu {GPU}:   device [1002:75a3] error status/mask=00004000/00000000
[ 5012.100020] amdgpu {GPU}:    [14] CmpltTO                (First)
[ 5012.300000] pcieport {PORT}: AER: broadcast resume message
[ 5012.300100] pcieport {PORT}: AER: device recovery successful
"""
# older kernels: "... error received: <bdf>", Uncorrected/Corrected, "AER: " on pci_err lines
FATAL_OLD = f"""[  812.000001] pcieport {PORT}: AER: Uncorrected (Fatal) error received: {PORT}
[  812.000002] pcieport {PORT}: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Data Link Layer, (Receiver ID)
[  812.000003] pcieport {PORT}: AER:   device [1022:14ab] error status/mask=00000010/00400000
[  812.000004] pcieport {PORT}: AER:    [ 4] DLP                    (First)
[  813.100000] pcieport {PORT}: AER: Device recovery failed
"""
CORRECTED_OLD = f"""[  100.000001] pcieport {PORT}: AER: Corrected error received: {GPU}
[  100.000002] amdgpu {GPU}: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[  100.000003] amdgpu {GPU}: AER:   device [1002:75a3] error status/mask=00000001/00006000
[  100.000004] amdgpu {GPU}: AER:    [ 0] {'RxErr':<22}
"""
# firmware first (APEI/GHES -> pci_print_aer): no severity word; aer_uncor_severity marks it uncorrectable
FIRMWARE_FIRST = f"""[  300.000000] amdgpu {GPU}: AER: aer_status: 0x00004000, aer_mask: 0x00000000
[  300.000001] amdgpu {GPU}: AER:    [14] {'CmpltTO':<22}
[  300.000002] amdgpu {GPU}: AER: aer_layer=Transaction Layer, aer_agent=Requester ID
[  300.000003] amdgpu {GPU}: AER: aer_uncor_severity: 0x00062030
"""
NO_DETAILS = f"[  200.000000] pcieport {PORT}: AER: Multiple Correctable error message received from {GPU} (no details found\n"
NIC = f"""[ 6000.000001] pcieport 0000:c0:01.1: AER: Uncorrectable (Non-Fatal) error message received from {OTHER}
[ 6000.000002] mlx5_core {OTHER}: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)
"""
SAMPLES = (NONFATAL_NEW, FATAL_OLD, CORRECTED_OLD, FIRMWARE_FIRST, NO_DETAILS)

SIM = load(shipped_rack())
GPUS = (aer.GpuPath("gpu2 (card2, 0000:25:00.0)", GPU, (PORT,)),
        aer.GpuPath("gpu0 (card0, 0000:05:00.0)", "0000:05:00.0", ("0000:00:01.1",)))


def _recs(text: str) -> list[aer.Record]:
    return aer.records([(ln.t, ln.raw) for ln in dmesg.parse(text)])


def _facts(recs: list[aer.Record]) -> list[tuple]:
    return [(r.device, r.severity, r.bits, r.first, r.recovery) for r in recs]


def rack(**platform) -> Rack:
    return SIM.model_copy(update={"platform": SIM.platform.model_copy(update=platform)})


def test_each_dialect_is_one_record_against_the_device_that_logged_it():
    assert _facts(_recs(NONFATAL_NEW)) == [(GPU, "nonfatal", ("CmpltTO",), "CmpltTO", "successful")]
    assert _facts(_recs(FATAL_OLD)) == [(PORT, "fatal", ("DLP",), "DLP", "failed")]
    assert _facts(_recs(CORRECTED_OLD)) == [(GPU, "corrected", ("RxErr",), "", "")]
    assert _facts(_recs(FIRMWARE_FIRST)) == [(GPU, "nonfatal", ("CmpltTO",), "", "")]
    assert _facts(_recs(NO_DETAILS)) == [(GPU, "corrected", (), "", "")]
    assert _recs(NONFATAL_NEW)[0].reporter == PORT and _recs(NONFATAL_NEW)[0].kind == "Transaction Layer"


def test_a_severity_bit_set_in_aer_uncor_severity_makes_a_firmware_first_record_fatal():
    fatal = FIRMWARE_FIRST.replace("aer_uncor_severity: 0x00062030", "aer_uncor_severity: 0x00066030")
    assert _recs(fatal)[0].severity == "fatal"
    corrected = "\n".join(ln for ln in FIRMWARE_FIRST.splitlines() if "uncor_severity" not in ln)
    assert _recs(corrected)[0].severity == "corrected"


def test_lines_that_are_no_aer_record_give_none():
    healthy = ("[    1.2] pcieport 0000:00:01.1: AER: enabled with IRQ 36\n"
               "[    1.3] amdgpu 0000:05:00.0: amdgpu: RAS INFO: ras initialized successfully\n"
               "[    2.0] pci 0000:05:00.0: 252.048 Gb/s available PCIe bandwidth\n")
    assert _recs(healthy) == []


def test_uncorrectable_on_a_gpu_fails_that_gpu_even_when_recovery_succeeded():
    found = judge.findings(tuple(_recs(NONFATAL_NEW)), GPUS, rack())
    assert len(found) == 1 and found[0].startswith("gpu2 (card2, 0000:25:00.0): PCIe AER Uncorrectable (Non-Fatal)")
    assert "CmpltTO (First)" in found[0] and "recovery successful" in found[0]


def test_uncorrectable_on_the_gpus_upstream_port_is_charged_to_the_gpu():
    found = judge.findings(tuple(_recs(FATAL_OLD)), GPUS, rack())
    assert len(found) == 1 and found[0].startswith("gpu2") and f"its upstream port {PORT}" in found[0]
    assert "Uncorrectable (Fatal)" in found[0] and "recovery failed" in found[0]


def test_uncorrectable_on_another_device_is_evidence_not_a_gpu_finding():
    recs = tuple(_recs(NIC))
    assert [r.device for r in recs] == [OTHER] and judge.findings(recs, GPUS, rack()) == []
    assert "no GPU" in judge.shown(recs, GPUS)


def test_correctable_errors_are_counted_per_gpu_and_fail_only_as_a_storm():
    few = "".join(CORRECTED_OLD.replace("[  100.", f"[  {100 + 30 * k}.") for k in range(5))
    recs = tuple(_recs(few))
    assert judge.findings(recs, GPUS, rack()) == []
    assert "gpu2 (card2, 0000:25:00.0): 5 correctable AER error(s) this boot" in judge.shown(recs, GPUS)
    storm = "".join(CORRECTED_OLD.replace("[  100.", f"[  {100 + 2 * k}.") for k in range(12))
    found = judge.findings(tuple(_recs(storm)), GPUS, rack())
    assert len(found) == 1 and "storm" in found[0] and "12 within one minute" in found[0]
    assert judge.findings(tuple(_recs(storm)), GPUS, rack(aer_storm_per_min=20)) == []


def test_records_with_gpus_unlisted_are_could_not_observe_naming_why():
    with pytest.raises(CouldNotObserve, match="which GPU they name cannot be told: no /sys/class/drm"):
        judge.judge(tuple(_recs(NONFATAL_NEW)), (), "no /sys/class/drm", rack(), "node1")
    assert judge.judge((), (), "", rack(), "node1") == []


def test_topology_reads_the_upstream_ports_from_the_resolved_device_path():
    text = ("card0\t/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:05:00.0\t"
            "../../../bus/pci/drivers/amdgpu\t\n"
            "card1\t/sys/devices/pci0000:00/0000:00:03.1/0000:25:00.0\t../../../../bus/pci/drivers/amdgpu\t\n")
    got = aer.parse_topology(text, "node1", 2)
    assert [(g.label, g.upstream) for g in got] == [
        ("gpu0 (card0, 0000:05:00.0)", ("0000:00:01.1", "0000:01:00.0", "0000:02:00.0")),
        ("gpu1 (card1, 0000:25:00.0)", ("0000:00:03.1",))]


def test_a_stage_charges_correctable_aer_and_fails_only_past_the_storm_rate():
    def rises(by: int, seconds: float) -> dict[str, list[Rise]]:
        return {"fabric": [Rise("gpu0", "aer.correctable.RxErr", 0, by, seconds),
                           Rise("gpu0", "aer.correctable.TOTAL_ERR_COR", 1, 1 + by, seconds)]}
    assert ras_judge.stage_rises(rises(8, 60.0), rack()) == []            # 8 a minute
    assert ras_judge.stage_rises(rises(30, 600.0), rack()) == []          # 3 a minute over 10 minutes
    found = ras_judge.stage_rises(rises(30, 60.0), rack())
    assert len(found) == 1 and "30.0 a minute" in found[0] and "aer.correctable.TOTAL_ERR_COR 1 -> 31" in found[0]
    assert ras_judge.aer_correctable_by_gpu(rises(30, 600.0)) == {"gpu0": 30}


# --- real lines, mutated as logs are ----------------------------------------------------------
PREFIXES = {  # how the same kernel line reaches a reader
    "dmesg": lambda t, line: f"[{t:>12.6f}] {line}",
    "dmesg -T": lambda t, line: f"[Mon Dec  7 19:{int(t) % 60:02d}:00 2026] {line}",
    "dmesg -x": lambda t, line: f"kern  :err   : [{t:>12.6f}] {line}",
    "dmesg -r": lambda t, line: f"<3>[{t:>12.6f}] {line}",
    "journalctl -k": lambda t, line: f"Dec 07 19:00:{int(t) % 60:02d} node1 kernel: {line}",
    "syslog": lambda t, line: f"2026-12-07T19:00:00.123456+00:00 node1 kernel: [{t:>12.6f}] {line}",
}


def _unprefixed(text: str) -> list[tuple[float, str]]:
    return [(ln.t or 0.0, ln.text) for ln in dmesg.parse(text)]


@given(sample=st.sampled_from(SAMPLES), prefix=st.sampled_from(sorted(PREFIXES)), ansi=st.booleans(),
       crlf=st.booleans(), noise=st.booleans())
@SETTINGS
def test_a_record_reads_the_same_whatever_the_prefix_colour_and_line_ends(sample, prefix, ansi, crlf, noise):
    want = _facts(_recs(sample))
    lines = [PREFIXES[prefix](t, line) for t, line in _unprefixed(sample)]
    if ansi:  # dmesg --color=always: the timestamp and the device prefix coloured
        lines = [f"\x1b[32m{ln.replace(': ', ': ' + chr(27) + '[0m', 1)}" for ln in lines]
    if noise:  # an unrelated driver's line in between
        lines.insert(1, PREFIXES[prefix](1.0, "nvme nvme0: 32/0/0 default/read/poll queues"))
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    assert _facts(_recs(text)) == want


# --- the bracket: the kernel log's AER records charged to a GPU and a stage ---------------------
def _snapshot_text(kmsg: str, path: str = f"/sys/devices/pci0000:00/{PORT}/{GPU}") -> str:
    from .test_ras import AER_COR, AER_FATAL
    head = f"@@card card2\t../../../{GPU}\t../../../bus/pci/drivers/amdgpu\tualink\n@@path {path}\n"
    body = ("@@file ras/umc_err_count\nue: 0\nce: 1\nde: 0\n@@file ras/gpu_vram_bad_pages\n"
            "@@file ras/features\nfeature mask: 0x3fbb\n"
            f"@@file aer_dev_correctable\n{AER_COR}@@file aer_dev_fatal\n{AER_FATAL}@@absent aer_dev_nonfatal\n"
            "@@file pcie_replay_count\n1\n")
    return head + body + "@@kmsg\n" + kmsg + "@@kmsg-end\n"


def test_the_snapshot_counts_the_kernel_logs_aer_records_per_gpu_with_its_upstream_port():
    from rackgate.probes import ras
    snap = ras.parse(_snapshot_text(FATAL_OLD + CORRECTED_OLD + NIC), "node1", 1)
    assert snap.kmsg_error == "" and snap.gpus[0].kmsg_aer == {"correctable": 1, "uncorrectable": 1}
    assert snap.gpus[0].counters()["kmsg_aer.uncorrectable"] == 1
    unread = ras.parse(_snapshot_text("@@kmsg-unread\n"), "node1", 1)
    assert unread.gpus[0].kmsg_aer is None and "dmesg could not be read" in unread.kmsg_error


def test_a_stage_fails_on_an_uncorrectable_record_logged_against_the_gpus_port():
    rises = {"fabric": [Rise("gpu2", "kmsg_aer.uncorrectable", 0, 1, 90.0)]}
    found = ras_judge.stage_rises(rises, rack())
    assert found == ["gpu2 during fabric: kmsg_aer.uncorrectable 0 -> 1"]
    calm = {"fabric": [Rise("gpu2", "kmsg_aer.correctable", 0, 5, 120.0)]}
    assert ras_judge.stage_rises(calm, rack()) == []
    storm = {"fabric": [Rise("gpu2", "kmsg_aer.correctable", 0, 50, 120.0)]}
    assert "25.0 a minute" in ras_judge.stage_rises(storm, rack())[0]

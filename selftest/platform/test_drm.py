"""Which DRM card is which GPU (rackgate/probes/drm.py): the cards bound to amdgpu, in PCI order,
whatever else holds card0; read from the kernel's sysfs shape (links to the PCI device and its
driver), as the sim renders it and a real node has it."""
from types import SimpleNamespace

import pytest
from hypothesis import given

from rackgate.errors import CouldNotObserve, UnrecognisedOutput
from rackgate.probes import drm
from rackgate.sim import drm as sim_drm
from rackgate.transport import Host, LocalRunner
from rackgate.transport.result import Result

from ..properties.mutate import SETTINGS, cases

pytestmark = pytest.mark.unit

AMDGPU = "../../../../bus/pci/drivers/amdgpu"
# What the listing prints on a tray whose BMC video card (ASPEED, driver ast) holds card0.
BMC_TRAY = (
    "card0\t../../../0000:02:00.0\t../../../../bus/pci/drivers/ast\t\n"
    f"card1\t../../../0000:05:00.0\t{AMDGPU}\tualink\n"
    f"card2\t../../../0000:15:00.0\t{AMDGPU}\tualink\n"
    f"card3\t../../../0000:65:00.0\t{AMDGPU}\tualink\n"
    f"card4\t../../../0000:75:00.0\t{AMDGPU}\tualink\n"
)


def _map(text: str) -> drm.GpuMap:
    return drm.GpuMap.of("node2", drm.parse_listing(text, "node node2"))


def test_a_bmc_card0_is_not_a_gpu_and_gpu3_is_card4():
    m = _map(BMC_TRAY)
    assert [c.card for c in m.gpus] == [1, 2, 3, 4]
    assert [c.driver for c in m.others] == ["ast"]
    assert m.mismatch(4) is None
    assert m.card(3, 4).card == 4
    assert m.where(3, 4) == "node2/gpu3 (card4, 0000:75:00.0)"


def test_gpus_are_numbered_in_pci_order_not_card_order():
    text = (f"card0\t../../../0000:75:00.0\t{AMDGPU}\t\ncard1\t../../../0000:05:00.0\t{AMDGPU}\t\n"
            f"card2\t../../../0001:01:00.0\t{AMDGPU}\t\ncard3\t../../../0000:c1:00.0\t{AMDGPU}\t\n")
    assert [(c.card, c.bdf) for c in _map(text).gpus] == [
        (1, "0000:05:00.0"), (0, "0000:75:00.0"), (3, "0000:c1:00.0"), (2, "0001:01:00.0")]


def test_a_card_with_the_ualink_directory_is_a_gpu_whatever_its_driver_link_reads():
    m = _map("card0\t../../../0000:05:00.0\t\tualink\n")
    assert [c.card for c in m.gpus] == [0]


def test_more_or_fewer_amdgpu_cards_is_the_finding_and_no_gpu_is_guessed():
    three = "".join(BMC_TRAY.splitlines(keepends=True)[:4])
    m = _map(three)
    found = m.mismatch(4)
    assert found.startswith("3 DRM cards bound to amdgpu") and "card3 0000:65:00.0" in found
    assert "other DRM cards: card0 0000:02:00.0 driver=ast" in found
    with pytest.raises(drm.CardCount, match=r"node2/gpu0: which DRM card .*PLAT-GPUS"):
        m.card(0, 4)
    five = BMC_TRAY + f"card5\t../../../0000:85:00.0\t{AMDGPU}\t\n"
    assert _map(five).mismatch(4).startswith("5 DRM cards")
    assert _map("card0\t../../../0000:02:00.0\t../../ast\t\n").mismatch(4).startswith("0 DRM cards")


def test_what_the_listing_cannot_place_is_could_not_observe():
    with pytest.raises(UnrecognisedOutput, match="listing line not understood"):
        _map("card1 ../../../0000:05:00.0 amdgpu\n")
    with pytest.raises(UnrecognisedOutput, match="no PCI address"):
        _map(f"card1\t../../../simple-framebuffer.0\t{AMDGPU}\t\n")


@SETTINGS
@given(cases([BMC_TRAY]))
def test_mutated_listings_give_a_map_or_could_not_observe(case):
    """Mutated real listings and garbage: a map, or could not observe; garbage never maps 4 GPUs."""
    text, is_garbage = case
    try:
        m = _map(text)
    except CouldNotObserve:
        return
    assert all(c.is_gpu and c.bdf for c in m.gpus)
    assert [drm.pci_key(c.bdf) for c in m.gpus] == sorted(drm.pci_key(c.bdf) for c in m.gpus)
    if is_garbage:
        assert m.mismatch(4) is not None


def _root(tmp_path, layout: str, modules=("amdgpu",)):
    node = SimpleNamespace(drm_layout=layout, modules=list(modules),
                           gpus=[SimpleNamespace(card=g, bdf=None) for g in range(4)])
    root = tmp_path / "root"
    sim_drm.render(root, node)
    for g in range(4):
        dev = root / sim_drm.card_dir(node, g) / "device"
        (dev / "ualink").mkdir()
        (dev / "vendor").write_text("0x1002\n")
        (dev / "mem_info_vram_total").write_text(f"{432 * 2**30}\n")
    return Host("node2", LocalRunner("node2", {}), sysroot=str(root)), root


def test_a_listing_that_could_not_run_is_could_not_observe_never_zero_gpus(tmp_path):
    """No readlink on the node (the script exits 127), or /sys/class/drm unreadable: the suite
    could not look -- never "0 amdgpu cards", which would be a PLAT-GPUS verdict."""
    class NoReadlink(Host):
        def shell(self, script, *args, timeout=None, stdin=None):
            return Result(self.name, "sh -c ...", 127, "", "", 0.0)

    host, _ = _root(tmp_path, "plain")
    with pytest.raises(CouldNotObserve, match=r"node node2: listing /sys/class/drm failed \(rc 127\)"):
        drm.discover(NoReadlink("node2", host.runner, sysroot=host.sysroot))


@pytest.mark.parametrize("stdout", ["", "card1\t../../../0000:05:00.0\t../../../../bus/pci/drivers/amdgpu\tualink\n"],
                         ids=["empty", "cut-short"])
def test_a_listing_that_did_not_come_back_whole_is_could_not_observe_never_fewer_gpus(tmp_path, stdout):
    """Exit 0 with nothing (or with the cards cut short before the end marker): the suite did
    not see the listing whole -- never "0 (or 1) amdgpu cards", which would be PLAT-GPUS's finding."""
    class Quiet(Host):
        def shell(self, script, *args, timeout=None, stdin=None):
            return Result(self.name, "sh -c ...", 0, stdout, "", 0.0)

    host, _ = _root(tmp_path, "plain")
    with pytest.raises(CouldNotObserve, match="did not come back whole"):
        drm.discover(Quiet("node2", host.runner, sysroot=host.sysroot))

"""The GPUs' hardware error counters: the parsers on the kernel's own formats (amdgpu_ras.c's
documented examples, aer.c's attribute format, a real gpu_vram_bad_pages excerpt quoted on
amd-gfx), PLAT-RAS's judge, the rises between two snapshots and how FAB-ERRORS / SRV-HW-ERRORS
judge them, and the bracket charging each rise to its stage."""
from __future__ import annotations

import pytest

from rackgate import registry
from rackgate.config import load
from rackgate.config.model import Rack
from rackgate.errors import CouldNotObserve, UnrecognisedOutput
from rackgate.fixtures.bracket import Bracket
from rackgate.gates import ras as judge
from rackgate.probes import ras
from rackgate.probes.target import On
from rackgate.simrack import shipped_rack

pytestmark = pytest.mark.unit

# amdgpu_ras.c, "DOC: AMDGPU RAS sysfs Error Count Interface": "ue: 0\nce: 1"; UMC adds "de: N".
ERR_COUNT = "ue: 0\nce: 1\n"
UMC_COUNT = "ue: 0\nce: 3\nde: 0\n"
# Retired pages as `cat .../ras/gpu_vram_bad_pages` printed them (amd-gfx, "0x%08x : 0x%08x : %1s").
BAD_PAGES = "0x027f5d43 : 0x00001000 : R\n0x027f5d4b : 0x00001000 : R\n0x027f5f43 : 0x00001000 : P\n"
# drivers/pci/pcie/aer.c aer_stats_dev_attr: "%s %llu" per named bit, then TOTAL_ERR_COR.
AER_COR = ("RxErr 0\nBadTLP 1\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\n"
           "TOTAL_ERR_COR 1\n")
AER_FATAL = ("Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\n"
             "ECRC 0\nUnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\n"
             "PoisonTLPBlocked 0\nTOTAL_ERR_FATAL 0\n")


def card(n: int, bdf: str, umc: str = UMC_COUNT, pages: str = "", ras_dir: bool = True, replay: int = 1) -> str:
    head = f"@@card card{n}\t../../../{bdf}\t../../../bus/pci/drivers/amdgpu\tualink\n"
    body = (f"@@file ras/gfx_err_count\n{ERR_COUNT}@@file ras/umc_err_count\n{umc}"
            f"@@file ras/gpu_vram_bad_pages\n{pages}@@file ras/features\nfeature mask: 0x3fbb\n") if ras_dir \
        else "@@nodir ras\n"
    return (head + body + f"@@file aer_dev_correctable\n{AER_COR}@@file aer_dev_fatal\n{AER_FATAL}"
            + f"@@absent aer_dev_nonfatal\n@@file pcie_replay_count\n{replay}\n")


BDFS = ("0000:05:00.0", "0000:15:00.0", "0000:65:00.0", "0000:75:00.0")
NODE = "".join(card(i, b) for i, b in enumerate(BDFS))


SIM = load(shipped_rack())  # hbm_gib 432, gpus_per_node 4


def rack(**platform) -> Rack:
    return SIM.model_copy(update={"platform": SIM.platform.model_copy(update=platform)})


# --- parsers ----------------------------------------------------------------------------------
def test_the_counter_files_parse_in_the_kernels_formats():
    b = ras.parse_err_count(UMC_COUNT, "x/ras/umc_err_count")
    assert (b.name, b.ue, b.ce, b.de) == ("umc", 0, 3, 0)
    assert ras.parse_err_count(ERR_COUNT, "x/ras/gfx_err_count").de is None
    assert ras.parse_err_count("Query currently inaccessible\n", "x/ras/umc_err_count") is None
    assert [p.flag for p in ras.parse_bad_pages(BAD_PAGES, "x")] == ["R", "R", "P"]
    assert ras.parse_bad_pages("", "x") == ()
    assert ras.parse_aer(AER_COR, "x", "aer_dev_correctable")["TOTAL_ERR_COR"] == 1
    assert ras.parse_aer("dev_cor_errs_bit[1] 2\nTOTAL_ERR_COR 2\n", "x", "aer_dev_correctable") == {
        "dev_cor_errs_bit[1]": 2, "TOTAL_ERR_COR": 2}
    assert ras.parse_features("feature mask: 0x3fbb\n", "x") == 0x3fbb


@pytest.mark.parametrize("fn, text", [
    (lambda t: ras.parse_err_count(t, "x/ras/umc_err_count"), "ue: 0\n"),          # no ce line
    (lambda t: ras.parse_err_count(t, "x/ras/umc_err_count"), "ue: 0\nce: x\n"),
    (lambda t: ras.parse_err_count(t, "x/ras/umc_err_count"), "ue: 0\nue: 1\nce: 0\n"),
    (lambda t: ras.parse_bad_pages(t, "x"), "0x027f5d43 : 0x00001000 : Q\n"),
    (lambda t: ras.parse_aer(t, "x", "aer_dev_fatal"), "DLP 0\nSDES 0\n"),           # no TOTAL_ERR_FATAL
    (lambda t: ras.parse_replay(t, "x"), "N/A\n"),
])
def test_a_line_of_another_shape_is_unrecognised_never_zero(fn, text):
    with pytest.raises(UnrecognisedOutput):
        fn(text)


def test_one_snapshot_numbers_the_gpus_in_pci_order_and_keeps_what_was_absent():
    snap = ras.parse("".join(card(i, b) for i, b in reversed(list(enumerate(BDFS)))), "node1", 4)
    assert [g.gpu for g in snap.gpus] == [0, 1, 2, 3] and [g.card for g in snap.gpus] == [0, 1, 2, 3]
    g = snap.gpus[0]
    assert g.absent == ("aer_dev_nonfatal",) and g.replay == 1 and g.features == 0x3fbb
    assert g.counters()["ras.umc.ce"] == 3 and g.counters()["aer.correctable.BadTLP"] == 1


def test_output_outside_the_markers_is_unrecognised():
    with pytest.raises(UnrecognisedOutput):
        ras.parse("ue: 0\n" + NODE, "node1", 4)
    with pytest.raises(UnrecognisedOutput):
        ras.parse(NODE.replace("@@file ras/features", "@@what ras/features"), "node1", 4)


# --- PLAT-RAS ---------------------------------------------------------------------------------
def test_plat_ras_passes_on_every_gpu_read_whole_and_clean():
    assert judge.ras_level(ras.parse(NODE, "node1", 4), rack(), "node1") == []


def test_plat_ras_fails_on_an_uncorrectable_error_pages_over_the_limit_or_unreservable():
    node = card(0, BDFS[0], umc="ue: 2\nce: 3\nde: 0\n") + card(1, BDFS[1], pages="0x00000001 : 0x00001000 : F\n") \
        + "".join(card(i, b) for i, b in list(enumerate(BDFS))[2:])
    found = judge.ras_level(ras.parse(node, "node1", 4), rack(), "node1")
    assert any("gpu0" in f and "umc ue: 2" in f for f in found)
    assert any("gpu1" in f and "could not reserve" in f for f in found)
    over = card(0, BDFS[0], pages=BAD_PAGES) + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:])
    assert judge.ras_level(ras.parse(over, "node1", 4), rack(ras_bad_pages_max=3), "node1") == []
    assert "3 retired VRAM pages, over the limit of 2" in judge.ras_level(
        ras.parse(over, "node1", 4), rack(ras_bad_pages_max=2), "node1")[0]
    # the driver's typical threshold: one page per 100 MiB of 432 GiB
    assert judge.bad_page_limit(rack()) == 4423


def test_plat_ras_without_a_ras_directory_is_could_not_observe_never_pass():
    node = card(0, BDFS[0], ras_dir=False) + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:])
    with pytest.raises(CouldNotObserve, match="gpu0.*no ras/ directory"):
        judge.ras_level(ras.parse(node, "node1", 4), rack(), "node1")
    with pytest.raises(CouldNotObserve, match="3 amdgpu cards, expected 4"):
        judge.ras_level(ras.parse("".join(card(i, b) for i, b in list(enumerate(BDFS))[:3]), "node1", 4),
                        rack(), "node1")


# --- rises and the stage judges ---------------------------------------------------------------
def test_rises_are_per_gpu_and_a_counter_that_went_down_is_not_one():
    before = ras.parse(NODE, "node1", 4)
    after = ras.parse(card(0, BDFS[0], umc="ue: 1\nce: 5\nde: 0\n", replay=40) + card(1, BDFS[1], umc="ue: 0\nce: 0\n")
                      + "".join(card(i, b) for i, b in list(enumerate(BDFS))[2:]), "node1", 4)
    got = {(r.gpu.split(" ")[0], r.counter): r.by for r in ras.rises(before, after)}
    assert got == {("gpu0", "ras.umc.ue"): 1, ("gpu0", "ras.umc.ce"): 2, ("gpu0", "pcie.replay"): 39}
    found = judge.stage_rises({"fabric": ras.rises(before, after)}, rack())
    assert len(found) == 1 and found[0].startswith("gpu0") and "during fabric" in found[0]
    assert "ras.umc.ue 0 -> 1" in found[0] and "pcie.replay 1 -> 40" in found[0] and "ce" not in found[0]


def test_correctable_errors_alone_are_facts_not_findings_unless_a_limit_is_set():
    before = ras.parse(NODE, "node1", 4)
    after = ras.parse(card(0, BDFS[0], umc="ue: 0\nce: 9\nde: 0\n") + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:]),
                      "node1", 4)
    rs = {"fabric": ras.rises(before, after)}
    assert judge.stage_rises(rs, rack()) == []
    assert list(judge.correctable_by_gpu(rs).values()) == [6]
    assert judge.stage_rises(rs, rack(ras_ce_max_rise=5))


def test_link_errors_within_the_allowance_pass():
    before = ras.parse(NODE, "node1", 4)
    after = ras.parse(card(0, BDFS[0], replay=3) + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:]), "node1", 4)
    rs = {"fabric": ras.rises(before, after)}
    assert judge.stage_rises(rs, rack(ras_link_errors_max_rise=2)) == []
    assert judge.stage_rises(rs, rack(ras_link_errors_max_rise=1))


# --- the bracket ------------------------------------------------------------------------------
def _bracket(readings: dict[str, list[str | Exception]], wanted=("fabric", "collective")) -> Bracket:
    def take(node: str, stages: tuple[str, ...]) -> ras.Snapshot:
        got = readings[node].pop(0)
        if isinstance(got, Exception):
            raise got
        return ras.parse(got, node, 4)
    return Bracket(list(readings), take, set(wanted))


UE = card(0, BDFS[0], umc="ue: 1\nce: 3\nde: 0\n") + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:])


def test_the_bracket_charges_a_rise_to_the_stage_it_happened_in():
    b = _bracket({"node1": [NODE, NODE, UE], "node2": [NODE, NODE, NODE]})
    b.enter("fabric")        # snapshot 1: the fabric stage opens
    b.enter("fabric")        # same stage: no snapshot
    b.enter("collective")    # snapshot 2: fabric closes, collective opens
    got = b.charged(("fabric", "collective"), "node1")  # snapshot 3: collective closes
    assert got["fabric"] == [] and [r.counter for r in got["collective"]] == ["ras.umc.ue"]
    assert b.charged(("fabric", "collective"), "node2") == {"fabric": [], "collective": []}
    assert b.snapshots == 6


def test_the_bracket_takes_no_snapshot_for_stages_nobody_judges():
    b = _bracket({"node1": []})
    b.enter("platform")
    b.enter("server boot")
    assert b.snapshots == 0


def test_an_unreadable_snapshot_is_could_not_observe_for_that_node_and_a_stage_that_never_ran_too():
    b = _bracket({"node1": [NODE, CouldNotObserve("node node1: reading the GPUs' error counters failed (rc 3)")],
                  "node2": [NODE, NODE]})
    b.enter("fabric")
    with pytest.raises(CouldNotObserve, match="rc 3"):
        b.charged(("fabric",), "node1")
    assert b.charged(("fabric",), "node2") == {"fabric": []}
    with pytest.raises(CouldNotObserve, match="none of the stages"):
        b.charged(("serving load",), "node2")


def test_a_gpu_without_a_ras_directory_cannot_be_bracketed_never_passes():
    bare = card(0, BDFS[0], ras_dir=False) + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:])
    b = _bracket({"node1": [bare, bare]})
    b.enter("fabric")
    with pytest.raises(CouldNotObserve, match="node1: gpu0 .*no ras/ directory"):
        b.charged(("fabric",), "node1")


def test_our_own_bug_in_a_snapshot_is_an_error_not_a_verdict():
    b = _bracket({"node1": [KeyError("bug")]})
    with pytest.raises(KeyError):
        b.enter("fabric")


def test_fab_errors_is_declared_per_node_and_its_probe_reads_the_bracket_through_the_item():
    """FAB-ERRORS' declaration run on node1 (registry.judge_at, as its item runs it): the probe asks
    the bracket the item carries (On.charged) for the row's stages; a UE rise is the finding, the
    correctable errors are facts named for the stage; node2, where nothing rose, is healthy."""
    c = registry.checks()["FAB-ERRORS"]
    assert c.per == "node" and registry.checks()["SRV-HW-ERRORS"].per == "node"
    ce = card(0, BDFS[0], umc="ue: 0\nce: 5\nde: 0\n") + "".join(card(i, b) for i, b in list(enumerate(BDFS))[1:])
    b = _bracket({"node1": [NODE, NODE, UE], "node2": [NODE, ce, ce]})
    b.enter("fabric")
    b.enter("collective")
    rack = load(shipped_rack())
    one = registry.judge_on(c, On(rack, None, "node1", bracket=lambda: b))
    assert one.findings == ["gpu0 (card0, 0000:05:00.0) during collective: ras.umc.ue 0 -> 1"]
    assert one.shown[0].text == "fabric: nothing rose\ncollective: gpu0 (card0, 0000:05:00.0) ras.umc.ue 0 -> 1 (+1)"
    two = registry.judge_on(c, On(rack, None, "node2", bracket=lambda: b))
    assert two.findings == [] and [(f.name, f.value, f.where) for f in two.facts] == [("hw.ecc_ce.fabric", 2, "node2/gpu0")]
    with pytest.raises(RuntimeError, match="without the session's hardware-error bracket"):
        c.probe(On(rack, None, "node1"))   # an item made without it: our bug, never a verdict


# --- SRV-THROTTLE -----------------------------------------------------------------------------
# amd-smi metric --throttle --json (ROCm/amdsmi: {"gpu_data": [{"gpu": N, "throttle": {...}}]}; keys as
# its CHANGELOG's THROTTLE example, lower-cased as the CLI's JSON writes them; "N/A" where unsupported)
THROTTLE_JSON = """{"gpu_data": [%s]}""" % ", ".join(
    '{"gpu": %d, "throttle": {"accumulation_counter": %d, "prochot_accumulated": 0, "ppt_accumulated": %d, '
    '"socket_thermal_accumulated": 0, "vr_thermal_accumulated": 0, "hbm_thermal_accumulated": 0, '
    '"gfx_clk_below_host_limit_accumulated": "N/A", "ppt_violation_status": "NOT ACTIVE", '
    '"ppt_violation_activity": {"value": 0, "unit": "%%"}}}' % (g, 1226415116, 12) for g in range(4))


def with_throttle(node: str, text: str) -> str:
    return node + f"@@smi\n{text}\n@@smi-rc 0\n"


def test_the_throttle_accumulators_parse_from_amd_smi_json_and_na_is_left_out():
    got = ras.parse_throttle(THROTTLE_JSON)
    assert got[3]["ppt_accumulated"] == 12 and got[0]["accumulation_counter"] == 1226415116
    assert "gfx_clk_below_host_limit_accumulated" not in got[0]
    snap = ras.parse(with_throttle(NODE, THROTTLE_JSON), "node1", 4)
    assert snap.throttle_error == "" and snap.gpus[2].counters()["throttle.ppt_accumulated"] == 12
    assert "not installed" in ras.parse(NODE + "@@nosmi\n", "node1", 4).throttle_error
    assert "exited 2" in ras.parse(NODE + "@@smi\nusage\n@@smi-rc 2\n", "node1", 4).throttle_error
    assert "not JSON" in ras.parse(with_throttle(NODE, "GPU: 0"), "node1", 4).throttle_error


def test_throttling_over_the_share_fails_a_healthy_share_passes_no_reading_is_could_not_observe():
    before = ras.parse(with_throttle(NODE, THROTTLE_JSON), "node1", 4)
    later = THROTTLE_JSON.replace("1226415116", "1226425116")  # 10000 ticks on (gpu 3's ppt below)
    hot = later.replace('"gpu": 3, "throttle": {"accumulation_counter": 1226425116, "prochot_accumulated": 0, '
                        '"ppt_accumulated": 12', '"gpu": 3, "throttle": {"accumulation_counter": 1226425116, '
                        '"prochot_accumulated": 0, "ppt_accumulated": 3312')
    gpus = [g.label for g in before.gpus]
    cool = {"serving load": ras.rises(before, ras.parse(with_throttle(NODE, later), "node1", 4))}
    assert judge.throttling(cool, gpus, rack(), "node1") == []
    assert judge.stage_rises(cool, rack()) == []  # the ticks are no error count
    found = judge.throttling({"serving load": ras.rises(before, ras.parse(with_throttle(NODE, hot), "node1", 4))},
                             gpus, rack(), "node1")
    assert found == [f"{gpus[3]} during serving load: throttled ppt 33% of the time (allowed 5%)"]
    with pytest.raises(CouldNotObserve, match="amd-smi is not installed"):
        judge.throttling({"serving load": []}, gpus, rack(), "node1", "amd-smi is not installed")

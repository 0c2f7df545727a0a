"""Every layout of the amdgpu RAS counters the driver has shipped (rackgate/probes/ras.py,
gates/ras.py), in the driver's own formats: ras/<block>_err_count with two lines or three (UMC's
"de", drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c amdgpu_ras_sysfs_read), the ACA-era ras/aca_<block>
(amdgpu_aca.c add_aca_sysfs, amdgpu_ras_aca_sysfs_read: ue, ce and de for every block), ras/version
("table version: 0x%x"), ras/schema ("schema: 0x%x"), ras/event_state ("current seqno: %llu",
"%s: count:%llu, last_seqno:%llu"; the first posting had "%s : count..."); a layout of none of these
is could-not-observe naming the files found."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.errors import CouldNotObserve, UnrecognisedOutput
from rackgate.gates import ras as judge
from rackgate.probes import ras

from ..properties.mutate import SETTINGS
from .test_ras import AER_COR, AER_FATAL, BDFS, rack

pytestmark = pytest.mark.unit

ACA = "ue: 0\nce: 2\nde: 0\n"
VERSION = "table version: 0x21000\n"
SCHEMA = "schema: 0x5f\n"
EVENTS = ("current seqno: 0\nFatal Error: count:0, last_seqno:0\nPoison Creation: count:0, last_seqno:0\n"
          "Poison Consumption: count:0, last_seqno:0\n")
EVENTS_FIRST = ("current seqno: 3\nFault Error : count:0, last_seqno:0\nPoison Creation : count:0, last_seqno:0\n"
                "Poison Consumption : count:0, last_seqno:0\n")


def gpu(n: int, ras_files: dict[str, str], others: tuple[str, ...] = ()) -> str:
    head = f"@@card card{n}\t../../../{BDFS[n]}\t../../../bus/pci/drivers/amdgpu\tualink\n"
    body = "".join(f"@@file ras/{name}\n{text}" for name, text in ras_files.items())
    body += "".join(f"@@other ras/{o}\n" for o in others)
    body += "".join(f"@@absent ras/{name}\n" for name in ("gpu_vram_bad_pages", "features") if name not in ras_files)
    return head + body + (f"@@file aer_dev_correctable\n{AER_COR}@@file aer_dev_fatal\n{AER_FATAL}"
                          "@@absent aer_dev_nonfatal\n@@file pcie_replay_count\n1\n")


CLASSIC = {"umc_err_count": "ue: 0\nce: 3\nde: 0\n", "gfx_err_count": "ue: 0\nce: 1\n", "gpu_vram_bad_pages": "",
           "features": "feature mask: 0x3fbb\n"}
ACA_ERA = {"aca_umc": ACA, "aca_gfx": ACA, "aca_xgmi_wafl": ACA, "gpu_vram_bad_pages": "",
           "features": "feature mask: 0x3fbb\n", "version": VERSION, "schema": SCHEMA, "event_state": EVENTS}


def node(files: dict[str, str], others: tuple[str, ...] = (), first: dict[str, str] | None = None) -> str:
    return "".join(gpu(i, first if (i == 0 and first is not None) else files, others) for i in range(4))


def test_the_classic_and_the_aca_layout_read_as_the_same_counts():
    classic = ras.parse(node(CLASSIC), "node1", 4).gpus[0]
    aca = ras.parse(node(ACA_ERA), "node1", 4).gpus[0]
    assert classic.layout == "err_count" and aca.layout == "aca"
    assert classic.counters()["ras.umc.ce"] == 3 and aca.counters()["ras.umc.ce"] == 2
    assert aca.counters()["ras.gfx.de"] == 0 and aca.version == 0x21000 and aca.schema == 0x5f
    assert aca.events == {"fatal_error": 0, "poison_creation": 0, "poison_consumption": 0}
    assert judge.ras_level(ras.parse(node(ACA_ERA), "node1", 4), rack(), "node1") == []
    assert judge.ras_level(ras.parse(node(CLASSIC), "node1", 4), rack(), "node1") == []


def test_both_layouts_at_once_read_the_classic_file_first():
    both = {**CLASSIC, "aca_umc": "ue: 0\nce: 9\nde: 0\n"}
    g = ras.parse(node(both), "node1", 4).gpus[0]
    assert g.layout == "aca+err_count" and g.counters()["ras.umc.ce"] == 3


def test_an_uncorrectable_count_fails_in_either_layout():
    bad = {**ACA_ERA, "aca_umc": "ue: 1\nce: 2\nde: 0\n"}
    found = judge.ras_level(ras.parse(node(ACA_ERA, first=bad), "node1", 4), rack(), "node1")
    assert len(found) == 1 and found[0].startswith("gpu0") and "umc ue: 1" in found[0]


def test_deferred_errors_and_ras_events_are_findings():
    deferred = {**CLASSIC, "umc_err_count": "ue: 0\nce: 3\nde: 2\n"}
    found = judge.ras_level(ras.parse(node(CLASSIC, first=deferred), "node1", 4), rack(), "node1")
    assert len(found) == 1 and "deferred (poisoned)" in found[0] and "umc de: 2" in found[0]
    fatal = {**ACA_ERA, "event_state": EVENTS.replace("Fatal Error: count:0", "Fatal Error: count:1")}
    found = judge.ras_level(ras.parse(node(ACA_ERA, first=fatal), "node1", 4), rack(), "node1")
    assert len(found) == 1 and "fatal error count 1" in found[0] and "ras/event_state" in found[0]
    first = {**ACA_ERA, "event_state": EVENTS_FIRST.replace("Poison Consumption : count:0", "Poison Consumption : count:4")}
    found = judge.ras_level(ras.parse(node(ACA_ERA, first=first), "node1", 4), rack(), "node1")
    assert "poison consumption count 4" in found[0]


def test_a_rise_of_a_deferred_count_or_an_event_during_a_stage_is_uncorrectable():
    assert judge.kind("ras.umc.de") == "uncorrectable" and judge.kind("ras_event.poison_creation") == "uncorrectable"
    assert judge.kind("ras.umc.ce") == "correctable"


def test_an_unknown_layout_is_could_not_observe_naming_the_files_found():
    unknown = {"features": "feature mask: 0x3fbb\n", "gpu_vram_bad_pages": ""}
    snap = ras.parse(node(unknown, others=("umc_ecc_stats", "cper_log")), "node1", 4)
    with pytest.raises(CouldNotObserve) as e:
        judge.ras_level(snap, rack(), "node1")
    msg = str(e.value)
    assert "ras/ holds ras/cper_log, ras/features, ras/gpu_vram_bad_pages, ras/umc_ecc_stats" in msg
    assert "no per-block error counter of a layout rackgate knows" in msg and "no counter file" not in msg
    assert judge.unbracketable(snap, 4).startswith("node node1: gpu0")


def test_unknown_files_beside_a_known_layout_are_listed_not_fatal():
    g = ras.parse(node(CLASSIC, others=("umc_ecc_stats",)), "node1", 4).gpus[0]
    assert g.others == ("ras/umc_ecc_stats",) and g.layout == "err_count"


@pytest.mark.parametrize("parse,text", [
    (lambda t: ras.parse_event_state(t, "x"), "Fatal Error: count:0, last_seqno:0\n"),       # no seqno line
    (lambda t: ras.parse_event_state(t, "x"), "current seqno: 1\nFatal Error: 3\n"),
    (lambda t: ras.parse_hex_line(t, "x", ras._VERSION, "table version"), "version: 2\n"),
    (lambda t: ras.parse_hex_line(t, "x", ras._SCHEMA, "schema"), "schema: 95\n"),
])
def test_a_known_file_in_another_shape_is_unrecognised(parse, text):
    with pytest.raises(UnrecognisedOutput):
        parse(text)


# --- real lines, mutated as a read of them can come back --------------------------------------
@given(layout=st.sampled_from(["classic", "aca"]), crlf=st.booleans(), space=st.sampled_from(["", " ", "  "]),
       first_version=st.booleans(), ue=st.integers(0, 3), de=st.integers(0, 3))
@SETTINGS
def test_counts_read_the_same_whatever_the_line_ends_and_padding(layout, crlf, space, first_version, ue, de):
    umc = f"ue:{space} {ue}\nce: 3\nde:{space} {de}\n"
    files = {**(CLASSIC if layout == "classic" else ACA_ERA)}
    files["umc_err_count" if layout == "classic" else "aca_umc"] = umc
    if layout == "aca" and first_version:
        files["event_state"] = EVENTS_FIRST
    text = node(files)
    if crlf:  # a read through a terminal or a Windows-side copy: every line ends in CRLF
        text = text.replace("\n", "\r\n")
    snap = ras.parse(text, "node1", 4)
    g = snap.gpus[0]
    assert (g.counters()["ras.umc.ue"], g.counters()["ras.umc.de"]) == (ue, de)
    assert bool(judge.ras_level(snap, rack(), "node1")) == bool(ue or de)

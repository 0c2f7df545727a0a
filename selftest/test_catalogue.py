"""The catalogue carries its signatures: every [[row.pattern]] regex matches the real lines given
as its examples; rows and matrix cases are typed (pydantic, extra="forbid") and a wrong one is
refused in one line that names the file, the row and the field."""
import pytest

from rackgate import catalogue
from rackgate.catalogue import MatrixCase, Pattern, Row, case_problems, rows

pytestmark = pytest.mark.unit

PATTERNS = [(r.id, p) for r in rows().values() for p in r.patterns]


def test_dmesg_rows_carry_their_signatures():
    for rid in ("PLAT-DMESG", "PLAT-WEDGED", "FAB-DMESG"):
        assert rows()[rid].patterns, f"{rid} has no [[row.pattern]]"


@pytest.mark.parametrize("rid,pattern", PATTERNS, ids=[f"{rid}:{p.name}" for rid, p in PATTERNS])
def test_every_pattern_matches_its_real_lines(rid, pattern):
    for line in pattern.examples:
        assert pattern.search(line), f"{rid} {pattern.name!r}: {pattern.regex!r} does not match {line!r}"


def test_a_healthy_line_matches_no_fault_pattern():
    healthy = "[  812.100007] amdgpu 0001:01:00.0: UALINK: accelerator accel_id=4 is now ACTIVE"
    assert not [p.name for _, p in PATTERNS if p.search(healthy)]


def test_rows_and_cases_refuse_unknown_fields(tmp_path, monkeypatch):
    good = rows()["PLAT-DMESG"].model_dump()
    with pytest.raises(ValueError, match="Extra inputs"):
        Row(**good, colour="red")
    with pytest.raises(ValueError, match="examples"):
        Pattern(name="x", regex="x", examples=[])
    with pytest.raises(ValueError, match="not a regex"):
        Pattern(name="x", regex="(", examples=["("])
    # other helpers' optional fields load
    assert Row(**{**good, "passes_on": "no pattern in dmesg", "needs": ["PLAT-DRIVER"], "order": 3}).order == 3
    assert case_problems({"fault": "f", "row": "R", "fail": "not-a-list", "source": "x.toml"}) == [
        "x.toml: case 'f': fail: Input should be a valid list"]
    assert MatrixCase(fault="f", row="R").fail == []
    # a row file with a typo is one line naming the file, the row and the field
    assert _load_error(tmp_path, monkeypatch, "plat.toml", 'id = "PLAT-X", action_class = "none", severty = "minor"') == (
        "plat.toml: row PLAT-X: severty: Extra inputs are not permitted")


def _load_error(tmp_path, monkeypatch, name: str, fields: str) -> str:
    """The loader's error for a catalogue of one row (the minimal fields plus `fields`) in `name`."""
    for n in catalogue.ROW_FILES:
        (tmp_path / f"{n}.toml").write_text("row = []\n")
    (tmp_path / name).write_text(
        f'row = [{{{fields}, title = "t", markers = [], scope = "node", observe = "o", healthy = "h",'
        ' signatures = [], meaning = "m", action = "a", anchor = "x"}]\n')
    with monkeypatch.context() as m:
        m.setattr(catalogue, "HERE", tmp_path)
        catalogue.rows.cache_clear()
        try:
            with pytest.raises(ValueError) as e:
                catalogue.rows()
        finally:
            catalogue.rows.cache_clear()
    return str(e.value)


def test_every_row_has_an_action_class_and_a_row_without_one_is_refused(tmp_path, monkeypatch):
    assert {r.action_class for r in rows().values()} <= set(catalogue.ACTION_CLASSES)
    assert _load_error(tmp_path, monkeypatch, "fab.toml", 'id = "FAB-X"') == "fab.toml: row FAB-X: action_class: Field required"
    assert _load_error(tmp_path, monkeypatch, "fab.toml", 'id = "FAB-X", action_class = "pray"').startswith(
        "fab.toml: row FAB-X: action_class: Input should be 'none', 're-run'")


def test_a_row_reads_only_rows_that_run_before_it(tmp_path, monkeypatch):
    """`reads` (a result handed on in the session, not a verdict that stops the row) is checked
    like `needs`: known rows, run earlier."""
    assert rows()["ACC-UNDER-LOAD"].reads == ("ACC-QUICK",) and "ACC-QUICK" not in rows()["ACC-UNDER-LOAD"].needs
    assert _load_error(tmp_path, monkeypatch, "acc.toml", 'id = "ACC-X", action_class = "none", reads = ["ACC-Y"]') == (
        "row ACC-X: reads unknown row(s) ['ACC-Y']")
    assert _load_error(tmp_path, monkeypatch, "acc.toml", 'id = "ACC-X", action_class = "none", reads = ["ACC-X"]'
                       ).endswith("reads ['ACC-X'], which do not run before it")

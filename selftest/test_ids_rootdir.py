"""The ids of rackgate's checks do not depend on pytest's rootdir (rackgate/ids.py): a baseline
recorded with `--baseline FILE` (space form: once FILE exists, pytest's first parse takes it for a
test path and settles its rootdir in FILE's folder) is compared clean typed that way or the other,
and `-m regression` selects the checks that recorded it."""
from __future__ import annotations

import pytest

from rackgate.ids import is_row_id

from . import typed
from .harness import REPO

pytestmark = pytest.mark.suite

# The checks that record the baseline: two of the platform's five fact producers (GPU inventory,
# container image). A check's id is made alike for every check (rackgate/ids.py), and the comparisons
# re-run only the producers of what was recorded: the other three proved nothing more (wave 12).
RECORDERS = "PLAT-GPUS or PLAT-CONTAINER"
# No Allure results (an empty --alluredir, over the ini's): nothing here reads them, and the recorded and
# compared facts' plots were ~0.75 CPU s a run (selftest/harness.py suite_command)
NO_ALLURE = "--alluredir="


def test_a_baseline_recorded_and_compared_in_the_space_form_is_clean(tmp_path):
    away = tmp_path / "x"
    away.mkdir()
    base = away / "base.json"
    # -k, not paths: a path argument would take part in where pytest settles its rootdir
    common = ["-m", "platform or regression", "-k", RECORDERS, "--junitxml=" + str(tmp_path / "j.xml"), NO_ALLURE]
    rec = typed.run([*typed.PYTEST, "-q", *common, "--record-baseline", "--baseline", str(base),
                     f"--verdict-file={tmp_path / 'rec.json'}"], REPO)
    assert rec.returncode == 0 and base.exists(), rec.stdout[-3000:]
    sources = {f["source"] for f in __import__("json").loads(base.read_text())["facts"]}
    assert sources and all(is_row_id(s) and "::" in s for s in sources), sources   # ROW::place, whatever the rootdir
    assert {s.partition("::")[0] for s in sources} == set(RECORDERS.split(" or ")), sources
    verdicts = {}
    for form in (["--baseline", str(base)], [f"--baseline={base}"]):
        out = tmp_path / f"cmp{len(verdicts)}.json"
        cmp = typed.run([*typed.PYTEST, "-q", "-m", "regression", *form, f"--verdict-file={out}",
                         "--junitxml=" + str(tmp_path / "j2.xml"), NO_ALLURE], REPO)
        assert cmp.returncode == 0, cmp.stdout[-3000:]
        assert "facts within tolerance" in cmp.stdout and "REGRESSED" not in cmp.stdout, cmp.stdout[-3000:]
        v = typed.verdict(out)
        ran = {t.split("::")[0] for t in v["items"]}
        # the checks that recorded the facts ran again, under the same ids as when recorded
        assert {s.split("::")[0] for s in sources} < ran, (sources, ran)
        verdicts[form[0]] = v
    assert verdicts["--baseline"] == verdicts[f"--baseline={base}"]

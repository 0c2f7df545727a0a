"""Bad input is one clear line and nothing judged (issue 39): a rack file that does not exist, is
not TOML or names an unknown key (with did-you-mean), a --baseline that is not a baseline, an
unknown --sim-fault, an --atom-url that is not a URL, a marker expression that selects none of
rackgate's checks. The `rackgate` command exits 2; plain pytest exits 4, its usage error; neither
prints a traceback. Under xdist (`-n 2`) the selection's line is the same: the controller collects
nothing itself and the workers each alone, so it is said at the session's end."""
from __future__ import annotations

import shutil
import sys

import pytest

from . import typed
from .harness import REPO

pytestmark = pytest.mark.suite


def _cases(d):
    (d / "not-toml.toml").write_text("name = [unclosed\n")
    text = (REPO / "rackgate/sim/racks/sim.toml").read_text()
    assert "\nsilicon = " in text
    (d / "typo.toml").write_text(text.replace("\nsilicon = ", "\nsilicn = ", 1))
    (d / "not-a-baseline.json").write_text('{"results": []}\n')
    shutil.copy(REPO / "rackgate/sim/racks/sim.toml", d / "sim.toml")
    return {
        "no rack file": (["--rack", str(d / "nope.toml"), "-m", "platform"], f"rack file {d / 'nope.toml'}: cannot read it"),
        "not TOML": (["--rack", str(d / "not-toml.toml"), "-m", "platform"], "not valid TOML"),
        "unknown key": (["--rack", str(d / "typo.toml"), "-m", "platform"], "unknown key 'silicn' (did you mean 'silicon'?)"),
        "not a baseline": (["-m", "regression", "--baseline", str(d / "not-a-baseline.json")],
                           f"baseline {d / 'not-a-baseline.json'}: not a rackgate baseline (no 'facts' entry)"),
        "unknown fault": (["-m", "platform", "--sim-fault", "driver-not-loded"], "unknown sim fault 'driver-not-loded'"),
        "not a URL": (["-m", "gate", "--atom-url", "10.0.0.1:8000"], "--atom-url '10.0.0.1:8000' is not a URL"),
        "selects nothing": (["-m", "gaet"], "no rackgate check matches -m 'gaet'; markers: platform, fabric, serving, accuracy, gate, regression"),
    }


CASES = ["no rack file", "not TOML", "unknown key", "not a baseline", "unknown fault", "not a URL", "selects nothing"]
LAUNCHERS = {"rackgate": ([sys.executable, "-m", "rackgate.cli"], 2), "pytest": ([sys.executable, "-m", "pytest"], 4)}


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line(case, launcher, tmp_path):
    args, said = _cases(tmp_path)[case]
    argv, code = LAUNCHERS[launcher]
    p = typed.run([*argv, "-p", "no:cacheprovider", "-q", f"--verdict-file={tmp_path / 'v.json'}",
                   f"--junitxml={tmp_path / 'j.xml'}", f"--alluredir={tmp_path / 'allure'}", *args], tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == code, out[-3000:]
    lines = [ln for ln in out.splitlines() if said in ln]
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), out[-3000:]
    assert "Traceback" not in out and " passed" not in out and " failed" not in out, out[-3000:]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_selection_of_nothing_under_xdist_is_the_same_one_line(launcher, tmp_path):
    args, said = _cases(tmp_path)["selects nothing"]
    argv, code = LAUNCHERS[launcher]
    p = typed.run([*argv, "-p", "no:cacheprovider", "-q", "-n", "2", f"--verdict-file={tmp_path / 'v.json'}",
                   f"--junitxml={tmp_path / 'j.xml'}", f"--alluredir={tmp_path / 'allure'}", *args], tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == code, out[-3000:]
    lines = [ln for ln in out.splitlines() if said in ln]
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), out[-3000:]
    assert "Traceback" not in out, out[-3000:]

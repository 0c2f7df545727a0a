"""rackgate fleet on the local scheduler: three sim racks (one healthy, two faults) as parallel
runs, gathered into fleet.json and one merged Allure result set that name each rack's findings and
nothing else; --failed-only re-runs only the failing items; a rack file error is exit 2."""
import json
import subprocess
import sys

import jsonschema
import pytest

from rackgate.report import verdict_file

from ..harness import REPO, user_env
from . import racks

pytestmark = pytest.mark.suite


def _fleet(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "rackgate.cli", "fleet", *args], cwd=REPO, env=user_env(),
                          capture_output=True, text=True, timeout=timeout)


def _failed_results(allure_dir):
    out = set()
    for f in allure_dir.glob("*-result.json"):
        r = json.loads(f.read_text())
        if r["status"] not in ("passed", "skipped"):
            out.add(({l["name"]: l["value"] for l in r["labels"]}["rack"], r["name"]))
    return out


def test_three_racks_one_fleet_json_and_one_report(tmp_path):
    files = racks.write(tmp_path)
    p = _fleet(*files, "--results", str(tmp_path / "res"), "--no-render", "--", *racks.SELECT)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    fleet = json.loads((tmp_path / "res" / "fleet.json").read_text())
    assert racks.findings(fleet) == racks.FINDINGS
    assert {r["rack"]: r["verdict"] for r in fleet["racks"]} == {"sim-a": "PASS", "sim-b": "FAIL", "sim-c": "FAIL"}
    schema = json.loads(verdict_file.SCHEMA.read_text())
    for r in fleet["racks"]:
        jsonschema.validate(json.loads((tmp_path / "res" / r["rack"] / "verdict.json").read_text()), schema)
    assert _failed_results(tmp_path / "res" / "allure-merged") == {
        ("sim-b", "sim-b: PLAT-PARAMS [node2] amdgpu bring-up module parameters"), ("sim-c", "sim-c: PLAT-WEDGED [node3] GPU not wedged")}
    drain = _fleet("--drain-failed", "--results", str(tmp_path / "res"))
    assert drain.returncode == 1 and drain.stdout.count("state=drain") == 1, drain.stdout  # the sim's trays share one host

    again = _fleet("--failed-only", str(tmp_path / "res"), "--no-render")
    assert again.returncode == 1, again.stdout[-3000:] + again.stderr[-3000:]
    b = json.loads((tmp_path / "res" / "sim-b" / "verdict.json").read_text())
    assert b["counts"] == {"pass": 19, "fail": 1, "unknown": 0}, "the re-run's one item merged over the old 20"
    assert "sim-b finished" in again.stdout and "sim-a finished" not in again.stdout, "a healthy rack is not re-run"
    assert {r["rack"] for r in json.loads((tmp_path / "res" / "fleet.json").read_text())["racks"]} == set(racks.FAULTS)


def test_a_bad_rack_file_is_exit_2_in_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nsilicn = "B0"\n')
    p = _fleet(str(bad), "--results", str(tmp_path / "res"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr

"""The sim's imitation of docker against real docker (issue 24 item 3): the same commands, on
containers of the same names and states, give the same exit codes, the same streams and the same
JSON fields. Where they differ, the sim is what gets corrected."""
from __future__ import annotations

import json
import os
import re
import sys
import time

import pytest

from rackgate.transport import Host
from rackgate.transport.runners import LocalRunner

from .dockerd import Dockerd, usable

WHY = usable()
pytestmark = [pytest.mark.system, pytest.mark.docker, pytest.mark.skipif(bool(WHY), reason=f"real dockerd: {WHY}")]
IMAGE = "rg/atom:selftest"
PS = ["docker", "ps", "-a", "--no-trunc", "--size=false", "--format", "{{json .}}"]
EVENTS = ["docker", "events", "--since", "30m", "--until", "0s", "--filter", "event=create", "--format", "{{json .}}"]


@pytest.fixture(scope="module")
def real():
    d = Dockerd().start()
    try:
        d.import_image(IMAGE)
        d.run("atom", IMAGE)
        d.run("old", IMAGE, "false")
        d.docker("wait", "old")
        d.next_second()  # the creates are listed by `docker events --until 0s`
        yield Host("real", LocalRunner("real", env=d.env()))
    finally:
        d.stop()


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    rack = tmp_path_factory.mktemp("rack")
    node = rack / "n1"
    (node / "bin").mkdir(parents=True)
    now = time.time()  # created now, as the real ones were
    own = {"id": "a" * 64, "image": IMAGE, "created": now, "status": "running", "network_mode": "none"}
    old = {"id": "b" * 64, "name": "old", "image": IMAGE, "created": now, "status": "exited", "exit_code": 1,
           "network_mode": "none"}
    (rack / "state.json").write_text(json.dumps({"container": "atom", "nodes": {"n1": {"plat": {
        "own": own, "foreign": [old]}}}}))
    exe = node / "bin" / "docker"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -S -m rackgate.sim.tools.docker "$@"\n')
    exe.chmod(0o755)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return Host("sim", LocalRunner("sim", env={"PATH": f"{node / 'bin'}:$PATH", "RACKGATE_SIM_NODE": str(node),
                                                "PYTHONPATH": root}))


def _both(real, sim, argv):
    return real.run(argv, timeout=60), sim.run(argv, timeout=60)


def test_exec_of_a_missing_program(real, sim):
    for r in _both(real, sim, ["docker", "exec", "atom", "no-such-program"]):
        assert (r.rc, r.stderr) == (126, ""), (r.node, r.rc, r.stderr)
        assert 'exec: "no-such-program": executable file not found in $PATH' in r.stdout, (r.node, r.stdout)


def test_exec_in_an_exited_container(real, sim):
    for r in _both(real, sim, ["docker", "exec", "old", "true"]):
        assert r.rc == 1 and r.stdout == "", (r.node, r.rc, r.stdout)
        assert r.stderr.lower().startswith("error response from daemon: container ") and \
            r.stderr.rstrip().endswith(" is not running"), (r.node, r.stderr)


def test_exec_exit_status_passes_through(real, sim):
    for r in _both(real, sim, ["docker", "exec", "atom", "sh", "-c", "exit 7"]):
        assert r.rc == 7, (r.node, r.rc, r.stderr)


def test_ps_fields_and_states(real, sim):
    rows = {}
    for r in _both(real, sim, PS):
        assert r.rc == 0, (r.node, r.stderr)
        rows[r.node] = {o["Names"]: o for o in map(json.loads, r.stdout.splitlines())}
    # the field set of real docker's `{{json .}}` (a newer client adds "Platform")
    assert set(rows["sim"]["atom"]) == set(rows["real"]["atom"]) - {"Platform"}
    for name, state in (("atom", "running"), ("old", "exited")):
        assert rows["sim"][name]["State"] == rows["real"][name]["State"] == state
        assert rows["sim"][name]["Networks"] == rows["real"][name]["Networks"] == "none"
    assert rows["sim"]["old"]["Status"].startswith("Exited (1) ") and rows["real"]["old"]["Status"].startswith("Exited (1) ")
    for o in (rows["sim"]["atom"], rows["real"]["atom"]):
        # Go's time.Time String(): "2006-01-02 15:04:05 -0700 MST"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} \w+", o["CreatedAt"]), o


def test_events_fields(real, sim):
    evs = {}
    for r in _both(real, sim, EVENTS):
        assert r.rc == 0, (r.node, r.stderr)
        evs[r.node] = {e["Actor"]["Attributes"]["name"]: e for e in map(json.loads, r.stdout.splitlines())}
    assert set(evs["sim"]) == set(evs["real"]) == {"atom", "old"}
    assert set(evs["sim"]["atom"]) == set(evs["real"]["atom"])
    for e in (evs["sim"]["atom"], evs["real"]["atom"]):
        assert isinstance(e["time"], int) and isinstance(e["timeNano"], int) and e["timeNano"] // 10**9 == e["time"]


def test_version_names_the_server(real, sim):
    for r in _both(real, sim, ["docker", "version", "--format", "{{.Server.Version}}"]):
        assert r.rc == 0 and r.stdout.strip() and not r.stderr, (r.node, r.rc, r.stdout, r.stderr)

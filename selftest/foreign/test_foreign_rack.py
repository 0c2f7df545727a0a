"""The suite against a rack it was not built with (issue 10, item 8): three real sshd hosts in
network namespaces, reached with the system OpenSSH client through `[ssh] config` with pinned host
keys, showing a gfx1250 node at the real paths (selftest/foreign/hosts.py; nothing from
rackgate/sim). No docker, no ubench07 build, no perf_setup report, another amd-smi layout; fn3's
card0 is a BMC video card (its GPUs are card1..4).

Three suite runs (-m "platform or fabric"): healthy, four faults at once on different nodes/cards,
one host's link down. Each prints its verdict counts and wall time.
"""
from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from rackgate.ids import place_of

from ..harness import run_suite
from .hosts import OPERATOR, UNSET, ForeignRack, Node, usable

SEL = ("-m", "platform or fabric", "-p", "no:randomly")
WHY = usable()
pytestmark = [pytest.mark.system, pytest.mark.skipif(bool(WHY), reason=f"foreign rack: {WHY}")]


@pytest.fixture
def foreign(tmp_path):
    rack = ForeignRack(tmp_path / "rack", prefix=f"rgf{os.getpid() % 10000}")
    try:
        yield rack
    finally:
        rack.stop()


def _run(tmp_path, rack: ForeignRack, label: str):
    t0 = time.monotonic()
    run = run_suite(tmp_path, "--rack", str(rack.rack_file(tmp_path / "foreign.toml")), *SEL, timeout=900)
    counts = Counter(o.status for o in run.outcomes.values())
    print(f"\nforeign rack, {label}: {dict(counts)} in {time.monotonic() - t0:.0f}s")
    assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    return run


def _failed(run) -> dict[str, str]:
    return {k: o.message for k, o in run.outcomes.items() if o.status == "failed"}


def test_healthy_foreign_rack_fails_nothing(tmp_path, foreign):
    # besides fn1-fn3 (no docker): a node with the docker client and no daemon, one whose login is not root
    foreign.add(Node("fn4", tray=4, docker="down"))
    foreign.add(Node("fn5", tray=5, user=OPERATOR))
    run = _run(tmp_path, foreign.start(), "healthy")
    assert _failed(run) == {}
    errors = {k: o.message for k, o in run.outcomes.items() if o.status == "error"}
    for item, msg in errors.items():
        assert "could not observe" in msg, f"{item}: {msg}"
        assert "internal error" not in msg and "Traceback" not in msg, f"{item}: {msg}"
    _docker_down_in_dockers_words(run)
    _root_reads_quote_sudo_others_judged(run)
    # what is missing on purpose is named: ubench07 (with its rack-file key), docker, perf_setup
    assert any("ualoe_p2p.exe (rack-file key fabric.ubench_dir)" in m for m in errors.values())
    assert any("node fn1: docker is not installed" in m for m in errors.values())
    assert any("fn2: no perf_setup report matches platform.perf_report_glob" in m for m in errors.values())
    # its GPUs show no ras/ directory: the hardware error rows could not observe, naming the GPU
    for item in ("PLAT-RAS::fn1",
                 "FAB-ERRORS::fn1"):
        assert "no ras/ directory" in errors.get(item, ""), (item, run.outcomes.get(item))
    assert run.ids("passed"), "nothing passed on a healthy rack"


def test_each_fault_fails_exactly_its_row_on_its_node(tmp_path, foreign):
    fn1, fn2, fn3 = foreign.nodes
    fn2.cards[1]["accel_state"] = "unconfigured"           # a stuck link
    fn1.cards[2]["accel_id"] = UNSET                       # an unset accel_id
    fn3.cards[3]["ppod_id"] = "0x5a1c0de000000002"         # a PPOD mismatch
    fn2.params["noretry"] = "0"                            # a wrong amdgpu parameter
    run = _run(tmp_path, foreign.start(), "four faults")
    failed = _failed(run)
    assert set(failed) == {
        "FAB-STATE::fn2-card1",
        "FAB-ACCEL-ID::fn1-card2",
        "FAB-POD::fn3",
        "PLAT-PARAMS::fn2",
    }, failed
    assert "fn3/gpu3 (card4, 0000:14:00.0)" in failed["FAB-POD::fn3"]  # BMC card0
    assert "noretry" in failed["PLAT-PARAMS::fn2"]
    assert UNSET in failed["FAB-ACCEL-ID::fn1-card2"]


def test_one_host_down_errors_only_its_items(tmp_path, foreign):
    foreign.start()
    foreign.link_down("fn3")
    run = _run(tmp_path, foreign, "fn3 link down")
    assert _failed(run) == {}
    down = {k: o.message for k, o in run.outcomes.items() if "fn3" in place_of(k)}
    assert down and all(run.outcomes[k].status == "error" and "node fn3: unreachable over ssh" in m
                        for k, m in down.items()), down
    # the reachable nodes were judged: their own items are not ERRORs about fn3
    for k, o in run.outcomes.items():
        if k not in down:
            assert "fn3" not in o.message, (k, o.message)
    # FAB-POD judges each reachable node across the nodes that answered
    assert {run.outcomes[f"FAB-POD::{n}"].status for n in ("fn1", "fn2")} == {"passed"}


def _on(run, node: str) -> dict:
    return {k: o for k, o in run.outcomes.items() if node in place_of(k).split("-")}


def _docker_down_in_dockers_words(run) -> None:
    """fn4: every docker-reading item is could-not-observe quoting the client's own words."""
    docker_items = {k: o for k, o in _on(run, "fn4").items() if "docker" in o.message.lower()}
    assert docker_items, {k: o.message for k, o in _on(run, "fn4").items()}
    for k, o in docker_items.items():
        assert o.status == "error", (k, o.status, o.message)
        assert "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" in o.message, (k, o.message)
    assert any(k.startswith("PLAT-") for k in docker_items), docker_items


def _root_reads_quote_sudo_others_judged(run) -> None:
    """fn5 (login rgop, `sudo -n` refused): reads needing root quote sudo; the others are judged."""
    fn5 = _on(run, "fn5")
    sudo = {k: o for k, o in fn5.items() if "sudo" in o.message}
    assert sudo, {k: (o.status, o.message) for k, o in fn5.items()}
    for k, o in sudo.items():
        assert o.status == "error" and "sudo: a password is required" in o.message, (k, o.status, o.message)
    judged = {k for k, o in fn5.items() if o.status == "passed"}
    assert judged, {k: (o.status, o.message) for k, o in fn5.items()}

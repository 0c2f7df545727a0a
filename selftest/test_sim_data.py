"""The sim as typed data: launch edits are structured (not text replacement), the server's
state and fault behaviours are typed and refuse what they do not know."""
import json
import os
import re
import tempfile

import pytest

from rackgate.probes import argv
from rackgate.sim import faults, state
from rackgate.sim.engine.behaviour import ServerFaults, UnknownBehaviour
from rackgate.sim.launch import SIM_BENCH, SIM_LAUNCH, Command, Drop, EditError, Env, Set

pytestmark = pytest.mark.suite


def _flags(cmd: str) -> dict:
    return argv.flags(argv.split(cmd))


def test_commands_join_back_to_their_text():
    for text in (SIM_LAUNCH, SIM_BENCH, "A=1 B=x " + SIM_BENCH):
        assert str(Command.parse(text)) == text


def test_edits_change_flags_not_text():
    c = Command.parse(SIM_LAUNCH)
    assert "served-model-name" not in _flags(str(Drop("--served-model-name").on(c)))
    moved = str(Set("--max-model-len", "4096", before="--max-num-seqs").on(c))
    assert " --max-model-len 4096 --max-num-seqs 8" in moved
    assert _flags(str(Set("--max-num-batched-tokens", "16384").on(c)))["max-num-batched-tokens"] == "16384"
    assert _flags(str(Set("--fake-eplb").on(c)))["fake-eplb"] is None
    bench = Command.parse(SIM_BENCH).apply([Env(SIM_PER_GPU="1")])
    assert str(bench).startswith("SIM_PER_GPU=1 ") and bench.words == Command.parse(SIM_BENCH).words


def test_an_edit_of_a_missing_flag_is_an_error():
    with pytest.raises(EditError, match="no --no-such-flag"):
        Drop("--no-such-flag").on(Command.parse(SIM_LAUNCH))


def _healthy() -> state.Rack:
    return state.healthy(2, 4, 0.96)


def test_launch_faults_edit_the_parsed_launch():
    s = _healthy()
    faults.apply(s, "served-path")
    faults.apply(s, "max-model-len")  # two edits of one launch compose
    f = _flags(s.rack_overrides["launch.command"])
    assert "served-model-name" not in f and f["max-model-len"] == "4096"
    s = _healthy()
    faults.apply(s, "bench-over-context")
    assert _flags(s.rack_overrides["bench.command"])["random-input-len"] == "2048"
    assert _flags(s.rack_overrides["launch.command"])["max-model-len"] == "1024"


def test_server_state_is_typed_and_refuses_unknown_keys():
    s = _healthy()
    faults.apply(s, "dp-deadlock@node2")
    back = state.Rack.from_json(json.loads(json.dumps(s.to_json())))  # through state.json
    assert back == s
    b = back.server.behaviours()
    assert b.dp_deadlock.ranks == (7,) and b.dp_deadlock.kv_tokens == 512
    assert b.on("dp_deadlock", 7) and not b.on("dp_deadlock", 6)


@pytest.mark.parametrize("where", ["server", "nodes.node1", "nodes.node1.gpus[2]", "nodes.node2.fabric", ""])
def test_state_json_refuses_unknown_keys(where):
    data = _healthy().to_json()
    obj = data
    for part in filter(None, where.replace("[", ".").replace("]", "").split(".")):
        obj = obj[int(part)] if part.isdigit() else obj[part]
    obj["bogus"] = 1
    with pytest.raises(state.StateError, match=f"state.json state{'.' if where else ''}{re.escape(where)}: unknown key"):
        state.Rack.from_json(data)


def test_unknown_server_behaviours_are_refused():
    with pytest.raises(UnknownBehaviour, match="'no-such'"):
        ServerFaults.from_server({"faults": [], "rank_faults": {"no-such": {}}})
    with pytest.raises(UnknownBehaviour, match="no-such"):
        ServerFaults.from_server({"faults": ["no-such"]})


def test_node_executables_import_no_typed_state():
    """Every probe of the sim starts one of these executables (thousands per self-test run): they
    read state.json through rackgate.sim.nodeview, never the typed build side (dataclasses)."""
    import subprocess
    import sys

    from rackgate.sim.render import PKG_ROOT, tools

    mods = [f"rackgate.sim.tools.{m}" for m in tools().values()]
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m in ('dataclasses', 'rackgate.sim.state', 'pydantic')))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": PKG_ROOT, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"the node executables import {out.stdout.strip()}"


def test_a_failed_build_leaves_no_directory(monkeypatch):
    """An unknown fault (or no free ports) stops a build after its directory was made: the
    directory goes too (self-test runs left hundreds of empty rackgate-sim-* in /tmp). Only the
    directory this build made is watched: what else the system temp dir holds (the sim's GSM8K
    set, made on first use; other runs' directories) is not this build's, whether there or not."""
    import threading

    from rackgate.config import load
    from rackgate.sim import rack as sim_rack
    made, me, real = [], threading.get_ident(), tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        d = real(*args, **kwargs)
        if threading.get_ident() == me:
            made.append(d)
        return d

    monkeypatch.setattr(sim_rack.tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(Exception, match="no-such-fault"):
        sim_rack.build(load(sim_rack.SHIPPED_RACK), ["no-such-fault"])
    assert made and all("rackgate-sim-" in d for d in made), made
    assert [d for d in made if os.path.exists(d)] == []

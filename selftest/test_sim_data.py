"""The sim as typed data: launch edits are structured (not text replacement), the server's
state and fault behaviours are typed and refuse what they do not know."""
import json
import re

import pytest

from rackgate.probes import argv
from rackgate.sim import faults, state
from rackgate.sim.engine.behaviour import ServerFaults, UnknownBehaviour
from rackgate.sim.launch import SIM_BENCH, SIM_LAUNCH, Command, Drop, EditError, Env, Set

pytestmark = pytest.mark.unit


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



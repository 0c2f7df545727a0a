"""The sim as typed data: launch edits are structured (not text replacement), the server's
state and fault behaviours are typed and refuse what they do not know."""
import pytest

from rackgate.probes import argv
from rackgate.sim import faults, state
from rackgate.sim.engine.behaviour import ServerFaults, UnknownBehaviour
from rackgate.sim.launch import SIM_BENCH, SIM_LAUNCH, Command, Drop, EditError, Env, Set


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


def _healthy() -> dict:
    return state.healthy(2, 4, 0.96)


def test_launch_faults_edit_the_parsed_launch():
    s = _healthy()
    faults.apply(s, "served-path")
    faults.apply(s, "max-model-len")  # two edits of one launch compose
    f = _flags(s["rack_overrides"]["launch.command"])
    assert "served-model-name" not in f and f["max-model-len"] == "4096"
    s = _healthy()
    faults.apply(s, "bench-over-context")
    assert _flags(s["rack_overrides"]["bench.command"])["random-input-len"] == "2048"
    assert _flags(s["rack_overrides"]["launch.command"])["max-model-len"] == "1024"


def test_server_state_is_typed_and_refuses_unknown_keys():
    s = _healthy()
    faults.apply(s, "dp-deadlock@node2")
    srv = state.ServerState.from_json(s["server"])
    assert srv.faults.dp_deadlock.ranks == (7,) and srv.faults.dp_deadlock.kv_tokens == 512
    assert srv.faults.on("dp_deadlock", 7) and not srv.faults.on("dp_deadlock", 6)
    with pytest.raises(state.StateError, match="unknown key.*bogus"):
        state.ServerState.from_json({**s["server"], "bogus": 1})


def test_unknown_server_behaviours_are_refused():
    with pytest.raises(UnknownBehaviour, match="'no-such'"):
        ServerFaults.from_server({"faults": [], "rank_faults": {"no-such": {}}})
    with pytest.raises(UnknownBehaviour, match="no-such"):
        ServerFaults.from_server({"faults": ["no-such"]})

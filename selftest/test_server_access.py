"""The typed serving-access layer (rackgate/server_access.py): the interface a "server" or "rank"
probe is handed names no `Any`, the fan-out's values are one set of classes wherever they are
imported from, and the session's runs reach a probe as their own input (rackgate/probes/runs.py),
not through the server by name."""
import inspect
import typing

import pytest

from rackgate import server_access
from rackgate.atom import fanout, perrank, served
from rackgate.probes import runs
from rackgate.server_access import ServerAccess

pytestmark = pytest.mark.unit


def _members(proto: type) -> dict[str, object]:
    """Each member of a Protocol -> its annotations (a property's getter, a method's signature)."""
    out: dict[str, object] = {}
    for name, member in vars(proto).items():
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else member
        if callable(fn):
            out[name] = typing.get_type_hints(fn, vars(server_access) | vars(typing))
    return out


@pytest.mark.parametrize("proto", [ServerAccess, server_access.ModelsClient, server_access.Tokens,
                                   server_access.ServerLog, server_access.LogLine])
def test_the_server_interface_names_no_any(proto):
    members = _members(proto)
    assert members
    loose = {name: hints for name, hints in members.items() if typing.Any in hints.values()}
    assert not loose, f"{proto.__name__} members typed Any: {loose}"


def test_the_server_interface_has_what_the_probes_read():
    assert {"url", "client", "per_rank", "table", "health", "tokens", "post", "logs", "stacks", "dead_ranks",
            "head", "log_note", "grep", "log_tail", "batched_tokens", "host"} <= set(_members(ServerAccess))


def test_the_fan_outs_values_are_one_set_of_classes():
    for name in ("Ask", "Got", "HangRule", "Fanned"):
        assert getattr(fanout, name) is getattr(server_access, name), name
    for name in ("Routing", "Share", "Spread"):
        assert getattr(perrank, name) is getattr(server_access, name), name
    assert served.Posted is server_access.Posted


def test_the_session_runs_are_the_probes_own_input_never_a_lookup_by_name():
    assert not hasattr(served.Served, "session") and not hasattr(served.Served, "shared")
    view = served.Served(server=None, rack=None, name_source="", _make_per_rank=lambda: None)
    with pytest.raises(RuntimeError, match="without the session's runs"):
        _ = view.runs
    made = runs.Runs(recorded=lambda: "rec", golden_prompts=lambda: "ps", quick_gate=lambda: "q",
                     under_load=lambda: "u", lm_eval=lambda: "l")
    given = served.Served(server=None, rack=None, name_source="", _make_per_rank=lambda: None,
                          given_runs=made)
    assert given.runs is made and given.runs.quick_gate() == "q"
    assert [p.name for p in inspect.signature(runs.Runs).parameters.values()] == [
        "recorded", "golden_prompts", "quick_gate", "under_load", "lm_eval"]

"""What SRV-ENGINE-ARGS reads: the engine kwargs a node's ATOM process logged at start (ATOM's
model_engine/arg_utils.py `_get_engine_kwargs()`: "Engine kwargs: {...}"; every node's process
logs its own), from the node's server log (`on.server_log()`, a "node" check with sees="log")."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CouldNotObserve
from .atom_log_facts import ENGINE_KWARGS, KwargsError, engine_kwargs
from .target import On


@dataclass(frozen=True)
class EngineArgs:
    node: str
    kwargs: dict[object, object]  # the dict of the node's last `Engine kwargs:` line
    line: str                     # that line, as written
    head: bool                    # the node serves the API (its kwargs are the run's facts)


def logged(on: On) -> EngineArgs:
    """The node's last `Engine kwargs:` line, parsed; could not observe when there is none (an engine
    that logs otherwise: the absence of a line is not evidence of a fault) or it does not parse."""
    log = on.server_log()
    recs = log.grep(ENGINE_KWARGS)
    if not recs:
        raise CouldNotObserve(f"{on.node}: no `Engine kwargs:` line in {log.path}: nothing to judge")
    last = recs[-1]
    try:
        kwargs = engine_kwargs(last.text)
    except KwargsError as e:
        raise CouldNotObserve(f"{on.node}: line {last.lineno}: {e}") from None
    return EngineArgs(on.node, kwargs, last.raw, on.node == on.rack.head.name)

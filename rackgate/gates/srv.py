"""SRV judgments over what the server answered (rackgate/probes/served.py), and their declarations
(rackgate/gates/declare.py: "server" and "rank" scopes)."""
from __future__ import annotations

from ..config.model import Rack
from ..errors import CouldNotObserve
from ..probes import served
from .declare import Check, Ranked, Shown, declare, ranked


# --- SRV-MODELS ---------------------------------------------------------------------------------
def model_served(m: served.Models, rack: Rack, where: str) -> list[str]:
    """The served name the suite asks for is one /v1/models lists."""
    if m.want in m.ids:
        return []
    path = " (a filesystem path)" if any(i.startswith("/") for i in m.ids) else ""
    return [f"/v1/models lists {list(m.ids)}, not the configured served name {m.want!r} (given by {m.source}){path}"]


def models_shown(m: served.Models, rack: Rack) -> list[Shown]:
    return [Shown("GET /v1/models", m.reply, "json")]


declare(Check("SRV-MODELS", "server", probe=served.models, judge=model_served, shows=models_shown))


# --- SRV-ALIVE ----------------------------------------------------------------------------------
DEADLOCK_SIGNATURE = " (SRV-DEADLOCK's signature: a rank that accepts requests and never answers)"


def rank_answers(r: Ranked[served.Alive], rack: Rack, where: str) -> list[str]:
    """This rank answered its request: a request that stayed in flight past the hang bound while
    others answered, or one the server could not answer at all, is the rank's FAILED; a refusal
    (an HTTP error status) says nothing of its liveness (could not observe)."""
    a = r.mine
    if a.hung or not a.answered:
        seen = (a.hung + (f"; evidence: {a.stacks_said}" if a.stacks_said else "")) if a.hung else a.error
        last = next((x for x in reversed(a.log_tail.splitlines()) if x.strip()), "")
        return [f"{seen}; /health answers {a.health}; last line of {a.node}'s log: {last[:200]!r}"
                + (DEADLOCK_SIGNATURE if a.hung else "")]
    if a.status != 200:
        raise CouldNotObserve(f"the request routed to dp{a.rank} was refused: {a.error}")
    return []


def alive_shown(r: Ranked[served.Alive], rack: Rack) -> list[Shown]:
    a = r.ranks.get(r.rank)
    if a is None:
        return []
    out = [Shown("one request to every rank", a.asked)]
    if a.hung or not a.answered:
        out.append(Shown(f"last lines of {a.node}'s log", a.log_tail))
        out += [Shown(title, text) for title, text in a.stacks]
    else:
        out.append(Shown(f"completion routed to dp{a.rank}", a.body, "json"))
    return out


declare(ranked("SRV-ALIVE", probe=served.alive, judge=rank_answers, shows=alive_shown))

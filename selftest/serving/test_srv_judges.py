"""The declared SRV judges (rackgate/gates/srv.py) on what the server answered: SRV-MODELS' served
name, SRV-ALIVE's one rank of many; `Ranked` (rackgate/gates/declare.py) refuses to judge a rank
of which nothing came back."""
from __future__ import annotations

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.gates import srv
from rackgate.gates.declare import Ranked
from rackgate.probes.served import Alive, Models

pytestmark = pytest.mark.unit

RACK = None  # the judges read nothing of the rack file


def test_models_passes_on_the_served_name_and_names_a_path_listed_instead():
    assert srv.model_served(Models(("moonshotai/Kimi-K3",), "moonshotai/Kimi-K3", "--served-model", "{}"), RACK, "u") == []
    found = srv.model_served(Models(("/models/Kimi-K3",), "moonshotai/Kimi-K3", "--served-model", "{}"), RACK, "u")
    assert found == ["/v1/models lists ['/models/Kimi-K3'], not the configured served name 'moonshotai/Kimi-K3' "
                     "(given by --served-model) (a filesystem path)"]
    assert srv.model_served(Models((), "m", "x", "{}"), RACK, "u"), "an empty listing is not the name served"


def _ranks() -> dict[int, Alive]:
    ok = {r: Alive(r, "node1" if r < 4 else "node2", True, 200, "", "") for r in range(8)}
    ok[5] = Alive(5, "node2", False, None, "", "1 of 8 requests still in flight after 30.0s", health="HTTP 200",
                  log_tail="INFO ready\nINFO step 9\n\n", stacks_said="py-spy of dp5")
    ok[6] = Alive(6, "node2", True, 400, "HTTP 400: bad request", "")
    ok[7] = Alive(7, "node2", False, None, "connection reset by peer", "", health="HTTP 200", log_tail="")
    return ok


def test_alive_fails_the_hung_rank_only_naming_the_hang_health_and_last_log_line():
    ranks = _ranks()
    assert all(srv.rank_answers(Ranked(r, ranks[r].node, ranks), RACK, "w") == [] for r in range(5))
    (line,) = srv.rank_answers(Ranked(5, "node2", ranks), RACK, "node2/dp5")
    assert line.startswith("1 of 8 requests still in flight after 30.0s; evidence: py-spy of dp5; /health answers "
                           "HTTP 200; last line of node2's log: 'INFO step 9'"), line
    assert line.endswith(srv.DEADLOCK_SIGNATURE)


def test_alive_fails_a_rank_whose_request_broke_and_cannot_judge_a_refusal():
    ranks = _ranks()
    (line,) = srv.rank_answers(Ranked(7, "node2", ranks), RACK, "node2/dp7")
    assert line.startswith("connection reset by peer; /health answers HTTP 200") and srv.DEADLOCK_SIGNATURE not in line
    with pytest.raises(CouldNotObserve, match="routed to dp6 was refused: HTTP 400"):
        srv.rank_answers(Ranked(6, "node2", ranks), RACK, "node2/dp6")


def test_a_rank_of_which_nothing_came_back_is_not_judged():
    ranks = _ranks()
    del ranks[3]
    with pytest.raises(CouldNotObserve, match="dp3: nothing came back"):
        srv.rank_answers(Ranked(3, "node1", ranks), RACK, "node1/dp3")
    assert srv.alive_shown(Ranked(3, "node1", ranks), RACK) == []
    assert Ranked(3, "node1", ranks).where == "node1/dp3"

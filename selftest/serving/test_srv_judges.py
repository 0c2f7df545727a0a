"""The declared SRV judges (rackgate/gates/srv.py) on what the server answered: SRV-MODELS' served
name, SRV-ALIVE's one rank of many, SRV-SANITY's share (raised where it came from: `Finding`; a
hang as SRV-DEADLOCK's); `Ranked` (rackgate/gates/declare.py) refuses to judge a rank of which
nothing came back."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.config.serving import ServingExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import srv
from rackgate.gates.declare import Finding, Ranked
from rackgate.probes.served import Alive, Hang, Models, Reply, Sanity, Whole

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


# --- SRV-SANITY: the judge raises its finding where the answers came from, a hang as SRV-DEADLOCK's ---
SANE = SimpleNamespace(serving=ServingExpect())
URL = "http://server:8000"


def _replies(bad_ranks: set[int]) -> tuple[Reply, ...]:
    return tuple(Reply(p, "!!!!!!!!" if r in bad_ranks else f" {want.capitalize()}.", None, r, f"node{r // 4 + 1}")
                 for r in range(16) for p, want in ServingExpect().sanity_prompts.items())


def test_sanity_blames_the_node_whose_answers_are_degenerate_not_the_server():
    with pytest.raises(Finding) as e:
        srv.answers_sane(Sanity(URL, 32, _replies({4, 5, 6, 7}), replied=32), SANE, URL)
    assert (e.value.row, e.value.where) == ("SRV-SANITY", "node2"), (e.value.row, e.value.where)
    assert e.value.seen.startswith("8 of 32 answers degenerate, the other 24 coherent"), e.value.seen


def test_sanity_reads_a_hang_as_srv_deadlocks_finding_naming_the_asking_row():
    hang = Hang("1 of 16 requests still in flight after 30.0s", "node3/dp9", (("t", "x"),))
    with pytest.raises(Finding) as e:
        srv.answers_sane(Sanity(URL, 16, hang=hang), SANE, URL)
    assert (e.value.row, e.value.where, e.value.also) == ("SRV-DEADLOCK", "node3/dp9", ()), e.value
    assert e.value.seen == "SRV-SANITY's requests: 1 of 16 requests still in flight after 30.0s"
    assert [s.name for s in srv.sanity_shown(Sanity(URL, 16, hang=hang), SANE)] == ["t"]


def test_sanity_refused_share_is_a_finding_every_refusal_and_nothing_back_cannot_be_judged():
    with pytest.raises(Finding) as e:
        srv.answers_sane(Sanity(URL, 32, _replies(set())[:30], refused=("2 of 32 refused", "node1/dp0", 2, "HTTP 500"),
                                replied=32), SANE, URL)
    assert (e.value.row, e.value.where) == ("SRV-SANITY", "node1/dp0")
    with pytest.raises(CouldNotObserve, match="32 of 32 sanity prompts got no answer: HTTP 500"):
        srv.answers_sane(Sanity(URL, 32, refused=("32 of 32", "", 32, "HTTP 500"), replied=32), SANE, URL)
    with pytest.raises(CouldNotObserve, match="none of 16 requests came back"):
        srv.answers_sane(Sanity(URL, 16, blind="none of 16 requests came back"), SANE, URL)


def test_sanity_passes_coherent_answers_and_finds_an_incoherent_one_and_flat_logprobs():
    whole = (Whole("The capital of France is", " Paris.", (-0.1, -0.2), ""),)
    assert srv.answers_sane(Sanity(URL, 32, _replies(set()), replied=32, whole=whole), SANE, URL) == []
    odd = _replies(set())[:-1] + (Reply("1, 2, 3, 4, 5,", " seven", None, 15, "node4"),)
    flat = (Whole("1, 2, 3, 4, 5,", " 6", (-9.0, -9.0), ""),)
    found = srv.answers_sane(Sanity(URL, 32, odd, replied=32, whole=flat), SANE, URL)
    assert len(found) == 2 and "(node4/dp15): incoherent: expected '6'" in found[0], found
    assert "near-uniform logprobs" in found[1], found

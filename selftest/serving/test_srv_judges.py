"""The declared SRV judges (rackgate/gates/srv.py) on what the server answered: SRV-MODELS' served
name, SRV-ALIVE's one rank of many, SRV-SANITY's and SRV-CONSISTENCY's shares (raised where they came from:
`Finding`; a hang as SRV-DEADLOCK's); `Ranked` (rackgate/gates/declare.py) refuses to judge a rank of which
nothing came back."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rackgate.atom.fanout import Ask, Got
from rackgate.atom.perrank import Routing, Spread
from rackgate.config.serving import ServingExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import srv
from rackgate.gates.declare import Finding, Ranked
from rackgate.probes.prefill import Decoded, cuts
from rackgate.probes.served import Alive, Consistency, Hang, LongCtx, Models, Profiled, Reply, Said, Sanity, Streams, Whole

pytestmark = pytest.mark.unit

RACK = None  # the judges read nothing of the rack file



def raised(findings: list[str]) -> SimpleNamespace:
    """The judge's one Finding (it names its row and place), read as a raised one was
    (`e.value.row`, `.where`, `.seen`, `.means`, `.also`)."""
    assert len(findings) == 1 and isinstance(findings[0], Finding), findings
    f = findings[0]
    return SimpleNamespace(value=SimpleNamespace(row=f.row, where=f.where, seen=str(f), means=f.means, also=f.also))


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
    e = raised(srv.answers_sane(Sanity(URL, 32, _replies({4, 5, 6, 7}), replied=32), SANE, URL))
    assert (e.value.row, e.value.where) == ("SRV-SANITY", "node2"), (e.value.row, e.value.where)
    assert e.value.seen.startswith("8 of 32 answers degenerate, the other 24 coherent"), e.value.seen


def test_sanity_reads_a_hang_as_srv_deadlocks_finding_naming_the_asking_row():
    hang = Hang("1 of 16 requests still in flight after 30.0s", "node3/dp9", (("t", "x"),))
    e = raised(srv.answers_sane(Sanity(URL, 16, hang=hang), SANE, URL))
    assert (e.value.row, e.value.where, e.value.also) == ("SRV-DEADLOCK", "node3/dp9", ()), e.value
    assert e.value.seen == "SRV-SANITY's requests: 1 of 16 requests still in flight after 30.0s"
    assert [s.name for s in srv.read_shown(Sanity(URL, 16, hang=hang), SANE)] == ["t"]


def test_sanity_refused_share_is_a_finding_every_refusal_and_nothing_back_cannot_be_judged():
    e = raised(srv.answers_sane(Sanity(URL, 32, _replies(set())[:30], refused=("2 of 32 refused", "node1/dp0", 2, "HTTP 500"),
                                replied=32), SANE, URL))
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


# --- SRV-CONSISTENCY: k of n decodes that disagree with prefill, named by rank -------------------
TABLE4 = {0: "node1", 1: "node1", 2: "node2", 3: "node2"}


def _decodes(texts: dict[int, str]) -> tuple[Spread, tuple[tuple[int, Decoded], ...]]:
    got = [Got(Ask("The capital of France is", r), text=t, replied=True) for r, t in texts.items()]
    return (Spread(got, len(got), 0, 1.0, routing=Routing(dict(TABLE4), True)),
            tuple((i, Decoded(g.text)) for i, g in enumerate(got)))


def _prefilled(decoded, dec, wrong: set[int] = frozenset()) -> tuple[tuple[str, int | None, str], ...]:
    """Prefill's next token at every cut: the decode's own next word (or another on the `wrong` ranks)."""
    out = []
    for i, d in decoded:
        g = dec.got[i]
        for o in cuts(d, 4):
            nxt = d.text[o:].split()[0]
            out.append((g.ask.prompt + d.text[:o], g.ask.rank, " Lyon" if g.ask.rank in wrong else " " + nxt))
    return tuple(out)


def test_consistency_passes_agreeing_prefills_and_names_the_rank_that_disagrees():
    dec, decoded = _decodes({r: " Paris is the capital and the largest city" for r in TABLE4})
    assert srv.decode_agrees(Consistency(URL, dec, decoded, _prefilled(decoded, dec)), SANE, URL) == []
    e = raised(srv.decode_agrees(Consistency(URL, dec, decoded, _prefilled(decoded, dec, {3})), SANE, URL))
    assert (e.value.row, e.value.where) == ("SRV-CONSISTENCY", "node2/dp3"), (e.value.row, e.value.where)
    assert e.value.seen.startswith("1 of 4 decodes disagree with prefill"), e.value.seen


def test_consistency_reads_degenerate_decodes_as_sanitys_and_a_hang_as_srv_deadlocks():
    dec, decoded = _decodes({0: " Paris is big", 1: " Paris is big", 2: "!!!!!!!!!!", 3: "!!!!!!!!!!"})
    e = raised(srv.decode_agrees(Consistency(URL, dec), SANE, URL))
    assert (e.value.row, e.value.where) == ("SRV-SANITY", "node2"), (e.value.row, e.value.where)
    assert e.value.seen.startswith("SRV-CONSISTENCY: 2 of 4 decodes degenerate"), e.value.seen
    e = raised(srv.decode_agrees(Consistency(URL, dec, hang=Hang("1 of 4 requests still in flight", "node2/dp2")), SANE, URL))
    assert (e.value.row, e.value.seen) == ("SRV-DEADLOCK", "SRV-CONSISTENCY's requests: 1 of 4 requests still in flight")
    with pytest.raises(CouldNotObserve, match="none of 4"):
        srv.decode_agrees(Consistency(URL, Spread([], 4, 4, 1.0), blind="none of 4 requests came back"), SANE, URL)


# --- SRV-STREAM-CONSISTENCY: k of n answers that differ streamed and not, named by rank -----------
def _pairs(drop_first_on: set[int], usage: int | None = 8) -> Streams:
    text, pieces = " Paris is the capital of France and", (" Paris", " is", " the", " capital", " of", " France", " and")
    got = [Got(Ask("The capital of France is", r), text=text, replied=True) for r in TABLE4]
    plain = Spread(got, 4, 0, 1.0, routing=Routing(dict(TABLE4), True))

    def streamed(r: int) -> Said:
        ps = pieces[1:] if r in drop_first_on else pieces
        return Said("".join(ps), "length", usage, len(ps), (), pieces=ps)
    return Streams(URL, plain, tuple((i, Said(text, "length", usage, 7, ()), streamed(r)) for i, r in enumerate(TABLE4)))


def test_stream_consistency_passes_agreeing_answers_and_names_the_rank_whose_stream_differs():
    sane = SimpleNamespace(serving=ServingExpect(stream_max_tokens=7))
    assert srv.streams_agree(_pairs(set(), usage=7), sane, URL) == []
    e = raised(srv.streams_agree(_pairs({2}, usage=7), sane, URL))
    assert (e.value.row, e.value.where) == ("SRV-STREAM-CONSISTENCY", "node2/dp2"), (e.value.row, e.value.where)
    assert e.value.seen.startswith("1 of 4 answers disagree streamed and not"), e.value.seen
    with pytest.raises(CouldNotObserve, match="reported no usage.completion_tokens"):
        srv.streams_agree(_pairs(set(), usage=None), sane, URL)
    e = raised(srv.streams_agree(Streams(URL, Spread([], 4, 0, 1.0), hang=Hang("2 of 4 requests still in flight", "node2")), sane, URL))
    assert (e.value.row, e.value.where) == ("SRV-DEADLOCK", "node2")


# --- SRV-PROFILE: each rank's trace from the session's one profiling run ---------------------------
def _profiled(traced: dict[int, bool | None], **kw) -> dict[int, Profiled]:
    ok = SimpleNamespace(status=200, body={"message": "started"}, refusal="HTTP 200: {}")
    return {r: Profiled(r, TABLE4[r], f"/tmp/p/dp{r}_tp0", t, ok, ok, **kw) for r, t in traced.items()}


def test_profile_fails_the_rank_without_a_trace_and_counts_the_others():
    ranks = _profiled({0: True, 1: True, 2: False, 3: True})
    assert srv.rank_traced(Ranked(0, "node1", ranks), SANE, "node1/dp0") == []
    (line,) = srv.rank_traced(Ranked(2, "node2", ranks), SANE, "node2/dp2")
    assert "yet dp2 has no non-empty *.pt.trace.json.gz in /tmp/p/dp2_tp0" in line and "(1 of 4 ranks have none: dp2)" in line
    with pytest.raises(CouldNotObserve, match="/start_profile HTTP 200"):
        srv.rank_traced(Ranked(1, "node1", _profiled({1: None})), SANE, "node1/dp1")
    assert srv.profile_asked(SimpleNamespace(serving=ServingExpect())).startswith("serving.profile_dir is not set")


def test_profile_reads_a_hang_of_its_load_as_srv_deadlocks_on_the_hung_rank_only():
    ranks = _profiled({0: None, 3: None}, hang=Hang("1 of 4 in flight", "node2/dp3", ranks=(3,)))
    e = raised(srv.rank_traced(Ranked(3, "node2", ranks), SANE, "node2/dp3"))
    assert (e.value.row, e.value.where) == ("SRV-DEADLOCK", "node2/dp3")
    with pytest.raises(CouldNotObserve, match="hung at node2/dp3 .see SRV-DEADLOCK."):
        srv.rank_traced(Ranked(0, "node1", ranks), SANE, "node1/dp0")


# --- SRV-LONGCTX: the long prompts answered, the engine still there afterwards ---------------------
def _spread(texts: dict[int, str], errors: dict[int, str] | None = None, hung: tuple[int, ...] = ()) -> Spread:
    got = [Got(Ask("p", r), text=t, replied=True, error=(errors or {}).get(r), status=400 if r in (errors or {}) else 200)
           for r, t in texts.items()]
    return Spread(got, len(got) + len(hung), len(hung), 1.0, hung=[Ask("p", r) for r in hung],
                  bound_s=30.0 if hung else None, routing=Routing(dict(TABLE4), True))


def test_longctx_passes_when_answered_and_still_there_and_names_the_assertion_and_the_engine_gone():
    ok = _spread({r: " a summary" for r in TABLE4})
    assert srv.long_prompts_served(LongCtx(URL, ok, after=ok), SANE, URL) == []
    gone = _spread({0: " Paris", 1: " Paris", 3: " Paris"}, hung=(2,))
    e = raised(srv.long_prompts_served(LongCtx(URL, ok, ("node2/dp2 line 9: PHINode::setIncomingValue ...",), after=gone),
                                SANE, URL))
    assert (e.value.row, e.value.where, e.value.also) == ("SRV-LONGCTX", "node2/dp2", ("SRV-DEADLOCK",)), e.value
    assert e.value.seen.startswith("PHINode::setIncomingValue assertion: node2/dp2 line 9") and "engine gone" in e.value.seen
    refused = _spread({r: "" for r in TABLE4}, errors={r: "HTTP 400: too long" for r in TABLE4})
    e = raised(srv.long_prompts_served(LongCtx(URL, refused, after=ok), SANE, URL))
    assert e.value.row == "SRV-LONGCTX" and "long prompts: 4 of 4 requests answered with an error" in e.value.seen


def test_longctx_reads_a_degenerate_answer_as_sanitys_and_its_hang_as_its_own_and_srv_deadlocks():
    bang = _spread({0: " ok then", 1: " ok then", 2: "!!!!!!!!!!", 3: "!!!!!!!!!!"})
    e = raised(srv.long_prompts_served(LongCtx(URL, bang), SANE, URL))
    assert (e.value.row, e.value.where) == ("SRV-SANITY", "node2") and e.value.seen.startswith("SRV-LONGCTX's load:")
    e = raised(srv.long_prompts_served(LongCtx(URL, _spread({0: " ok"}), hang=Hang("3 of 4 in flight", "node1/dp1")), SANE, URL))
    assert (e.value.row, e.value.also) == ("SRV-LONGCTX", ("SRV-DEADLOCK",)) and srv.DEADLOCK_SIGNATURE in e.value.seen

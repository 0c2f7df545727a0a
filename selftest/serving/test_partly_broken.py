"""A rack broken in part (issue 22): a stream that turns degenerate is cut at once (the server
stops generating), many prompts go out at once and the first degenerate answer decides, and the
share of degenerate answers is read as a global or a node/rank-specific cause."""
from __future__ import annotations

import json
import threading
import time

import pytest

from rackgate.atom import fanout
from rackgate.atom.client import Client
from rackgate.gates import sanity
from rackgate.sim.httpjson import JsonHandler

from .loopback import Loopback

pytestmark = pytest.mark.suite

BOUND = 200000  # a '!' stream this server would send in full: far more than any check reads
SLOW = "slow"   # a prompt the engines never start answering (until they close)


class _Engines:
    """Real HTTP on loopback: /v1/completions streams; requests whose data_parallel_rank (or, without
    a hint, whose arrival turn) is in `bang` get '!' chunks (BOUND of them unless the client goes),
    the others ' Paris.'. Counts the '!' chunks it wrote. `hold`: a coherent answer starts only
    half a second after a '!' stream's client went (the coherent ranks slower than the decision)."""

    def __init__(self, ranks: int, bang: set[int], refuse_hint: bool = False, hold: bool = False):
        self.ranks, self.bang, self.sent, self.turn = ranks, bang, 0, 0
        self.refuse_hint = refuse_hint  # as transformers serve: HTTP 422 on the unknown field
        self.hold, self.bang_gone, self.closed = hold, threading.Event(), threading.Event()
        self.lock = threading.Lock()
        outer = self

        class H(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if outer.refuse_hint and "data_parallel_rank" in body:
                    return self._send(422, {"detail": "Unexpected fields in the request: {'data_parallel_rank'}"})
                with outer.lock:
                    rank = body.get("data_parallel_rank")
                    rank = outer.turn % outer.ranks if rank is None else rank
                    outer.turn += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                pieces = ["!"] * BOUND if rank in outer.bang else [" Paris", "."]
                if body.get("prompt") == SLOW:  # an answer that never starts (the engine busy elsewhere)
                    outer.closed.wait(3600)
                if outer.hold and rank not in outer.bang:
                    outer.bang_gone.wait(60)
                    time.sleep(0.5)
                try:
                    for p in pieces:
                        self.wfile.write(b"data: " + json.dumps({"choices": [{"text": p, "finish_reason": None}]})
                                         .encode() + b"\n\n")
                        self.wfile.flush()
                        if p == "!":
                            with outer.lock:
                                outer.sent += 1
                    self.wfile.write(b'data: {"choices": [{"text": "", "finish_reason": "stop"}]}\n\n'
                                     b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    if rank in outer.bang:
                        outer.bang_gone.set()

        self.server = Loopback(H)
        self.url = self.server.url

    def close(self):
        self.closed.set()
        self.server.close()


@pytest.fixture
def engines(request):
    e = _Engines(*request.param)
    yield e
    e.close()


# --- the stream is cut as soon as it is degenerate --------------------------------------------
@pytest.mark.parametrize("engines", [(1, {0})], indirect=True)
def test_stop_when_cuts_a_bang_stream(engines):
    c = Client(engines.url, "m", timeout=60)
    r = c.stream("/v1/completions", {"prompt": "The capital of France is", "max_tokens": BOUND},
                 stop_when=sanity.degenerate_so_far)
    assert r.body["stopped"].startswith("every character is '!'")
    assert r.body["choices"][0]["finish_reason"] is None
    assert len(r.body["choices"][0]["text"]) < 100
    assert engines.sent < BOUND  # the server stopped writing: the client went


@pytest.mark.parametrize("engines", [(1, set())], indirect=True)
def test_stop_when_leaves_a_coherent_stream_whole(engines):
    r = Client(engines.url, "m", timeout=60).stream("/v1/completions", {"prompt": "x", "max_tokens": 8},
                                                    stop_when=sanity.degenerate_so_far)
    assert "stopped" not in r.body and r.body["choices"][0]["text"] == " Paris."


# --- many at once: the first degenerate answer decides ----------------------------------------
def _asks(ranks):
    return [fanout.Ask("The capital of France is", r) for r in ranks]


def _decisive(g):
    return bool(g.stopped)


@pytest.mark.parametrize("engines", [(4, {2})], indirect=True)
def test_fan_out_reaches_every_rank_and_names_the_bad_one(engines):
    out = fanout.fan_out(Client(engines.url, "m", 60), _asks([0, 0, 1, 1, 2, 2, 3, 3]), BOUND, 60,
                         stop_when=sanity.degenerate_so_far, decisive=_decisive, settle_s=30)
    assert len(out.got) == 8 and out.cancelled == 0
    table = {0: "node1", 1: "node1", 2: "node2", 3: "node2"}
    answers = [sanity.Answer(g.ask.prompt, g.text, g.stopped, g.ask.rank, table[g.ask.rank]) for g in out.got]
    said = sanity.share(answers, out.asked)
    assert said.startswith("2 of 8 answers degenerate, the other 6 coherent")
    assert "node2: 2 degenerate (dp2), 2 coherent (dp3); coherent on node1" in said
    assert "node- or rank-specific" in said and sanity.blamed(answers) == "node2/dp2"


@pytest.mark.parametrize("engines", [(2, {0, 1})], indirect=True)
def test_fan_out_stops_at_the_first_degenerate_answer(engines):
    """settle_s 0: the read ends with the first decisive answer; nothing is left generating."""
    out = fanout.fan_out(Client(engines.url, "m", 60), _asks([0, 1] * 8), BOUND, 60,
                         stop_when=sanity.degenerate_so_far, decisive=_decisive, settle_s=0)
    assert out.got and all(g.stopped for g in out.got)
    assert engines.sent < 16 * BOUND


@pytest.mark.parametrize("engines", [(2, {0}, False, True)], indirect=True)
def test_the_share_waits_for_an_answer_that_is_not_degenerate(engines):
    """A '!' rank answers at once, the coherent rank only after the '!' stream was cut: with a hang
    rule the read stays open (at most its floor) until an answer that is not decisive is back, so
    the share reads one rank among healthy ones, never the whole server from the '!' rank alone."""
    out = fanout.fan_out(Client(engines.url, "m", 60), _asks([0, 1]), BOUND, 60, stop_when=sanity.degenerate_so_far,
                         decisive=_decisive, settle_s=0, settle_as_long=False, hang=fanout.HangRule(30.0, 10.0))
    by_rank = {g.ask.rank: g for g in out.got}
    assert by_rank[0].stopped and 1 in by_rank and by_rank[1].text == " Paris.", out
    answers = [sanity.Answer(g.ask.prompt, g.text, g.stopped, g.ask.rank, "node1") for g in out.got]
    assert "node- or rank-specific" in sanity.share(answers, out.asked)


@pytest.mark.parametrize("engines", [(2, set(), True)], indirect=True)
def test_a_server_that_refuses_the_rank_hint_is_not_sent_it(engines):
    c = Client(engines.url, "m", 60)
    assert not fanout.takes_rank_hint(c, 2, 60)[0]
    assert not fanout.takes_rank_hint(c, 1, 60)[0]  # one rank: no hint at all


@pytest.mark.parametrize("engines", [(2, set())], indirect=True)
def test_a_server_that_takes_the_rank_hint_gets_it(engines):
    assert fanout.takes_rank_hint(Client(engines.url, "m", 60), 2, 60)[0]


def test_long_requests_fail_naming_a_degenerate_answer(tmp_path):
    """ACC-BUDGET (max_tokens 12288, streamed) and SRV-CONSISTENCY on a '!' server, SRV-SANITY not
    selected: each FAILS naming the degenerate answer under SRV-SANITY's row, none waits it out or
    says it could not look."""
    from ..harness import run_suite
    from ..simserver import sim_server
    budget, consistency = ("ACC-BUDGET::server",
                           "SRV-CONSISTENCY::server")
    with sim_server("bang-tokens") as (_proc, url):
        run = run_suite(tmp_path, "--atom-url", url, "--served-model", "moonshotai/Kimi-K3",
                        budget, consistency)
    assert run.ids("failed") == {budget, consistency}, run.stdout[-3000:]
    b, c = run.outcomes[budget].message, run.outcomes[consistency].message
    assert b.startswith("SRV-SANITY [") and "ACC-BUDGET: 16 of 16 answers degenerate" in b, b
    assert "every character is '!'" in b, b
    assert "SRV-CONSISTENCY: " in c and "decodes degenerate" in c and "every character is '!'" in c, c


# --- the verdict as soon as it is certain (issue 50) ------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("engines", [(2, {0, 1})], indirect=True)
def test_every_rank_answered_degenerate_ends_the_read_without_waiting_for_the_rest(engines):
    """Every rank asked by the hint has answered, each '!': no answer still out can change the
    reading, so the read ends at the settle window, not at the hang floor (an hour here: waiting it
    out would be the test's timeout), and the share says how many were still in flight."""
    asks = _asks([0, 1]) + [fanout.Ask(SLOW, 0)]
    out = fanout.fan_out(Client(engines.url, "m", 3600), asks, BOUND, 3600, stop_when=sanity.degenerate_so_far,
                         decisive=_decisive, settle_s=0, settle_as_long=False, hang=fanout.HangRule(3600.0, 10.0))
    assert sorted(g.ask.rank for g in out.got) == [0, 1] and all(g.stopped for g in out.got) and out.cancelled == 1
    answers = [sanity.Answer(g.ask.prompt, g.text, g.stopped, g.ask.rank, "node1") for g in out.got]
    said = sanity.share(answers, out.asked)
    assert said.startswith("2 of 2 answers degenerate, the other 0 coherent (2 of 3 answers back, 1 still in "
                           "flight when the verdict was certain)"), said


@pytest.mark.timeout(120)
@pytest.mark.parametrize("engines", [(1, {0})], indirect=True)
def test_ranks_not_known_the_read_waits_for_a_coherent_answer_up_to_the_floor(engines):
    """No rank hint (a server of one engine answering one request at a time, attached without a
    rack file): an answer still out may be another rank's coherent one (the one-rank-of-many
    diagnosis rests on it: realengine test_gate_names_the_broken_engine_of_three), so the read waits
    for one -- bounded by the hang rule's floor, then the degenerate answer is the verdict and the
    request still queued is cancelled."""
    asks = [fanout.Ask("The capital of France is"), fanout.Ask(SLOW)]
    out = fanout.fan_out(Client(engines.url, "m", 3600), asks, BOUND, 3600, stop_when=sanity.degenerate_so_far,
                         decisive=_decisive, settle_s=0, settle_as_long=False, hang=fanout.HangRule(2.0, 10.0))
    assert len(out.got) == 1 and out.got[0].stopped and out.cancelled == 1

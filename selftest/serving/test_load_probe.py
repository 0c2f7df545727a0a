"""rackgate.atom.load: the load generator the SRV-LONGCTX / SRV-DEADLOCK checks wire to their
judges. Every request is bounded; `stop` ends the wait early (on log evidence) without waiting
for requests a stuck rank will never answer; a request with no answer is counted as pending, not
as a refusal. Driven by events, never by sleeps."""
import threading

import pytest

from rackgate.atom import load
from rackgate.atom.client import Reply, ServerError
from rackgate.gates import sanity

pytestmark = pytest.mark.unit

JUDGES = {"degenerate": sanity.degenerate, "degenerate_so_far": sanity.degenerate_so_far}  # the checks' judges


class FakeClient:
    """Even prompts answer 200 at once; odd ones hang until released (a stuck rank); a prompt
    containing 'refuse' answers 400, one containing 'bang' answers '!!!!!!!!'."""
    model = "m"

    def __init__(self):
        self.release = threading.Event()
        self.hanging = 0
        self.lock = threading.Lock()

    def completion(self, prompt, max_tokens=16, timeout=None, **extra):
        if "refuse" in prompt:
            return Reply(400, {"detail": "Requested model does not match"}, 0.0, {})
        if int(prompt.split()[0]) % 2:
            with self.lock:
                self.hanging += 1
            if not self.release.wait(timeout):
                raise ServerError(f"POST /v1/completions: no answer within {timeout:g}s")
        if "bang" in prompt:
            return Reply(200, {"choices": [{"text": "!" * 8}]}, 0.0, {})
        return Reply(200, {"choices": [{"text": "ok"}]}, 0.0, {})

    def stream(self, path, body, timeout=None, handle=None, stop_when=None):
        return self.completion(body["prompt"], body["max_tokens"], timeout)


def test_stop_ends_the_wait_and_unanswered_requests_are_pending():
    c = FakeClient()
    prompts = [f"{i} words" for i in range(8)]
    try:
        out = load.send_all(c, prompts, 4, timeout=600, concurrency=8, stop=lambda: c.hanging == 4, poll_s=0.01, **JUDGES)
    finally:
        c.release.set()
    assert out.stopped_early and out.pending == 4 and out.problems == [] and out.completed == 4


def test_a_request_past_its_bound_is_pending_and_a_refusal_is_a_problem():
    c = FakeClient()
    out = load.send_all(c, ["1 hang", "2 fine", "4 refuse"], 4, timeout=0.01, concurrency=3, poll_s=0.01, **JUDGES)
    assert not out.stopped_early and out.pending == 1
    assert len(out.problems) == 1 and "does not match" in out.problems[0]


def test_a_degenerate_answer_ends_the_load_and_is_named():
    """A '!' rank under load: the load ends on its answer (the others hang), which is named."""
    c = FakeClient()
    try:
        out = load.send_all(c, ["1 hang", "2 bang", "3 hang"], 4, timeout=600, concurrency=3, ranks=[0, 4, 8],
                            poll_s=0.01, **JUDGES)
    finally:
        c.release.set()
    assert out.degenerate == ["dp4: '!!!!!!!!': every character is '!' (8 of them)"]
    assert out.pending == 2 and out.problems == []


def test_ranks_alive_names_the_rank_that_did_not_answer():
    class RankClient:
        def completion(self, prompt, max_tokens=16, timeout=None, data_parallel_rank=None):
            if data_parallel_rank == 2:
                raise ServerError("POST /v1/completions: no answer within 1s")
            return Reply(200, {}, 0.0, {})
    gone = load.ranks_alive(RankClient(), {0: "node1", 1: "node1", 2: "node2"}, timeout=1)
    assert list(gone) == [2] and gone[2][0].startswith("node2/dp2:") and gone[2][1] is True

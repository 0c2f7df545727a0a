"""The hostile-endpoint matrix (issue 52): a real HTTP server (selftest/hostile.py) misbehaving in
one named way per case, read by the suite's client as every check reads a server. Each case has its
expected outcome -- FAILED on the server with the numbers (positive evidence: it broke the request's
own limit), or one clear could-not-observe line --, its memory bound (what the read held, by
tracemalloc: the answer's bound, never the server's size) and its time bound (relative to the
configured timeout, generous: no speed is asserted)."""
from __future__ import annotations

import time
import tracemalloc

import pytest

from rackgate.atom import bounded
from rackgate.atom.client import Client, ServerError, first_choice, refusal
from rackgate.atom.fanout import HangRule
from rackgate.atom.perrank import PerRank, Routing
from rackgate.errors import CouldNotObserve, ServerBrokeLimit

from ..hostile import HUGE_BYTES, TOO_LONG, UNKNOWN_FIELD, Hostile

pytestmark = pytest.mark.suite

TIMEOUT_S = 3.0
MAX_TOKENS = 16
SLACK_BYTES = 8 << 20      # what a read holds beyond the answer's own bound (buffers, the interpreter's)


def _read(behaviour: str, stream: bool):
    """(what came back or was raised, seconds, peak bytes held, bytes the server got out)."""
    with Hostile(behaviour) as h:
        client = Client(h.url, "hostile/model", timeout=TIMEOUT_S)
        body = {"model": "hostile/model", "prompt": "The capital of France is", "max_tokens": MAX_TOKENS}
        tracemalloc.start()
        t0 = time.monotonic()
        try:
            got: object = (client.stream("/v1/completions", body) if stream
                           else client.request("POST", "/v1/completions", body))
        except (ServerBrokeLimit, CouldNotObserve) as e:
            got = e
        took = time.monotonic() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return got, took, peak, h.sent


# behaviour, streamed, the exception, what its one line says
CASES = [
    ("endless", True, ServerBrokeLimit, "ran past the request's max_tokens"),
    ("huge", False, ServerBrokeLimit, "larger than any answer to this request could be"),
    ("huge", True, ServerBrokeLimit, "larger than any answer to this request could be"),
    ("garbage", False, ServerError, "not UTF-8"),
    ("trickle", False, ServerError, f"did not finish within {TIMEOUT_S:g}s"),
    ("trickle", True, ServerError, f"did not finish within {TIMEOUT_S:g}s"),
    ("html", False, ServerError, "non-JSON response (HTTP 200)"),
    ("html", True, ServerError, "non-JSON response (HTTP 200)"),
]


@pytest.mark.parametrize("behaviour, stream, kind, says", CASES, ids=[f"{c[0]}-{'stream' if c[1] else 'body'}" for c in CASES])
def test_each_hostile_answer_ends_in_its_bound_with_its_verdict(behaviour, stream, kind, says):
    got, took, peak, sent = _read(behaviour, stream)
    assert isinstance(got, kind), got
    line = str(got)
    assert says in line and "\n" not in line, line
    limit = bounded.answer_bytes({"max_tokens": MAX_TOKENS, "prompt": "The capital of France is", "model": "hostile/model"})
    assert peak < limit + SLACK_BYTES, f"held {peak:,} bytes reading it (the bound {limit:,})"
    assert took < 3 * TIMEOUT_S + 30, f"{took:.1f}s"   # the configured timeout, generously: no speed asserted
    if behaviour == "huge":
        assert sent < HUGE_BYTES // 4, f"the server got {sent:,} of {HUGE_BYTES:,} bytes out: the read did not stop"
    if kind is ServerBrokeLimit:
        assert not isinstance(got, CouldNotObserve)   # evidence about the server, never could-not-observe
        assert str(MAX_TOKENS) in line or "MiB" in line, line   # with the numbers


def test_an_error_object_with_http_200_is_one_line_not_a_pass():
    got, _, _, _ = _read("error200", stream=False)
    with pytest.raises(ServerError, match="no choices in the response: .*internal engine error"):
        first_choice(got, "/v1/completions")


@pytest.mark.parametrize("behaviour, said", [("too-long", TOO_LONG), ("unknown-field", UNKNOWN_FIELD)])
def test_a_4xx_naming_the_request_is_read_as_what_the_server_said(behaviour, said):
    got, _, _, _ = _read(behaviour, stream=True)
    assert got.status == 400 and refusal(got) == f"HTTP 400: {said}"


def test_every_rank_asked_of_an_endless_server_is_the_servers_finding():
    """The per-rank asks (how every request-sending check reaches a server): one answer past
    max_tokens is raised as the evidence, naming the request's numbers -- not 'none came back'."""
    with Hostile("endless") as h:
        per = PerRank(Client(h.url, "hostile/model", timeout=TIMEOUT_S), Routing({}, False), HangRule(), TIMEOUT_S)
        with pytest.raises(ServerBrokeLimit, match=f"max_tokens={MAX_TOKENS}"):
            per.ask(["The capital of France is"], MAX_TOKENS, attached=4)


def test_a_healthy_answer_is_read_whole():
    got, _, _, _ = _read("healthy", stream=True)
    assert got.body["choices"][0]["text"] == " Paris."
    got, _, _, _ = _read("healthy", stream=False)
    assert got.body["choices"][0]["text"] == " Paris."


def test_a_request_too_long_for_the_server_is_could_not_observe_naming_the_key():
    """The issue's SRV-LONGCTX case: HTTP 400 'maximum context length' to every rank is rackgate's
    mismatch, never a FAILED on the rack."""
    with Hostile("too-long") as h:
        per = PerRank(Client(h.url, "hostile/model", timeout=TIMEOUT_S), Routing({}, False), HangRule(), TIMEOUT_S)
        with pytest.raises(CouldNotObserve, match="too long for the model.*serving.max_model_len"):
            per.ask(["river stone " * 100], MAX_TOKENS, attached=4)

"""SRV-STREAM-CONSISTENCY (MLPerf TEST06): the same greedy request streamed and not streamed gives
the same answer, and the server's usage count, end-of-sequence and finish_reason agree with it."""
import pytest

from rackgate.atom import tokens
from rackgate.atom.client import first_choice
from rackgate.errors import CouldNotObserve
from rackgate.gates import stream
from rackgate.report.verdict import check

PATH = "/v1/completions"


@pytest.mark.row("SRV-STREAM-CONSISTENCY")
def test_stream_matches_plain(server, rack, evidence):
    cfg = rack.serving
    tok = tokens.load(cfg.tokenizer)
    c, n = server.client, cfg.stream_max_tokens
    findings, usage_seen = [], False
    for prompt in cfg.stream_prompts:
        plain_reply = c.completion(prompt, max_tokens=n)
        evidence.attach(f"not streamed: {prompt}", plain_reply.evidence(), "json")
        pc = first_choice(plain_reply, PATH)
        streamed_reply = c.stream(PATH, {"model": c.model, "prompt": prompt, "max_tokens": n, "temperature": 0.0})
        evidence.attach(f"streamed: {prompt}", streamed_reply.evidence(), "json")
        sc = first_choice(streamed_reply, PATH)
        plain_usage = (plain_reply.body.get("usage") or {}).get("completion_tokens")
        stream_usage = (streamed_reply.body.get("server_usage") or {}).get("completion_tokens")
        usage_seen |= plain_usage is not None or stream_usage is not None
        plain = stream.Answer("not streamed", pc.get("text") or "", pc.get("finish_reason"), plain_usage)
        streamed = stream.Answer("streamed", sc.get("text") or "", sc.get("finish_reason"), stream_usage,
                                 tuple(streamed_reply.body.get("pieces") or ()))
        findings += [f"{prompt!r}: {f}" for f in stream.judge(plain, streamed, n, tok.count, tok.specials_in)]
    if not findings and not usage_seen:
        raise CouldNotObserve(f"{server.url} reported no usage.completion_tokens, streamed or not: the count "
                              "cannot be checked")
    check(not findings, "SRV-STREAM-CONSISTENCY", server.url, "; ".join(findings))

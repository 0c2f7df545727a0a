"""SRV-STREAM-CONSISTENCY (MLPerf TEST06): the same greedy request streamed and not streamed gives
the same answer, and the server's usage count, end-of-sequence and finish_reason agree with it --
on every DP rank (each prompt asked of each rank both ways, all at once)."""
import pytest

from rackgate.atom import tokens
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import settle
from rackgate.gates import stream
from rackgate.report.verdict import check


@pytest.mark.row("SRV-STREAM-CONSISTENCY")
def test_stream_matches_plain(server, per_rank, rack, evidence):
    cfg = rack.serving
    tok = tokens.load(cfg.tokenizer)
    prompts, n = list(cfg.stream_prompts), cfg.stream_max_tokens
    plain = per_rank.ask(prompts, n, per_rank=len(prompts), attached=max(len(prompts), cfg.sanity_requests_attached),
                         stream=False)
    evidence.attach("not streamed, all ranks", plain.evidence())
    settle(plain, "SRV-STREAM-CONSISTENCY", server, evidence)
    streamed = per_rank.asks([g.ask for g in plain.got], n, stream=True)
    evidence.attach("streamed, all ranks", streamed.evidence())
    settle(streamed, "SRV-STREAM-CONSISTENCY", server, evidence)
    if plain.cancelled or streamed.cancelled:
        raise CouldNotObserve(f"{plain.cancelled + streamed.cancelled} of {plain.asked + streamed.asked} requests not "
                              "back within the request timeout")
    findings: dict[int, list[str]] = {}
    usage_seen = False
    for p, s in zip(plain.got, streamed.got):
        if p.error or s.error:
            raise CouldNotObserve(f"{p.ask.prompt!r}: {p.error or s.error}")
        plain_usage = (p.body.get("usage") or {}).get("completion_tokens")
        stream_usage = (s.body.get("server_usage") or {}).get("completion_tokens")
        usage_seen |= plain_usage is not None or stream_usage is not None
        a = stream.Answer("not streamed", p.text, p.finish, plain_usage)
        b = stream.Answer("streamed", s.text, s.finish, stream_usage, tuple(s.body.get("pieces") or ()))
        found = stream.judge(a, b, n, tok.count, tok.specials_in)
        if found:
            where = f"dp{p.ask.rank}" if p.ask.rank is not None else "rank not known"
            findings[id(p)] = [f"{p.ask.prompt!r} ({where}): " + "; ".join(found)]
    if not findings and not usage_seen:
        raise CouldNotObserve(f"{server.url} reported no usage.completion_tokens, streamed or not: the count "
                              "cannot be checked")
    share = plain.share(lambda g: next(iter(findings.get(id(g), [])), None), "answers disagree streamed and not")
    check(share is None, "SRV-STREAM-CONSISTENCY", (share.where if share else "") or server.url,
          share.line if share else "")

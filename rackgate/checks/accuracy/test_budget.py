"""ACC-BUDGET: the gate's max_tokens leaves room for the answer after K3's reasoning -- on every DP
rank (one chat request each, all at once; attached without a rack file,
accuracy.budget_requests_attached spread by the server). Each stream is cut the moment its text is
degenerate: a '!' rank is a FAILED naming it (SRV-SANITY's signature), never a wait until the
request's timeout. One rank whose answers are all reasoning is a FAILED naming the share."""
import pytest

from rackgate.fixtures.server import settle_errors
from rackgate.gates import budget, sanity
from rackgate.report.verdict import check, fail


def _judge(g) -> budget.Judgement:
    choice = {"message": {"content": g.text, "reasoning_content": g.reasoning}, "finish_reason": g.finish}
    return budget.judge(choice, g.tokens)


@pytest.mark.row("ACC-BUDGET")
def test_reasoning_budget(server, per_rank, rack, evidence):
    cfg = rack.accuracy
    spread = per_rank.ask([cfg.budget_prompt], cfg.max_tokens, chat=True, attached=cfg.budget_requests_attached,
                          stop_when=sanity.degenerate_so_far, timeout=cfg.request_timeout_s,
                          decisive=lambda g: bool(g.stopped))
    evidence.attach("chat completions (streamed), all ranks", spread.evidence())
    broken = spread.share(lambda g: g.stopped or (_judge(g).why if not g.error and _judge(g).kind == "degenerate"
                                                   else None), "answers degenerate")
    if broken:  # not a budget finding: the answer is not language (the budget cannot be judged on it)
        fail("SRV-SANITY", broken.where or server.url, f"ACC-BUDGET: {broken.line}; the budget cannot be judged on "
             "them")
    settle_errors(spread, "ACC-BUDGET", server, evidence, "POST /v1/chat/completions")
    short = spread.share(lambda g: None if _judge(g).ok else f"{_judge(g).kind}: {_judge(g).why}",
                         "answers without an answer in content")
    check(short is None, "ACC-BUDGET", (short.where if short else "") or server.url,
          f"max_tokens={cfg.max_tokens}: {short.line}" if short else "")

"""ACC-BUDGET: the gate's max_tokens leaves room for the answer after K3's reasoning. The one long
request streams and is cut the moment its text is degenerate: a '!' rank is a FAILED naming it
(SRV-SANITY's signature), never a wait until the request's timeout."""
import pytest

from rackgate.atom.client import first_choice
from rackgate.gates import budget, sanity
from rackgate.report.verdict import check, fail


@pytest.mark.row("ACC-BUDGET")
def test_reasoning_budget(server, rack, evidence):
    cfg = rack.accuracy
    body = {"model": server.client.model, "messages": [{"role": "user", "content": cfg.budget_prompt}],
            "max_tokens": cfg.max_tokens, "temperature": 0.0}
    reply = server.client.stream("/v1/chat/completions", body, stop_when=sanity.degenerate_so_far)
    evidence.attach("chat completion (streamed)", reply.evidence(), "json")
    usage = reply.body.get("usage") or {}
    choice = first_choice(reply, "/v1/chat/completions")
    stopped = reply.body.get("stopped")
    j = budget.judge(choice, usage.get("completion_tokens"))
    if stopped or j.kind == "degenerate":
        # not a budget finding: the answer is not language (the budget cannot be judged on it)
        fail("SRV-SANITY", server.url, f"ACC-BUDGET's answer is degenerate: "
             f"{stopped + ' (the stream was cut there)' if stopped else j.why}; the budget cannot be judged on it")
    check(j.ok, "ACC-BUDGET", server.url, f"max_tokens={cfg.max_tokens}: {j.why}")

"""ACC-BUDGET: the gate's max_tokens leaves room for the answer after K3's reasoning."""
import pytest

from rackgate.atom.client import first_choice
from rackgate.errors import CouldNotObserve
from rackgate.gates import budget
from rackgate.report.verdict import check


@pytest.mark.row("ACC-BUDGET")
def test_reasoning_budget(server, rack, evidence):
    cfg = rack.accuracy
    reply = server.client.chat([{"role": "user", "content": cfg.budget_prompt}], max_tokens=cfg.max_tokens)
    evidence.attach("chat completion", reply.evidence(), "json")
    usage = reply.body.get("usage") or {}
    j = budget.judge(first_choice(reply, "/v1/chat/completions"), usage.get("completion_tokens"))
    if j.kind == "degenerate":
        raise CouldNotObserve(f"the answer is not language, so its budget cannot be judged ({j.why}): "
                              "that is SRV-SANITY's finding (see it)")
    check(j.ok, "ACC-BUDGET", server.url, f"max_tokens={cfg.max_tokens}: {j.why}")

"""SRV-MODELS, SRV-SANITY: the server lists the served name, and its output is language."""
import pytest

from rackgate.atom.client import first_choice
from rackgate.gates import sanity
from rackgate.report.verdict import check


@pytest.mark.row("SRV-MODELS")
def test_models_lists_served_name(server, rack, evidence):
    reply = server.client.models()
    evidence.attach("GET /v1/models", reply.evidence(), "json")
    ids = server.client.model_ids()
    want = server.client.model
    check(want in ids, "SRV-MODELS", server.url,
          f"/v1/models lists {ids}, not the configured served name {want!r}"
          + (" (a filesystem path)" if any(i.startswith('/') for i in ids) else ""))


@pytest.mark.row("SRV-SANITY")
def test_sanity(server, rack, evidence):
    cfg = rack.serving
    findings = []
    for prompt, expect in cfg.sanity_prompts.items():
        reply = server.client.completion(prompt, max_tokens=cfg.sanity_max_tokens, logprobs=1)
        evidence.attach(f"completion: {prompt}", reply.evidence(), "json")
        choice = first_choice(reply, "/v1/completions")
        lps = tuple((choice.get("logprobs") or {}).get("token_logprobs") or ())
        for why in sanity.judge(sanity.Sample(prompt, choice.get("text") or "", expect, lps), cfg.min_top1_prob):
            findings.append(f"{prompt!r} -> {(choice.get('text') or '')[:60]!r}: {why}")
    check(not findings, "SRV-SANITY", server.url, "; ".join(findings))

"""How much a healthy model's logprobs move when only the kernels' arithmetic changes: SRV-GOLDEN's
band (docs/serving.md). Runs in the real-engine venv (torch), on SmolLM2-135M-Instruct, CPU:

    ~/.cache/rackgate/realengine-venv/bin/python benchmarks/golden_logprobs.py [--model DIR]

For each golden prompt (rackgate/baseline/golden_prompts.toml) the greedy 32-token answer at batch
1, one thread; then the same tokens teacher-forced (one forward pass) again at batch 1, in a batch
of all 8 prompts (left-padded: other shapes, other kernels), and with 2 threads (another reduction
order), and for the noisy-layer copy. Per condition: the largest |delta logprob| of the chosen
token and the largest KL(reference || now) over the reference's top-5, as rackgate.gates.golden
computes them, and whether the greedy argmax changed anywhere.
"""
from __future__ import annotations

import argparse
import math
import tomllib
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "rackgate" / "smollm2"


def top5(logits: torch.Tensor) -> list[dict[int, float]]:
    lp = torch.log_softmax(logits.double(), -1)
    v, i = lp.topk(5, -1)
    return [dict(zip(ii.tolist(), vv.tolist())) for vv, ii in zip(v, i)]


def forced(model, tok, prompts, answers, batch: bool):
    """Per prompt: (chosen-token logprobs, top-5 dicts, argmax ids) over the answer's positions."""
    seqs = [tok(p).input_ids + a for p, a in zip(prompts, answers)]
    out = []
    groups = [list(range(len(seqs)))] if batch else [[i] for i in range(len(seqs))]
    for g in groups:
        n = max(len(seqs[i]) for i in g)
        ids = torch.tensor([[tok.pad_token_id] * (n - len(seqs[i])) + seqs[i] for i in g])
        mask = torch.tensor([[0] * (n - len(seqs[i])) + [1] * len(seqs[i]) for i in g])
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits
        for row, i in enumerate(g):
            a = answers[i]
            pos = range(n - len(a) - 1, n - 1)  # the logits that chose each answer token
            lg = logits[row, list(pos)]
            lp = torch.log_softmax(lg.double(), -1)
            out.append(([lp[k, t].item() for k, t in enumerate(a)], top5(lg), lg.argmax(-1).tolist()))
    return out


def kl(ref: dict[int, float], now: dict[int, float]) -> float:
    floor = min(now.values())
    return max(0.0, sum(math.exp(lp) * (lp - now.get(t, floor)) for t, lp in ref.items()))


def compare(ref, now, answers) -> tuple[float, float, int]:
    dlp = max(abs(a - b) for r, n in zip(ref, now) for a, b in zip(r[0], n[0]))
    k = max(kl(a, b) for r, n in zip(ref, now) for a, b in zip(r[1], n[1]))
    flips = sum(1 for n, a in zip(now, answers) if n[2] != a)
    return dlp, k, flips


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=CACHE / "smollm2-135m-instruct")
    ap.add_argument("--noisy", type=Path, default=CACHE / "smollm2-135m-instruct-noisy-layer")
    args = ap.parse_args()
    torch.set_num_threads(1)
    prompts = [p["text"] for p in tomllib.loads((ROOT / "rackgate/baseline/golden_prompts.toml").read_text())["prompt"]]
    tok = AutoTokenizer.from_pretrained(str(args.model))
    model = AutoModelForCausalLM.from_pretrained(str(args.model)).eval()
    answers = []
    for p in prompts:
        ids = tok(p, return_tensors="pt").input_ids
        with torch.no_grad():
            g = model.generate(ids, max_new_tokens=32, do_sample=False, pad_token_id=tok.pad_token_id)
        answers.append(g[0, ids.shape[1]:].tolist())
    ref = forced(model, tok, prompts, answers, batch=False)
    rows = [("again, batch 1, 1 thread", forced(model, tok, prompts, answers, batch=False)),
            ("batch of 8, left-padded", forced(model, tok, prompts, answers, batch=True))]
    torch.set_num_threads(2)
    rows.append(("batch 1, 2 threads", forced(model, tok, prompts, answers, batch=False)))
    rows.append(("batch of 8, 2 threads", forced(model, tok, prompts, answers, batch=True)))
    torch.set_num_threads(1)
    noisy = AutoModelForCausalLM.from_pretrained(str(args.noisy)).eval()
    rows.append(("noisy-layer copy, batch 1", forced(noisy, tok, prompts, answers, batch=False)))
    print(f"{'condition':32s} {'max |dlogprob|':>15s} {'max KL top-5':>13s} {'answers whose argmax moved':>27s}")
    for name, now in rows:
        dlp, k, flips = compare(ref, now, answers)
        print(f"{name:32s} {dlp:15.2e} {k:13.2e} {flips:>21d} of {len(prompts)}")


if __name__ == "__main__":
    main()

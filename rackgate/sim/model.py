"""The sim's "model": deterministic text for known prompts, a reasoning phase for chat, and
OpenAI-style logprobs. Faults change what it generates, the way the real failures do.

Extension point: ANSWERERS is a list of functions (prompt -> continuation or None) tried in
order before the generic reply; the accuracy area adds a GSM8K answerer here.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

TOKEN_RE = re.compile(r"\s*[\w]+|\s*[^\w\s]|\s+")
BANG_LEN = 48  # how many '!' a broken decode path emits before it stops
LOOP_FRAGMENT = "Block"  # what a looping rank repeats (tenstorrent/tt-xla #5892: every DP replica but the first)
VOCAB = 163840  # Kimi's vocabulary size: what "uniform" means for logprobs

KNOWN = {
    "the capital of france is": " Paris. It is the largest city in France and home to the Eiffel Tower.",
    "1, 2, 3, 4, 5,": " 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,",
    "the opposite of hot is": " cold. The opposite of up is down.",
}
GENERIC = " The question is answered step by step below, with the result stated at the end."
REASONING = (" Let me think about this carefully. First I restate the problem in my own words, then I"
             " work through each quantity it gives, check the arithmetic twice, and only then answer.")


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


EOS = "[EOS]"  # the sim model's end-of-sequence (Kimi's special token; never printed)


def write_tokenizer(path) -> None:
    """The sim model's tokenizer as a Hugging Face tokenizer.json (what a model folder carries):
    one token per TOKEN_RE piece, as `tokenize` splits, and EOS a special token."""
    from tokenizers import Regex, Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Split
    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = Split(Regex(TOKEN_RE.pattern), behavior="isolated")
    tok.add_special_tokens([EOS])
    tok.save(str(path))


Answerer = Callable[[str], "str | None"]
ANSWERERS: list[Answerer] = []
from .gsm8k import answerer as _gsm8k_answerer  # noqa: E402 - the accuracy area's GSM8K answerer

ANSWERERS.append(_gsm8k_answerer)

NEEDLE_QUESTION = re.compile(r"\nQuestion: What is the (.+?) in the text above\?\nAnswer: The \1 is$")


def _needle(prompt: str) -> str | None:
    """A needle-in-a-haystack question (rackgate/probes/needle.py's, or any "The X is V." sentence
    asked back): the value, as a model that read the whole context answers it."""
    m = NEEDLE_QUESTION.search(prompt)
    if m is None:
        return None
    found = re.search(rf"The {re.escape(m.group(1))} is (\S+?)\.(?:\s|$)", prompt[:m.start()])
    return f" {found.group(1)}." if found else " not in the text."


ANSWERERS.append(_needle)


def _known(prompt: str) -> str | None:
    key = prompt.strip().lower()
    for k, v in KNOWN.items():
        if key.endswith(k):
            return v
    return None


def _direct(prompt: str) -> str | None:
    for answer in (*ANSWERERS, _known):
        out = answer(prompt)
        if out is not None:
            return out
    return None


def continuation(prompt: str) -> str:
    """What the model says next. Consistent like a real model: prefilling a prompt plus the
    start of its own continuation yields the rest of that continuation (SRV-CONSISTENCY)."""
    out = _direct(prompt)
    if out is not None:
        return out
    toks = tokenize(prompt)
    splits = [("".join(toks[:cut]), "".join(toks[cut:])) for cut in range(len(toks) - 1, max(0, len(toks) - 64), -1)]
    for head, tail in splits:  # the prompt continues a known answer
        base = _direct(head)
        if base is not None and base.startswith(tail):
            return base[len(tail):]
    for _head, tail in splits:  # ... or the generic reply
        if GENERIC.startswith(tail):
            return GENERIC[len(tail):]
    return GENERIC


@dataclass
class Generation:
    tokens: list[str]
    finish_reason: str  # OpenAI's word: "stop" or "length"
    logprobs: list[dict] = field(default_factory=list)  # per token: {"token", "logprob", "top"}
    engine_reason: str = ""  # the engine's own word (scheduler.py): eos, stop_sequence, max_tokens

    @property
    def text(self) -> str:
        return "".join(self.tokens)


# A healthy position's top-5 after the chosen token (logprob -0.02): the runners-up.
RUNNERS_UP = ((" the", -5.1), (",", -6.3), (" and", -7.0), (" a", -7.4), (".", -7.9))
# Fault logit-drift (one GPU's numerics slightly off, or an image's): every position's chosen
# token loses DRIFT_SHIFT of logprob to the runner-up; the text stays fluent and the first
# tokens the same, until at DRIFT_AT the near-tie flips to the runner-up (after the
# SANITY/CONSISTENCY/STREAM answers' 16 tokens: those checks never see the flip).
DRIFT_SHIFT = 0.2
DRIFT_AT = 16
# Fault batch-flip (a request its batch or a cache hit corrupted, engine/ranks.py): the token at
# FLIP_AT is the runner-up's, the rest as healthy (fluent; SANITY's expected words come before it).
FLIP_AT = 4


def _runners_up(t: str) -> list[tuple[str, float]]:
    """The four runners-up of token t (a number's first: the next number)."""
    ups = [(w, lp) for w, lp in RUNNERS_UP if w != t][:4]
    if t.strip().isdigit():
        ups = [(f" {int(t) + 1}", ups[0][1]), *ups[:3]]
    return ups


def _with_logprobs(tokens: list[str], uniform: bool, drift: bool = False) -> list[dict]:
    out = []
    for t in tokens:
        if uniform:
            lp = -math.log(VOCAB)
            top = {t: lp, " the": lp, ",": lp}
        else:
            lp = -0.02 - (DRIFT_SHIFT if drift else 0.0)
            ups = _runners_up(t)
            if drift:  # the mass the chosen token lost goes to the runner-up
                ups[0] = (ups[0][0], math.log(math.exp(ups[0][1]) + math.exp(-0.02) - math.exp(lp)))
            top = {t: lp, **dict(ups)}
        out.append({"token": t, "logprob": lp, "top": top})
    return out


def drifted(toks: list[str]) -> list[str]:
    """logit-drift's tokens: the same, but at DRIFT_AT the runner-up wins the near-tie."""
    if len(toks) <= DRIFT_AT:
        return toks
    return toks[:DRIFT_AT] + [_runners_up(toks[DRIFT_AT])[0][0]] + toks[DRIFT_AT + 1:]


def generate(prompt: str, max_tokens: int, faults: set[str], stop: list[str] | None = None) -> Generation:
    """Greedy decode of a completion prompt."""
    if "bang-tokens" in faults:
        # As on A0 without translation: HTTP 200, finish_reason "stop", every token '!'.
        toks = ["!"] * min(max_tokens, BANG_LEN)
        stop = max_tokens > BANG_LEN
        return Generation(toks, "stop" if stop else "length", _with_logprobs(toks, uniform=True),
                          "eos" if stop else "max_tokens")
    if "empty-content" in faults:  # HTTP 200, finish_reason "stop", no text at all
        return Generation([], "stop", [], "eos")
    if "fragment-loop" in faults:  # one fragment looped to max_tokens, fluent-looking tokens, HTTP 200
        toks = [LOOP_FRAGMENT] * max_tokens
        return Generation(toks, "length", _with_logprobs(toks, uniform=False), "max_tokens")
    toks = tokenize(continuation(prompt))
    if "decode-mismatch" in faults and len(toks) > 4 and max_tokens > 3:
        # The decode kernels pick another token than prefill would at step 3; the text stays
        # fluent (sanity passes), prefill of prompt + the first three tokens disagrees.
        toks = toks[:3] + [" was" if toks[3].strip() != "was" else " is"] + toks[4:]
    finish, why = "stop", "eos"
    if stop:
        text, cut = "", None
        for i, t in enumerate(toks):
            text += t
            if any(s in text for s in stop):
                cut = i
                break
        if cut is not None:
            joined = "".join(toks[:cut + 1])
            first = min((joined.find(s) for s in stop if s in joined))
            toks = tokenize(joined[:first])
            why = "stop_sequence"
    drift = "logit-drift" in faults
    if drift:
        toks = drifted(toks)
    if "context-corrupt" in faults:  # past a context length: fluent, every digit off by one (vllm #46856)
        toks = [re.sub(r"\d", lambda d: str((int(d.group(0)) + 1) % 10), t) for t in toks]
    if "batch-flip" in faults and len(toks) > FLIP_AT:  # what the batch corrupted: an early token, fluent
        toks = toks[:FLIP_AT] + [_runners_up(toks[FLIP_AT])[0][0]] + toks[FLIP_AT + 1:]
    if len(toks) > max_tokens:
        toks, finish, why = toks[:max_tokens], "length", "max_tokens"
    return Generation(toks, finish, _with_logprobs(toks, uniform=False, drift=drift), why)


@dataclass
class ChatGeneration:
    reasoning: str
    content: str
    finish_reason: str
    completion_tokens: int


def chat(messages: list[dict], max_tokens: int, faults: set[str], reasoning_tokens: int) -> ChatGeneration:
    """A reasoning model: it thinks for reasoning_tokens, then answers the last user message."""
    prompt = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(prompt, list):  # content parts
        prompt = "".join(p.get("text", "") for p in prompt if isinstance(p, dict))
    think = tokenize(REASONING)
    think = (think * (reasoning_tokens // max(1, len(think)) + 1))[:reasoning_tokens]
    if "bang-tokens" in faults:
        n = min(max_tokens, BANG_LEN)
        return ChatGeneration("", "!" * n, "stop" if max_tokens > BANG_LEN else "length", n)
    if "empty-content" in faults:
        return ChatGeneration("", "", "stop", 0)
    if "fragment-loop" in faults:
        return ChatGeneration("", LOOP_FRAGMENT * max_tokens, "length", max_tokens)
    if "reasoning-only-length" in faults:  # it never leaves the reasoning: the budget ends it
        long_think = (think * (max_tokens // max(1, len(think)) + 1))[:max_tokens]
        return ChatGeneration("".join(long_think), "", "length", max_tokens)
    if "reasoning-only-stop" in faults:  # the answer is written inside the reasoning block
        answer = tokenize(continuation(prompt).strip())[:max(0, max_tokens - len(think))]
        return ChatGeneration("".join(think) + "".join(answer), "", "stop", len(think) + len(answer))
    answer = tokenize(continuation(prompt).strip())
    if len(think) >= max_tokens:
        return ChatGeneration("".join(think[:max_tokens]), "", "length", max_tokens)
    room = max_tokens - len(think)
    finish = "stop" if len(answer) <= room else "length"
    answer = answer[:room]
    return ChatGeneration("".join(think), "".join(answer), finish, len(think) + len(answer))

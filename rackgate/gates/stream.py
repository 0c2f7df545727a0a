"""SRV-STREAM-CONSISTENCY (MLPerf's TEST06 for LLMs): the same greedy request asked streamed and
not must give the same answer, and what the server reports about an answer must agree with it.

- the stream's first token is the answer's first token, and the streamed text is the answer;
- usage.completion_tokens is the answer's token count (the served model's tokenizer): exactly,
  when the answer stopped at max_tokens; that or one more (the end-of-sequence token itself,
  which servers count and do not print) when it stopped by itself;
- at most one end-of-sequence (special token) written out, and only at the end;
- finish_reason agrees with the count: "length" exactly at max_tokens, never beyond it.
ATOM's stream ends with the engine's finish_reason, then a chunk with "stop" whatever the
reason, then a usage chunk with empty choices (serving_completion.py): the first reason counts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

LENGTH = frozenset({"length", "max_tokens"})  # OpenAI's word, ATOM main's engine word
STOP = frozenset({"stop", "eos", "stop_sequence"})


@dataclass(frozen=True)
class Answer:
    how: str  # "streamed" or "not streamed"
    text: str
    finish: str | None
    completion_tokens: int | None  # usage.completion_tokens as the server reported it (None: not reported)
    pieces: tuple[str, ...] = ()  # streamed: each chunk's text, in order


def first_token(plain: Answer, streamed: Answer) -> list[str]:
    first = next((p for p in streamed.pieces if p), "")
    if not first:
        return ["the stream carried no text" + (f" (the answer is {plain.text[:40]!r})" if plain.text else "")]
    if not plain.text.startswith(first):
        return [f"the stream's first token {first!r} is not the answer's first ({plain.text[:len(first) + 8]!r})"]
    return []


def same_text(plain: Answer, streamed: Answer) -> list[str]:
    a, b = plain.text, streamed.text
    if a == b:
        return []
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return [f"the streamed text differs from the answer at character {i}: streamed {b[max(0, i - 12):i + 28]!r}, "
            f"not streamed {a[max(0, i - 12):i + 28]!r}"]


def reported(ans: Answer, n_text: int, specials: list[tuple[int, str]], max_tokens: int) -> list[str]:
    """What the server reported about one answer against the answer itself."""
    out, ct, f = [], ans.completion_tokens, ans.finish
    if len(specials) > 1:
        out.append(f"{ans.how}: {len(specials)} end-of-sequence/special tokens written out "
                   f"({', '.join(repr(s) for _, s in specials[:4])})")
    elif specials and specials[0][0] + len(specials[0][1]) != len(ans.text.rstrip()):
        out.append(f"{ans.how}: the special token {specials[0][1]!r} in the middle of the answer "
                   f"(at character {specials[0][0]} of {len(ans.text)})")
    if f not in LENGTH | STOP:
        out.append(f"{ans.how}: finish_reason {f!r} is neither a stop nor a length")
    if ct is None:
        return out
    if ct > max_tokens:
        out.append(f"{ans.how}: usage.completion_tokens {ct} beyond max_tokens {max_tokens}")
    if f in LENGTH:
        if ct != max_tokens:
            out.append(f"{ans.how}: finish_reason {f!r} with usage.completion_tokens {ct}, not max_tokens {max_tokens}")
        if ct != n_text:
            out.append(f"{ans.how}: usage.completion_tokens {ct}, the text has {n_text} tokens")
    elif f in STOP and not n_text <= ct <= n_text + 1:
        out.append(f"{ans.how}: usage.completion_tokens {ct}, the text has {n_text} tokens "
                   f"(with its end-of-sequence {n_text + 1}; finish_reason {f!r})")
    return out


def judge(plain: Answer, streamed: Answer, max_tokens: int, count: Callable[[str], int],
          specials: Callable[[str], list[tuple[int, str]]]) -> list[str]:
    """Findings (empty: the two answers agree and every report agrees with its answer)."""
    out = first_token(plain, streamed) + same_text(plain, streamed)
    for ans in (plain, streamed):
        out += reported(ans, count(ans.text), specials(ans.text), max_tokens)
    if plain.finish in LENGTH | STOP and streamed.finish in LENGTH | STOP \
            and (plain.finish in LENGTH) != (streamed.finish in LENGTH):
        out.append(f"finish_reason {plain.finish!r} not streamed, {streamed.finish!r} streamed")
    return out

"""A server refusing rackgate's own request as wrong for it (issue 52): a 4xx whose text says the
request itself was wrong -- too long for the model, a field it does not know, a parameter it does not
support -- is a mismatch between the rack file (or the suite's defaults) and the server, never a
finding about the rack: could not observe, naming the mismatch and the key to set.

The words are the engines' own: vLLM's "This model's maximum context length is N tokens. However,
you requested M tokens" and "The prompt (total length N) is too long to fit into the model (context
length M)"; transformers serve's and FastAPI/pydantic's 422 "Extra inputs are not permitted"
(extra_forbidden); OpenAI's "Unrecognized request argument supplied: X" and "Unsupported parameter".
"""
from __future__ import annotations

import re

MISMATCH_STATUS = (400, 413, 422)
# kind -> (what the text says, the key to set)
KINDS: dict[str, tuple[re.Pattern[str], str]] = {
    "too long for the model": (re.compile(
        r"maximum context length|max[-_ ]model[-_ ]len|model takes at most|too long to fit|prompt is too long|"
        r"input is too long|too many tokens|exceeds? (?:the )?(?:model'?s? )?(?:maximum|max) (?:context|sequence|input)",
        re.I), "serving.max_model_len (the engine's --max-model-len), or the row's size key (serving.longctx_words)"),
    "a field the server does not know": (re.compile(
        r"extra (?:inputs|fields) (?:are )?not permitted|extra_forbidden|unrecognized request argument|"
        r"unknown (?:field|parameter|argument)|unexpected keyword", re.I),
        "the rack file's request fields ([serving]) for this engine, or an engine that takes the field"),
    "a parameter the server does not support": (re.compile(
        r"unsupported (?:parameter|value)|(?:parameter|argument) .{0,40}(?:is )?not supported|does not support", re.I),
        "the rack file's request settings ([serving]) for this engine"),
}


def mismatch(status: int, said: str) -> str | None:
    """What kind of mismatch a refusal names (None: it does not say the request was wrong)."""
    if status not in MISMATCH_STATUS:
        return None
    return next((kind for kind, (pattern, _) in KINDS.items() if pattern.search(said)), None)


def line(kind: str, said: str, where: str) -> str:
    """The could-not-observe line: the mismatch, what the server said, the key to set."""
    return (f"{where}: the server refused rackgate's request as {kind} ({said[:300]}): a mismatch between the rack "
            f"file and the server, not a fault of the rack -- set {KINDS[kind][1]}")

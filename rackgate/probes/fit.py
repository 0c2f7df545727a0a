"""Requests sized to what the server serves (issue 52): a long prompt that fits the model's length
(max_model_len: prompt + answer, in tokens), so a server that refuses a too-long request is never
asked one. The loads' prompts are about a token a word (rackgate/probes/load.py); FILL leaves room
for the words a tokenizer splits, the chat template and the prompt's closing line."""
from __future__ import annotations

from typing import Any

FILL = 0.9


def fitting_words(words: int, answer_tokens: int, max_model_len: int | None) -> tuple[int, bool]:
    """(the words to send, whether they were cut to fit): at most FILL of what the model's length
    leaves after the answer's tokens."""
    if not max_model_len:
        return words, False
    room = max(1, int((max_model_len - answer_tokens) * FILL))
    return (room, True) if words > room else (words, False)


def published_max_model_len(models_body: dict[str, Any], model: str) -> int | None:
    """The served name's `max_model_len` in a /v1/models answer (vLLM's model card carries it;
    ATOM's card -- id, object, created, owned_by -- does not: None)."""
    cards = models_body.get("data")
    card = next((c for c in cards if isinstance(c, dict) and c.get("id") == model), None) if isinstance(cards, list) else None
    got = card.get("max_model_len") if card else None
    return got if isinstance(got, int) and not isinstance(got, bool) and got > 0 else None

"""The prompts of the loads (SRV-LONGCTX, SRV-DEADLOCK, ACC-UNDER-LOAD's fillers), written by the
probes that load the server. The requests themselves go out through rackgate.atom.perrank, every
rank asked, with the hang rule."""
from __future__ import annotations

WORDS = ("river", "stone", "cloud", "north", "glass", "field", "seven", "amber")


def filler(words: int, seed: int) -> str:
    """Deterministic text of `words` words (about as many tokens)."""
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(words))


def prompt(words: int, seed: int) -> str:
    """A deterministic prompt of about `words` tokens."""
    return filler(words, seed) + "\nSummarize the text above."

"""The served model's tokenizer, loaded from its tokenizer.json with the `tokenizers` library
(the file every Hugging Face model folder carries; Kimi's too): counting the tokens of an answer
the way the server counts them. Where it cannot be loaded, the suite could not observe."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CouldNotObserve

if TYPE_CHECKING:
    from tokenizers import Tokenizer


@dataclass(frozen=True)
class Tokens:
    tokenizer: Tokenizer
    special: frozenset[str]  # the special tokens' text (end-of-sequence among them)
    source: str

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def specials_in(self, text: str) -> list[tuple[int, str]]:
        """(offset, token) of every special token written out in the text, in order."""
        found = []
        for s in self.special:
            i = text.find(s)
            while i >= 0:
                found.append((i, s))
                i = text.find(s, i + len(s))
        return sorted(found)


def load(setting: str) -> Tokens:
    """`setting`: a tokenizer.json, or a folder holding one (serving.tokenizer)."""
    if not setting:
        raise CouldNotObserve("serving.tokenizer is not set in the rack file (or --tokenizer PATH): the answer's "
                              "tokens cannot be counted (give the served model's tokenizer.json or its folder "
                              "on this machine)")
    path = Path(setting).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise CouldNotObserve("the `tokenizers` library is not installed: the answer's tokens cannot be counted") from None
    try:
        tok = Tokenizer.from_file(str(path))
        added = json.loads(path.read_text()).get("added_tokens") or []
    except Exception as e:  # noqa: BLE001 - a missing or foreign file is a thing the suite could not read
        raise CouldNotObserve(f"serving.tokenizer {str(path)!r} cannot be loaded as a tokenizer.json: "
                              f"{str(e).splitlines()[0][:160] if str(e) else type(e).__name__}") from None
    special = frozenset(a["content"] for a in added if isinstance(a, dict) and a.get("special") and a.get("content"))
    return Tokens(tok, special, str(path))

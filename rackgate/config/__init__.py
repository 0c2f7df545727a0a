"""The rack file (TOML): load, validate, explain mistakes in one line."""
from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from . import ssh_options
from .model import Node, Rack


class RackFileError(Exception):
    """A rack file that cannot be used; str() is one line naming the file and the problem."""


def _key_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in loc).replace(".[", "[")


def _suggest(model_cls: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """For an unknown key, the closest valid key of the table it sits in."""
    cls = model_cls
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = cls.model_fields.get(str(part))
        if field is None:
            return ""
        ann = field.annotation
        for cand in (ann, *getattr(ann, "__args__", ())):
            if isinstance(cand, type) and hasattr(cand, "model_fields"):
                cls = cand
                break
            for inner in getattr(cand, "__args__", ()):
                if isinstance(inner, type) and hasattr(inner, "model_fields"):
                    cls = inner
                    break
    close = difflib.get_close_matches(str(loc[-1]), list(cls.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def parse(text: str, source: str = "<rack>") -> Rack:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RackFileError(f"rack file {source}: not valid TOML: {e}") from None
    if isinstance(data.get("server"), dict) and "attach_url" in data["server"]:
        raise RackFileError(f"rack file {source}: 'server.attach_url' is set by --atom-url URL, not the rack file")
    try:
        rack = Rack.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = _key_path(err["loc"])
        more = f" (+{len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
        if err["type"] == "extra_forbidden":
            msg = f"unknown key '{where}'{_suggest(Rack, err['loc'])}"
        elif err["type"] == "missing":
            msg = f"missing key '{where}'"
        else:
            msg = f"'{where}': {err['msg']}" if where else err["msg"]
        raise RackFileError(f"rack file {source}: {msg}{more}") from None
    bad = ssh_options.unknown(rack.ssh.options)
    if bad:
        raise RackFileError(f"rack file {source}: 'ssh.options': {bad}")
    return rack


def load(path: str | Path) -> Rack:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise RackFileError(f"rack file {p}: cannot read it: {e.strerror}") from None
    return parse(text, str(p))


__all__ = ["Node", "Rack", "RackFileError", "load", "parse"]

"""A rack file for the chosen set, from the surveyed rack file's own values.

A real rack: the survey's rack file as written (every table and key kept), its [[nodes]] narrowed
to the chosen trays, in tray order; launch.head dropped if the head is not among them. The
simulated rack: the built rack (its nodes are the sim's node roots, kept on disk for the file),
without [sim], so the suite reaches the same trays the survey saw. The result is validated by the
suite's own loader before it is written.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any, Sequence

from pydantic import SecretStr

from .. import config as rackfile
from ..config import Rack

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: object) -> str:
    if isinstance(v, SecretStr):
        v = v.get_secret_value()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items() if x is not None) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dumps(data: dict[str, Any], prefix: str = "") -> str:
    """TOML for nested dicts, lists of dicts (arrays of tables) and scalars; None is left out."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    arrays: list[tuple[str, list[dict[str, Any]]]] = []
    for k, v in data.items():
        if v is None:
            continue
        if isinstance(v, dict) and v:
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}{_key(k)}"
        out += f"\n[{name}]\n" + dumps(v, name + ".")
    for k, items in arrays:
        name = f"{prefix}{_key(k)}"
        for item in items:
            out += f"\n[[{name}]]\n" + dumps(item, name + ".")
    return out


def narrowed(source: dict[str, Any], nodes: list[str]) -> dict[str, Any]:
    data = dict(source)
    by_name = {n["name"]: n for n in data.get("nodes", [])}
    data["nodes"] = [by_name[n] for n in nodes]
    launch = data.get("launch")
    if isinstance(launch, dict) and launch.get("head") and launch["head"] not in nodes:
        data["launch"] = {k: v for k, v in launch.items() if k != "head"}
    return data


def write_rack(out: Path, source: Path, rack: Rack, nodes: Sequence[str], simulated: bool) -> None:
    order = sorted(nodes, key=lambda n: rack.node(n).tray)
    if simulated:
        data = rack.model_dump(exclude={"sim"})
        data["server"]["api_key"] = rack.server.api_key
        data["server"].pop("attach_url", None)  # an override (--atom-url), never a rack file's key
        data["name"] = f"{rack.name}-{'-'.join(order)}"
    else:
        data = tomllib.loads(source.read_text())
        data["name"] = f"{data.get('name', 'rack')}-{'-'.join(order)}"
    text = (f"# Written by `rackgate survey --rack {source}`: the chosen set {', '.join(order)}.\n"
            + dumps(narrowed(data, order)))
    rackfile.parse(text, str(out))  # the suite must accept it as is
    out.write_text(text)

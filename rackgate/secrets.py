"""Secrets from the rack file never reach output, logs or reports (a low layer: the client and
the report both redact).

The rack loader registers every secret value (api keys, and launch env values whose names say
TOKEN / SECRET / PASSWORD / KEY / CREDENTIAL); redact() replaces them wherever text leaves the suite.
"""
from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import Rack

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL", re.I)  # as the README states
MASK = "********"
_lock = threading.Lock()
_values: set[str] = set()


def register(value: str | None) -> None:
    if value and len(value) >= 4:
        with _lock:
            _values.add(value)


def register_env(env: dict[str, str]) -> None:
    for k, v in env.items():
        if SECRET_NAME.search(k):
            register(v)


def register_rack(rack: Rack) -> None:
    if rack.server.api_key is not None:
        register(rack.server.api_key.get_secret_value())
    register_env(rack.launch.env)
    for n in rack.nodes:
        register_env(n.env)


def redact(text: str) -> str:
    with _lock:
        values = sorted(_values, key=len, reverse=True)
    for v in values:
        text = text.replace(v, MASK)
    return text

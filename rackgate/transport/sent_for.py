"""Which check a command is sent for, when it is not the test running now: a hook that reads for a
later check (rackgate/fixtures/bracket.py's snapshots, taken at a stage boundary for the row that
judges the stage) says so here, and whatever watches the commands (the self-tests' injection
plugin, selftest/inject.py) charges them to that check. Thread-local: one fan-out thread's
attribution never leaks into another's."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator

_FOR = threading.local()


@contextmanager
def sent_for(test: str) -> Iterator[None]:
    """Commands this thread sends inside are the check `test`'s (a pytest node id)."""
    old = getattr(_FOR, "test", "")
    _FOR.test = test
    try:
        yield
    finally:
        _FOR.test = old


def current() -> str:
    """The check the command being sent now is for: the innermost sent_for, else the running test."""
    return getattr(_FOR, "test", "") or os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]

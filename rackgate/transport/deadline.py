"""The one bounded wait: poll until something is true or the deadline passes."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class Deadline:
    """A point in monotonic time: `left()` seconds remain, `passed()` once it is reached."""

    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at


def wait_for(predicate: Callable[[], T], timeout: float, poll: float = 0.2) -> T | None:
    """Poll predicate() until it returns a truthy value (returned) or the deadline passes (None).
    It is always asked at least once, and once more at the deadline."""
    deadline = Deadline(timeout)
    while True:
        got = predicate()
        if got:
            return got
        if deadline.passed():
            return None
        time.sleep(min(poll, max(0.01, deadline.left())))

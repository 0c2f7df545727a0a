"""The one bounded wait (rackgate/access.py, where probes take it from), for the transport's callers."""
from __future__ import annotations

from ..access import Deadline, wait_for

__all__ = ["Deadline", "wait_for"]

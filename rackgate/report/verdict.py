"""The one way a check fails: with the catalogue row's diagnosis, on the right node and GPU."""
from __future__ import annotations

from ..catalogue import row
from ..secrets import redact


class CheckFailed(AssertionError):
    """The hardware or software under test is wrong (a FAILED verdict, not a suite error)."""

    def __init__(self, row_id: str, where: str, seen: str, means: str = "", also: tuple[str, ...] = ()):
        self.row_id, self.where, self.seen = row_id, where, redact(seen)
        # the other rows whose signature this finding is (a hang seen by the asking row: SRV-DEADLOCK);
        # the ordering records the finding there too (rackgate/fixtures/order.py failed_at)
        self.also = also
        super().__init__(message(row_id, where, self.seen, means))



def message(row_id: str, where: str, seen: str, means: str = "") -> str:
    """means: the reading of what was seen, where the row's meaning depends on it (SRV-BOOT: how
    the boot ended); the row's meaning otherwise."""
    r = row(row_id)
    return (f"{row_id} [{where}] {r.title}\n"
            f"  seen:    {seen}\n"
            f"  means:   {means + chr(10) + '           in general: ' + r.meaning if means else r.meaning}\n"
            f"  do:      {r.action}\n"
            f"  runbook: {r.runbook_link}")


def fail(row_id: str, where: str, seen: str, means: str = "", also: tuple[str, ...] = ()) -> None:
    raise CheckFailed(row_id, where, seen, means, also)


def check(ok: bool, row_id: str, where: str, seen: str) -> None:
    if not ok:
        fail(row_id, where, seen)

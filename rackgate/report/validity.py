"""How long a verdict stands: each catalogue row's `validity` (rackgate/catalogue FAMILY_VALIDITY,
a row's own `validity`) turned into an item's `judged_at` / `valid_until` in verdict.json, and the
one rule every reader applies (`rackgate status`, the metrics file, `rackgate watch`, the fleet):

    state(item, now, image)   green | failed | unobserved | expired
    due(items, now, image)    the items to judge again: failed, unobserved or expired

A row valid for a duration expires at `valid_until`. A row valid until the image changes (`image`)
expires when the run's image (the digest the containers ran, else the rack file's tag) differs
from the one its item was judged on, and in any case at `valid_until` (IMAGE_CAP after judging).
A finding never expires into green: a failed item stays failed until it is judged again; an item
with no stamps (a verdict file older than this module) is expired.

Times are RFC 3339 UTC strings with a `Z` (`2026-12-07T19:41:23Z`); `now` is a timezone-aware
datetime, handed in (tests pass their own).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..catalogue import UnknownRow, row

IMAGE = "image"
IMAGE_CAP = timedelta(days=30)   # an image-bound verdict is judged again at least this often
DEFAULT = "1h"                   # an item that names no catalogue row (a user's own test)
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
GREEN, FAILED, UNOBSERVED, EXPIRED = "green", "failed", "unobserved", "expired"
_DURATION = re.compile(r"([1-9]\d*)([smhd])")


@dataclass(frozen=True)
class Validity:
    """A row's validity: `span` after judging; `image`: also only while the image stays the same."""
    span: timedelta
    image: bool = False

    @property
    def text(self) -> str:
        return IMAGE if self.image else _short(self.span)


def parse(text: str) -> Validity:
    """`10m`, `1h`, `1d`, `30s` or `image` -> Validity; ValueError (one line) otherwise."""
    if text == IMAGE:
        return Validity(IMAGE_CAP, image=True)
    m = _DURATION.fullmatch(text.strip())
    if not m:
        raise ValueError(f"validity {text!r}: a duration such as 10m, 1h, 1d, or 'image'")
    return Validity(timedelta(seconds=int(m.group(1)) * UNITS[m.group(2)]))


def of(row_id: str) -> Validity:
    """The catalogue row's validity; DEFAULT for an item that names no row the catalogue knows."""
    try:
        return parse(row(row_id).validity) if row_id else parse(DEFAULT)
    except UnknownRow:
        return parse(DEFAULT)


def stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def when(text: str) -> datetime | None:
    """An RFC 3339 stamp -> aware datetime; None for "" or anything else."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return t if t.tzinfo is not None else None


def stamps(row_id: str, judged: datetime) -> tuple[str, str]:
    """(judged_at, valid_until) of an item of `row_id` judged at `judged`."""
    return stamp(judged), stamp(judged + of(row_id).span)


def is_expired(item: Mapping[str, Any], now: datetime, image: str = "") -> bool:
    """Past its valid_until (or unstamped), or judged on another image than `image` when its row
    is valid until the image changes."""
    until = when(str(item.get("valid_until", "")))
    if until is None or now >= until:
        return True
    return of(str(item.get("row", ""))).image and image_changed(str(item.get("image", "")), image)


def image_changed(then: str, now: str) -> bool:
    """Two images differ only when both are known and of one kind (two digests or two tags)."""
    if not then or not now:
        return False
    return then.startswith("sha256:") == now.startswith("sha256:") and then != now


def state(item: Mapping[str, Any], now: datetime, image: str = "") -> str:
    """One item: failed (a finding, expired or not), unobserved, expired (a pass no longer
    standing) or green."""
    outcome = item.get("outcome")
    if outcome == "FAIL":
        return FAILED
    if outcome != "PASS":
        return UNOBSERVED
    return EXPIRED if is_expired(item, now, image) else GREEN


def due(items: Iterable[Mapping[str, Any]], now: datetime, image: str = "",
        max_age: timedelta | None = None) -> list[str]:
    """The test ids to judge again: failed, unobserved, expired -- and, with `max_age`, anything
    judged longer ago than that (an operator's cap over the rows' validity)."""
    out = []
    for it in items:
        old = False
        if max_age is not None:
            judged = when(str(it.get("judged_at", "")))
            old = judged is None or now - judged >= max_age
        if old or state(it, now, image) != GREEN:
            out.append(str(it["test"]))
    return out


def current_image(items: Iterable[Mapping[str, Any]]) -> str:
    """The image running now, as far as the items say: the digest of the newest judged item that
    recorded one (a run that read PLAT-CONTAINER's), else the newest recorded tag ("" when none)."""
    best: dict[bool, tuple[str, str]] = {True: ("", ""), False: ("", "")}
    for it in items:
        img, at = str(it.get("image", "")), str(it.get("judged_at", ""))
        digest = img.startswith("sha256:")
        if img and at >= best[digest][0]:
            best[digest] = (at, img)
    return best[True][1] or best[False][1]


def _short(span: timedelta) -> str:
    s = int(span.total_seconds())
    for unit in ("d", "h", "m"):
        if s and s % UNITS[unit] == 0:
            return f"{s // UNITS[unit]}{unit}"
    return f"{s}s"

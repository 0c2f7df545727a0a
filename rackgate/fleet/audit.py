"""The remediation loop's audit log: one JSON object per line, appended and flushed to disk as
each action starts and ends, with its evidence (docs/fleet.md, "The audit log"). The loop reads it
back on start: an action whose `done` record is there is never run again."""
from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path
from typing import Any

LOG = "remediate.jsonl"
FORMAT = "rackgate-remediate/1"


class AuditLog:
    def __init__(self, path: Path, write: bool = True):
        self.path, self.write = path, write
        self.records: list[dict[str, Any]] = []
        self.reload()

    def reload(self) -> None:
        """Read the file again (an operator's --mark-fixed appends to it while the loop waits)."""
        path = self.path
        self.records = []
        lines = path.read_text().splitlines() if path.exists() else []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):
                    continue   # a line cut short by a crash mid-write: that action did not finish
                raise ValueError(f"{path}:{n}: not a JSON line") from None
            if not isinstance(rec, dict) or rec.get("format") != FORMAT:
                raise ValueError(f"{path}:{n}: not a rackgate remediation record")
            self.records.append(rec)

    def add(self, action: str, status: str, **evidence: Any) -> dict[str, Any]:
        now = time.time()
        rec = {"format": FORMAT, "ts": datetime.datetime.fromtimestamp(now, datetime.timezone.utc).isoformat(timespec="seconds"),
               "t": round(now, 3), "action": action, "status": status, **evidence}
        self.records.append(rec)
        if self.write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")
                f.flush()
                os.fsync(f.fileno())
        return rec

    def done(self, key: str) -> dict[str, Any] | None:
        """The last finished record of the action `key` (None: it never finished)."""
        return next((r for r in reversed(self.records) if r.get("key") == key and r["status"] == "done"), None)

    def started(self, key: str) -> bool:
        return any(r.get("key") == key and r["status"] == "start" for r in self.records)

    def count(self, action: str, since: float) -> int:
        """How many `action`s finished (or were started and cut short) since `since` (the rate cap)."""
        keys = {r.get("key") for r in self.records if r["action"] == action and r["status"] in ("start", "done")
                and r["t"] >= since}
        return len(keys)

    def marks(self, node: str, since: float) -> int:
        """Operator marks (`--mark-fixed NODE`) for a Slurm node since `since`."""
        return sum(1 for r in self.records if r["action"] == "operator-fixed" and r.get("node") == node and r["t"] >= since)

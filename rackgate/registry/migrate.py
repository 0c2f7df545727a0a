"""Old check ids in files rewritten as rows and places (rackgate/ids.py: the one migration):

    python -m rackgate.registry.migrate [FILE...]     # default: the fault matrix, rackgate/catalogue/matrix/*.toml

`rackgate/checks/test_declared.py::test_plat_shm[node2]` -> `PLAT-SHM::node2`; a "server" check's
`...::test_srv_boot` -> `SRV-BOOT::server`; another check's id without a parameter (a case's
`paths`) -> its row, `PLAT-SHM` (every place); `rackgate/checks/test_declared.py` ->
`rackgate/checks/declared.py`. Re-runnable: what is already a row or an item stays.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..ids import migrate_text
from . import server_rows

MATRIX = Path(__file__).resolve().parents[1] / "catalogue" / "matrix"


def migrate(paths: list[Path]) -> list[Path]:
    """Rewrite the files in place; the ones that changed."""
    servers, changed = server_rows(), []
    for p in paths:
        old = p.read_text()
        new = migrate_text(old, servers)
        if new != old:
            p.write_text(new)
            changed.append(p)
    return changed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a.startswith("-") for a in args):
        print("usage: python -m rackgate.registry.migrate [FILE...]  (default: rackgate/catalogue/matrix/*.toml)",
              file=sys.stderr)
        return 2
    paths = [Path(a) for a in args] or sorted(MATRIX.glob("*.toml"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"rackgate.registry.migrate: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    changed = migrate(paths)
    print(f"rackgate.registry.migrate: {len(changed)} of {len(paths)} file(s) rewritten"
          + "".join(f"\n  {p}" for p in changed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the runbook asks for when a rank hangs, taken before anything is stopped (launch mode,
nodes known): each rank process's Python stack (`py-spy dump --pid PID`, where py-spy is on the
node) and the node's last log lines. Read-only: nothing is started that outlives its bounded
command, nothing is stopped or killed."""
from __future__ import annotations

from typing import Any

from ..errors import CouldNotObserve
from ..transport import TransportError

ASKED = "__rackgate_asked__"


def hang_evidence(server: Any, ranks: list[int], table: dict[int, str]) -> tuple[list[tuple[str, str]], str]:
    """([(title, text)] to attach, one line for the finding) for the hung ranks' nodes (every
    node when the hung ranks are not known). Nothing (and '') when the suite did not launch the
    server: its processes are not the suite's to read."""
    if getattr(server, "attached", True) or not getattr(server, "launched", None):
        return [], ""
    logs = server.node_logs()
    nodes = sorted({table[r] for r in ranks if r in table}) or sorted(logs)
    out: list[tuple[str, str]] = []
    said: list[str] = []
    for node in nodes:
        log = logs.get(node)
        if log is None:
            continue
        try:
            out.append((f"last lines of {node}'s log", log.tail(30)))
            pids = {p: r for p, r in log.pids(refresh=True).items() if not ranks or r in ranks}
            res = log.host.shell('command -v py-spy; echo "$1"', ASKED, timeout=30)
            if ASKED not in res.stdout:
                raise CouldNotObserve(f"could not ask for py-spy (rc={res.rc}): {res.came_back()}")
            if not [ln for ln in res.stdout.splitlines() if ln.strip() and ln.strip() != ASKED]:
                out.append((f"py-spy on {node}", f"could not observe the ranks' Python stacks: py-spy is not installed "
                                                 f"on {node} (pip install py-spy, then py-spy dump --pid PID)"))
                said.append(f"{node}: py-spy not installed, no stacks (could not observe)")
                continue
            if not pids:
                said.append(f"{node}: no ATOM::DP<r>TP<t> process found for a stack")
            taken: list[str] = []
            failed: list[str] = []
            for pid, r in sorted(pids.items(), key=lambda x: x[1]):
                dump = log.host.run(["py-spy", "dump", "--pid", str(pid)], timeout=60)
                ok = dump.rc == 0 and bool(dump.stdout.strip())
                (taken if ok else failed).append(f"dp{r}")
                out.append((f"py-spy dump of {node}/dp{r} (pid {pid})",
                            dump.stdout if ok else f"could not observe: py-spy dump exited {dump.rc}: {dump.came_back()}"))
            if taken:
                said.append(f"{node}: py-spy stacks of {', '.join(taken)} attached")
            if failed:
                said.append(f"{node}: py-spy dump failed for {', '.join(failed)} (could not observe their stacks)")
        except (CouldNotObserve, TransportError) as e:
            out.append((f"{node}: hang evidence", f"could not observe: {e}"))
            said.append(f"{node}: could not read its log or stacks ({str(e)[:80]})")
    return out, "; ".join(said)

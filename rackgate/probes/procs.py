"""Processes and GPU users on a node: /proc/<pid>/stat, /proc/<pid>/cgroup, and the kfd process
list /sys/class/kfd/kfd/proc/<pid> (one entry per process that opened /dev/kfd).

These are the files `ps` itself reads; reading them directly keeps a process's state letter
(R S D Z I ...) and its comm exact, and a zombie shows as state Z (what ps prints `<defunct>`).

/proc/<pid>/stat: "pid (comm) state ppid ...". comm may contain spaces and parentheses, so it
runs from the first "(" to the LAST ")".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput, require_records

KFD_PROC = "/sys/class/kfd/kfd/proc"
# cgroup v2 "0::/system.slice/docker-<id>.scope", v1 "12:devices:/docker/<id>",
# containerd "cri-containerd-<id>.scope"
_CONTAINER_ID = re.compile(r"(?:docker|cri-containerd|libpod)[-/]([0-9a-f]{64})")


@dataclass(frozen=True)
class Proc:
    pid: int
    comm: str
    state: str  # one letter
    ppid: int

    @property
    def zombie(self) -> bool:
        return self.state == "Z"

    def summary(self) -> str:
        return f"pid {self.pid} ({self.comm}) state {self.state}{' <defunct>' if self.zombie else ''}"


def parse_stat(text: str) -> dict[int, Proc]:
    """Concatenated /proc/<pid>/stat contents -> {pid: Proc}. Unparsable lines are skipped
    (a process can exit between listing and reading)."""
    out = {}
    for line in text.splitlines():
        lo, hi = line.find("("), line.rfind(")")
        if lo < 0 or hi < lo:
            continue
        pid = line[:lo].strip()
        rest = line[hi + 1:].split()
        if not pid.isdecimal() or len(rest) < 2 or not rest[1].lstrip("-").isdecimal():
            continue
        out[int(pid)] = Proc(int(pid), line[lo + 1:hi], rest[0], int(rest[1]))
    return out


def container_id(cgroup_text: str | None) -> str | None:
    """The container a process runs in, from its /proc/<pid>/cgroup (None: the host)."""
    m = _CONTAINER_ID.search(cgroup_text or "")
    return m.group(1) if m else None


def parse_kfd_listing(paths: list[str]) -> list[int]:
    """Entries of /sys/class/kfd/kfd/proc -> pids."""
    return sorted(int(p.rsplit("/", 1)[-1]) for p in paths if p.rsplit("/", 1)[-1].isdecimal())


_END = "__rackgate_end__"


def processes(host: NodeAccess) -> dict[int, Proc]:
    res = host.shell('cat "$1"/[0-9]*/stat 2>/dev/null; echo "$2"', host.path("/proc"), _END, timeout=60)
    out = res.require(tool="sh", nonempty=False).stdout
    if not out.endswith(_END + "\n"):  # the listing ends with the marker when it was read whole
        raise UnrecognisedOutput(f"node {host.name}: reading /proc/*/stat did not complete: {res.came_back()}")
    procs = parse_stat(out.removesuffix(_END + "\n"))
    return require_records(procs, "processes", f"node {host.name}: /proc/*/stat", out)


def kfd_pids(host: NodeAccess) -> list[int]:
    """The pids in the kfd process list; without the list itself (amdgpu not loaded, or a node that
    does not show it) there is no GPU-user evidence: could not observe."""
    if not host.exists(KFD_PROC):
        raise CouldNotObserve(f"node {host.name}: {KFD_PROC} does not exist (is amdgpu loaded? see PLAT-DRIVER): "
                              "the processes holding the GPUs cannot be listed")
    return parse_kfd_listing(host.glob(f"{KFD_PROC}/*"))


def containers_of(host: NodeAccess, pids: list[int]) -> dict[int, str | None]:
    """pid -> container id (None: a host process or gone)."""
    raw = host.read_many([f"/proc/{p}/cgroup" for p in pids])
    return {p: container_id(raw[f"/proc/{p}/cgroup"]) for p in pids}



def parse_environ(text: str) -> dict[str, str]:
    """/proc/PID/environ (NUL- or newline-separated KEY=VALUE) -> dict."""
    out = {}
    for item in text.replace("\0", "\n").splitlines():
        k, eq, v = item.partition("=")
        if eq and k:
            out[k] = v
    return out


def environ(host: NodeAccess, pid: int) -> dict[str, str]:
    """The environment of a process `ps` on the node listed (/proc/PID/environ); could not
    observe when it cannot be read (gone, or not ours to read)."""
    res = host.run(["cat", "--", f"/proc/{int(pid)}/environ"], timeout=30)
    if not res.ok:
        raise CouldNotObserve(f"node {host.name}: cannot read /proc/{pid}/environ: {res.came_back()}")
    return parse_environ(res.stdout)


SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})


def shell_wrapper(args: str) -> bool:
    """`sh -c '...'` (any shell): a launch's wrapper, whose command line holds the server's flags but
    whose environment is not the server's (its `export`s reach only what it starts), or the server's
    own process before its `exec`."""
    words = args.split(None, 2)
    return len(words) >= 2 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1] == "-c"


def parse_serving(ps_lines: str, port: int) -> tuple[str, str] | None:
    """From `ps -eo pid=,args=` output: (pid, command line) of the process serving `port` (its
    --server-port/--port argument, either form, with --model), or None. A shell wrapper holding the
    same flags (`bash -c "cd X && python -m atom... --server-port 8000"`, the launch's own `sh -c`)
    is never the server: its environment would be read as the server's."""
    want = re.compile(rf"(?:^|\s)--(?:server-)?port(?:=|\s+){port}(?:\s|$)")
    for line in ps_lines.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit() and want.search(args) and "--model" in args and not shell_wrapper(args.strip()):
            return pid, args.strip()
    return None


def serving(host: NodeAccess, port: int) -> tuple[str, str] | None:
    """(pid, command line) of the node's process serving `port` (attach mode lints the command
    line the running server has); could not observe when ps is missing or fails."""
    return parse_serving(host.run(["ps", "-ww", "-eo", "pid=,args="], timeout=30).require(tool="ps").stdout, port)


# What the process table says of the GPU's users (PLAT-WEDGED's facts; rackgate/probes/wedge.py)
def stale_kfd(kfd: list[int], procs: dict[int, Proc]) -> list[str]:
    """kfd entries whose process is a zombie or gone: the GPU context was never torn down."""
    out = []
    for pid in kfd:
        p = procs.get(pid)
        if p is None:
            out.append(f"kfd entry {pid} (process gone)")
        elif p.zombie:
            out.append(f"kfd entry {pid} held by {p.comm} <defunct>")
    return out


def d_state_kworkers(procs: dict[int, Proc]) -> list[str]:
    return [f"{p.comm} (pid {p.pid}) in D" for p in procs.values() if p.state == "D" and p.comm.startswith("kworker")]


def defunct_engines(procs: dict[int, Proc], engine_comm: list[str]) -> list[str]:
    pats = [re.compile(r) for r in engine_comm]
    return [f"{p.comm} (pid {p.pid}) <defunct>" for p in procs.values()
            if p.zombie and any(r.search(p.comm) for r in pats)]

"""ubench07 over the node pairs: ualoe_p2p (correctness) and ualoe_bw (bandwidth).

For each pair (A, B) of a round: read the dmesg cursor on both nodes, start the exporter /
listener on A (Host.spawn: tracked, ended by PID), wait (bounded) until its output says it is
waiting for the peer, start the importer / connector on B against A's data-plane address, wait
(bounded) for both to finish, end whatever still sits (a fabric fault makes the tools just
sit), then read both outputs and the kernel log of both nodes since the cursor.

Around every round, `ps -eo pid,pgid,args` on the round's nodes finds ualoe_(p2p|bw).exe
processes. The suite ends only what it started (by PID, as a process group it created); a
leftover it did not start is reported with its `kill <pid>` command and left alone: it may be
someone else's run (the runbook's "is the rack actually free?").
"""
from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config.fabric import FabricExpect
from ..config.model import Rack
from ..errors import CouldNotObserve, ToolMissing
from ..probes import dmesg, ubench
from ..probes.pair_runs import LeftoverScan, Pair, PairRun, Side, pair_id
from ..transport import Host, Spawned, SpawnUnknown, TransportError, fanout
from ..transport.deadline import wait_for
from .pairs import rounds

LOG_DIR = "/tmp/rackgate/ubench"


@dataclass
class Ubench07:
    tool: str
    runs: dict[str, PairRun] = field(default_factory=dict)
    scans: list[LeftoverScan] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)  # our own processes we had to end

    def scans_of(self, node: str) -> list[LeftoverScan]:
        return [s for s in self.scans if s.node == node]


def _exe(cfg: FabricExpect, name: str) -> str:
    return f"{cfg.ubench_dir.rstrip('/')}/{name}" if cfg.ubench_dir else name


def commands(tool: str, cfg: FabricExpect, peer_ip: str) -> tuple[list[str], list[str]]:
    """The runbook's two commands, as argv: (exporter/listener on A, importer/connector on B)."""
    gpu = [] if cfg.ubench_gpu is None else [f"-gpu={cfg.ubench_gpu}"]
    if tool == "p2p":
        exe = _exe(cfg, "ualoe_p2p.exe")
        return ([exe, "export", f"-port={cfg.p2p_port}", *gpu],
                [exe, "import", f"-peer_ip={peer_ip}", f"-port={cfg.p2p_port}", *gpu])
    exe = _exe(cfg, "ualoe_bw.exe")
    return ([exe, "listen", f"-port={cfg.bw_port}", *gpu],
            [exe, "connect", f"-peer_ip={peer_ip}", f"-port={cfg.bw_port}", *gpu])


def require_exe(host: Host, exe: str) -> None:
    """Raise ToolMissing (naming the executable, the node and the rack-file key fabric.ubench_dir)
    when the tool is not an executable on the node: a missing build is never a fabric fault."""
    res = host.shell('if [ -x "$1" ] || command -v "$1" >/dev/null 2>&1; then echo present; '
                     'else ls -ld "$1" 2>&1; exit 127; fi', host.path(exe) if "/" in exe else exe, timeout=30)
    if res.rc == 127 or "present" not in res.stdout:
        raise ToolMissing(host.name, exe, "fabric.ubench_dir", res.came_back())


def _not_found_in(output: str, exe: str) -> bool:
    """The shell's own words when the exec failed (`exec: /x/ualoe_p2p.exe: not found`)."""
    return bool(re.search(re.escape(exe) + r".{0,4}(not found|No such file|Permission denied|cannot execute)",
                          output))


def scan(host: Host, ours: set[int], when: str, unsure: list[list[str]] | None = None,
         unended: set[int] | None = None) -> LeftoverScan:
    """The node's ubench07 processes now. `unsure`: what was started there with its reply lost;
    `unended`: our PIDs no signal could be sent to (LeftoverScan)."""
    def scanned(found: list[ubench.UbenchProc], error: str = "") -> LeftoverScan:
        return LeftoverScan(host.name, when, found, set(ours), error, list(unsure or []), set(unended or ()))
    try:
        res = host.run(["ps", "-ww", "-eo", "pid,pgid,args"], timeout=30)
    except TransportError as e:
        return scanned([], str(e))
    if not res.ok:
        return scanned([], f"ps failed: {res.stderr.strip()[:200]}")
    if "PID" not in (res.stdout.splitlines() or [""])[0]:  # ps always prints its header (and itself)
        return scanned([], f"`ps -eo pid,pgid,args` printed no process table: {res.came_back()}")
    return scanned(ubench.parse_ps(res.stdout))


@dataclass
class Started:
    """What the suite started on the nodes, shared by the p2p and the bw rounds (either may run
    first; each one's scans must know the other's processes): the PIDs it learnt, the starts whose
    reply was lost (node -> argv: the process may run under a PID never learnt), and its PIDs that
    no signal could be sent to."""
    pids: set[int] = field(default_factory=set)
    unsure: dict[str, list[list[str]]] = field(default_factory=dict)
    unended: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Runner:
    """Runs one tool (p2p or bw) over the pairs, round by round."""

    def __init__(self, tool: str, rack: Rack, hosts: dict[str, Host], started: Started | None = None):
        self.tool, self.rack, self.hosts, self.cfg = tool, rack, hosts, rack.fabric
        self.result = Ubench07(tool)
        self.started = started if started is not None else Started()
        self._lock = self.started.lock

    # --- processes ----------------------------------------------------------------------------
    def _spawn(self, host: Host, cmd: list[str], log: str) -> Spawned:
        try:
            proc = host.spawn(cmd, log)
        except SpawnUnknown as e:  # it may run, under a PID never learnt: the scans must not call it foreign
            with self._lock:
                self.started.unsure.setdefault(host.name, []).append(e.argv)
            raise
        with self._lock:
            self.started.pids.add(proc.pid)
        return proc

    def _end(self, proc: Spawned, side: Side) -> None:
        """Our own process, still sitting at its bound: end it by PID (its process group)."""
        if proc.alive():
            side.ended_by_suite = True
            try:
                proc.stop(grace_s=2)
            except TransportError:
                with self._lock:
                    self.started.unended.add(proc.pid)
                raise
            with self._lock:
                self.result.ended.append(f"{side.node}: PID {proc.pid} ({side.role}: {side.command})")
        else:
            side.exited = True
            proc.stop(grace_s=0)  # forget it

    def _output(self, host: Host, log: str) -> str:
        """The tool's log so far. A log that cannot be read is could-not-observe for the pair
        (raised): never text the judge would read as what the tool printed."""
        return host.read(log) or ""

    # --- one pair -----------------------------------------------------------------------------
    def run_pair(self, pair: Pair) -> PairRun:
        a, b = pair
        ha, hb = self.hosts[a], self.hosts[b]
        peer_ip = self.rack.node(a).data_ip
        scmd, ccmd = commands(self.tool, self.cfg, peer_ip)
        roles = ("exporter", "importer") if self.tool == "p2p" else ("listener", "connector")
        run = PairRun(self.tool, pair, Side(a, roles[0], shlex.join(scmd), scmd[0]), None)
        tag = f"{self.tool}-{a}-{b}-{int(time.time() * 1000)}"
        slog, clog = f"{LOG_DIR}/{tag}-{roles[0]}.log", f"{LOG_DIR}/{tag}-{roles[1]}.log"
        t0 = time.monotonic()
        server = client = None
        try:
            for h, cmd in ((ha, scmd), (hb, ccmd)):
                require_exe(h, cmd[0])
            cursors = dict(zip((a, b), fanout([ha, hb], dmesg.cursor)))
            server = self._spawn(ha, scmd, slog)
            run.server.pid = server.pid
            ready = re.compile(self.cfg.ubench_ready_pattern)
            # ready (True), or gave up on a server that exited ("exited"), or None at the bound
            got = wait_for(lambda: True if ready.search(self._output(ha, slog))
                           else (None if server.alive() else "exited"), self.cfg.ubench_ready_s)
            run.server.ready = got is True
            client = None
            if server.alive():
                client = self._spawn(hb, ccmd, clog)
                run.client = Side(b, roles[1], shlex.join(ccmd), ccmd[0], pid=client.pid)
                self._wait(server, client, run, lambda: self._output(hb, clog))
            else:
                run.server.exited = True
            run.server.output = self._output(ha, slog)
            if run.client is not None:
                run.client.output = self._output(hb, clog)
            self._end(server, run.server)
            for side, h in ((run.server, ha), (run.client, hb)):
                exe = side.exe if side else ""
                if side is not None and _not_found_in(side.output, exe):
                    raise ToolMissing(h.name, exe, "fabric.ubench_dir", side.output.strip()[-200:])
            for n, h in ((a, ha), (b, hb)):
                c = cursors[n]
                if isinstance(c, Exception):
                    raise c
                run.dmesg[n] = dmesg.read_dmesg(h, since_monotonic=c)
        except CouldNotObserve as e:  # unreachable, tool missing, dmesg unreadable: not a verdict
            run.error = str(e)
        except Exception as e:  # noqa: BLE001
            run.error = f"{type(e).__name__}: {e}"
        finally:
            # A run cut short (a command that failed, a node that dropped) still ends what it
            # started, before the "after" scan: a process left by our own abort is no rack finding.
            for proc in (server, client):
                if proc is not None and not proc.stopped:
                    try:
                        proc.stop(grace_s=2)
                    except TransportError as e:
                        with self._lock:
                            self.started.unended.add(proc.pid)
                        run.error = run.error or f"could not end PID {proc.pid}: {e}"
        run.seconds = time.monotonic() - t0
        return run

    def _wait(self, server: Spawned, client: Spawned, run: PairRun, client_output: Callable[[], str]) -> None:
        """The run bound counts from when the importer/connector shows it runs (its first output
        line), not from its spawn: a start-up slowed by a busy machine is not the fabric sitting.
        A tool that prints nothing is bounded from its spawn, as before."""
        limit = self.cfg.p2p_run_s if self.tool == "p2p" else self.cfg.bw_run_s
        deadline = time.monotonic() + limit
        first_exit: float | None = None
        running = False
        while time.monotonic() < deadline:
            if not running and client_output().strip():
                running = True
                deadline = max(deadline, time.monotonic() + limit)
            s_alive, c_alive = server.alive(), client.alive()
            if not s_alive and not c_alive:
                break
            if (s_alive != c_alive) and first_exit is None:
                first_exit = time.monotonic()
            # One side finished or died: the other gets a short while to finish too, then it is
            # a process sitting on a dead peer (the runbook's leftover) and is ended.
            if first_exit is not None and time.monotonic() - first_exit > min(limit, self.cfg.ubench_ready_s):
                break
            time.sleep(0.2)
        assert run.client is not None  # set with the client's spawn, before the wait
        self._end(client, run.client)

    # --- rounds -------------------------------------------------------------------------------
    def _scan(self, nodes: list[str], when: str) -> None:
        """Every node's leftover scan; a node that could not be scanned stops the round as a run
        that could not be read does (its exception, never an exception object among the scans)."""
        def one(n: str) -> LeftoverScan:
            with self._lock:
                ours, unsure, unended = set(self.started.pids), list(self.started.unsure.get(n, [])), set(
                    self.started.unended)
            return scan(self.hosts[n], ours, when, unsure, unended)
        for got in fanout(nodes, one):
            if isinstance(got, Exception):
                raise got
            self.result.scans.append(got)

    def run(self, pairs: list[Pair]) -> Ubench07:
        for i, rnd in enumerate(rounds(pairs), 1):
            nodes = sorted({n for p in rnd for n in p})
            label = f"{self.tool} round {i} ({', '.join(pair_id(p) for p in rnd)})"
            self._scan(nodes, f"before {label}")
            for run in fanout(rnd, self.run_pair):
                if isinstance(run, Exception):
                    raise run
                self.result.runs[run.id] = run
            self._scan(nodes, f"after {label}")
        return self.result


def run_tool(tool: str, rack: Rack, hosts: dict[str, Host], pairs: list[Pair],
             started: Started | None = None) -> Ubench07:
    return Runner(tool, rack, hosts, started).run(pairs)

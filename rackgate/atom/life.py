"""The session's server as one object with a context-managed life: launch or attach, the launch
claimed once per run across xdist workers, the boot verdict, the dead ranks, the evidence (logs,
stacks), stop. One session fixture holds it (rackgate/fixtures/server.py `server_life`):

    with ServerLife(rack, hosts, claim=claim, dead=lambda: failed_at(config, "SRV-ALIVE")) as life:
        ...  # life.boot, life.ready(), life.serving(), life.served(), life.logs()

- Enter: attached (`rack.server.attach_url`): the server someone else launched, never launched and
  never stopped here. Otherwise the launch is claimed first (`Claim`: under xdist exactly one
  worker of a run launches, `ClaimRefused` for the others), then launched on every node and its
  boot watched (rackgate.atom.server): a failed boot is a value (`boot`), which SRV-BOOT reports
  once; `BootFailed` when nothing could be launched.
- Exit: the launched processes stopped by PID (TERM, a bounded wait, KILL), also when the block
  ends with an exception or Ctrl-C; the claim released. Attached: nothing stopped.
- What the checks read of it: `ready()` (the booted server, or NotRun pointing at SRV-BOOT),
  `serving()` (the configured name served, or NotRun pointing at SRV-MODELS), `served()` (the view
  the declared "server" and "rank" checks receive, rackgate.atom.served.Served: its `dead_ranks()`
  is NotRun pointing at SRV-ALIVE once it FAILED on a rank, the ordering's record handed in as
  `dead`, read when asked -- no check writes into this object to tell another something), `logs()`.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import Callable

from ..config.model import Rack
from ..errors import NotRun, ServerGone
from ..probes.runs import Runs
from ..transport import Host
from . import server as atom_srv
from .client import ServerError
from .logs import NodeLog
from .served import Served
from .watch import BootVerdict

__all__ = ["Claim", "ClaimRefused", "ServerLife", "not_booted"]

LOCK = "atom-server.lock"
OWNER = "atom-server.owner"


class Claim:
    """The run's one launch, claimed with a lock no schedule can race (xdist: the server's tests are
    one group on one worker, and this makes "one launch per run" hold whatever the schedule does: a
    user's `--dist load`, a crashed worker's tests handed to another). Before a worker launches, it
    takes an exclusive flock on a file shared by the run's workers and, holding it, writes its name
    beside it. The kernel grants the lock to one process at a time, so exactly one worker ever
    launches:
    - the lock is held (another worker claimed it, launched or launching): not this worker;
    - the lock is free but a name is written (the worker that launched has ended): not again;
    - the lock is free and no name is written: this worker launches, and holds the lock while its
      server lives (the kernel releases it if the worker dies)."""

    def __init__(self, directory: Path, me: str):
        self.dir, self.me = Path(directory), me
        self._fd: int | None = None

    def owner(self) -> str:
        try:
            return (self.dir / OWNER).read_text().strip()
        except FileNotFoundError:
            return ""

    def take(self, _between: Callable[[], None] | None = None) -> str:
        """'' when this process is the run's one launcher (the lock is then held until
        release()); otherwise why not, one line. `_between` runs after the lock is taken and
        before the name is written (self-tests hold a worker there)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return (f"this run's one server is launched by another worker ({self.owner() or 'claimed, not yet named'}); "
                    f"{self.me} launches none")
        if _between:
            _between()
        earlier = self.owner()
        if earlier:
            os.close(fd)  # releases the lock
            return f"this run's one server was launched by {earlier}, which has ended; {self.me} launches none"
        (self.dir / OWNER).write_text(self.me + "\n")
        self._fd = fd
        return ""

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class ClaimRefused(Exception):
    """Another worker of this run launched (or launches) the run's one server: this one launches
    none (the suite's own schedule went wrong: its tests ERROR, naming the worker that did)."""


def not_booted(boot: BootVerdict) -> NotRun:
    return NotRun("SRV-BOOT", f"failed: the server did not boot ({boot.summary()})")


class ServerLife:
    """The session's server from launch (or attach) to stop; see the module's words.
    `hosts`: the nodes' Hosts (None attached without a rack file's nodes); `claim`: the xdist
    launch claim (None outside a worker); `dead`: where SRV-ALIVE FAILED so far (the ordering's
    record); `name_source`: where the served name came from, as the user wrote it; `launch` /
    `attach`: in place of rackgate.atom.server's (looked up when the life begins)."""

    def __init__(self, rack: Rack, hosts: dict[str, Host] | None, *, claim: Claim | None = None,
                 dead: Callable[[], list[str]] = list, name_source: str = "",
                 launch: Callable[[Rack, dict[str, Host]], atom_srv.AtomServer] | None = None,
                 attach: Callable[[Rack, dict[str, Host] | None], atom_srv.AtomServer] | None = None):
        self.rack, self.hosts, self.claim, self.name_source = rack, hosts, claim, name_source
        self._dead, self._launch, self._attach = dead, launch, attach
        self._server: atom_srv.AtomServer | None = None
        self._served: Served | None = None

    # --- the life ---------------------------------------------------------------------------
    def __enter__(self) -> ServerLife:
        if self.rack.server.attach_url:
            self._server = (self._attach or atom_srv.attach)(self.rack, self.hosts)  # never stopped by the suite
            return self
        why = self.claim.take() if self.claim else ""
        if why:
            raise ClaimRefused(why)
        try:
            # BootFailed (nothing launched) propagates; a launch that fails midway stops what it started
            self._server = (self._launch or atom_srv.launch)(self.rack, self.hosts or {})
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.stop()
        finally:
            self._release()

    def stop(self) -> None:
        """Stop what the suite launched, by PID (attached: nothing)."""
        if self._server is not None and not self._server.attached:
            self._server.stop()

    def _release(self) -> None:
        if self.claim:
            self.claim.release()

    # --- what the checks read of it -----------------------------------------------------------
    @property
    def server(self) -> atom_srv.AtomServer:
        if self._server is None:
            raise RuntimeError("the server's life has not begun (use `with ServerLife(...)`)")
        return self._server

    @property
    def attached(self) -> bool:
        return self.server.attached

    @property
    def boot(self) -> BootVerdict | None:
        """The boot watcher's verdict (None attached: the suite did not watch it boot)."""
        return self.server.boot

    @property
    def format_note(self) -> str:
        """What the boot said of the server log's format, when the log-reading checks cannot read it."""
        return self.boot.format_note if self.boot is not None and self.boot.format_note else ""

    def ready(self) -> atom_srv.AtomServer:
        """The booted server (NotRun pointing at SRV-BOOT when it did not boot)."""
        boot = self.boot
        if boot is not None and not boot.ok:
            raise not_booted(boot)
        return self.server

    def serving(self) -> atom_srv.AtomServer:
        """The booted server, serving the configured model name (NotRun pointing at SRV-MODELS
        otherwise: a check that sends requests would fail on the name alone)."""
        from ..errors import CouldNotObserve
        srv = self.ready()
        try:
            ids = srv.client.model_ids()
        except ServerError as e:
            gone = None if srv.attached else srv.gone()
            if gone is not None:   # it stopped answering because it is gone: SRV-ALIVE's finding
                raise ServerGone(self.rack.head.name, f"the launched server is gone mid-run: {gone}; its API: {e}") from None
            raise CouldNotObserve(str(e)) from None
        if srv.client.model not in ids:
            raise NotRun("SRV-MODELS", f"failed: /v1/models lists {ids}, not {srv.client.model!r} "
                                       f"(given by {self.name_source})")
        return srv

    def served(self, runs: Runs | None = None) -> Served:
        """The view a declared "server"/"rank" check receives (built once, when first asked), with the
        session's runs handed in beside it (`Served.runs`, given by the first asker: the fixture)."""
        if self._served is None:
            from .fanout import HangRule
            from .logs import rank_table
            from .perrank import PerRank, routing
            srv, cfg = self.ready(), self.rack.serving

            def make() -> PerRank:
                return PerRank(srv.client, routing(srv, rank_table(self.rack), cfg.request_timeout_s),
                               HangRule(cfg.hang_floor_s, cfg.hang_factor), cfg.request_timeout_s)
            self._served = Served(srv, self.rack, self.name_source, make, dead=self._dead, given_runs=runs)
        return self._served

    def logs(self, hosts: dict[str, Host] | None = None) -> dict[str, NodeLog]:
        """{node: NodeLog}: every node's server log, read on the node (never copied here)."""
        return self.server.node_logs(hosts)

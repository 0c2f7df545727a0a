"""The live boot watcher on the simulated rack: a fatal line ends the wait within 2 seconds of
appearing in the log (not at the boot budget), a healthy boot ends at ready, and nothing the
watcher started outlives it."""
import time
from datetime import datetime
from pathlib import Path

import pytest

from rackgate import config
from rackgate.atom import logformat, server
from rackgate.config import overrides
from rackgate.sim.rack import SHIPPED_RACK, build
from rackgate.transport import host_for

from ..test_cleanup import processes_mentioning

pytestmark = pytest.mark.suite


@pytest.fixture
def launched(tmp_path):
    made = []

    def go(*faults):
        sim = build(config.load(SHIPPED_RACK), list(faults), workdir=str(tmp_path / f"sim{len(made)}"))
        r = overrides.apply(sim.rack)  # as rackgate/fixtures/rack.py does: ATOM_LOG_MORE under rank_labels
        t0 = time.time()
        srv = server.launch(r, {n.name: host_for(n, r) for n in r.nodes})
        made.append((sim, srv))
        return srv, sim, t0
    yield go
    for sim, srv in made:
        srv.stop()
        sim.stop()


def _header_time(log: Path, lineno: int) -> float:
    """When ATOM wrote a record: its ATOM_LOG_MORE header's timestamp (to the tenth of a second)."""
    lines = log.read_text().splitlines()
    m = logformat.HEADER.match(lines[lineno - 2])
    assert m, lines[lineno - 2]
    tenth = int(lines[lineno - 2].split(" - ")[0].rsplit(".", 1)[1])
    return datetime.strptime(f"{m['date']} {m['time']}", "%Y-%m-%d %H:%M:%S").timestamp() + tenth / 10


def test_negative_kv_budget_fails_the_boot_on_the_line(launched):
    """The watcher ends the boot on the fatal line (a `fatal` verdict naming the rank), not at the
    boot budget. How soon after the line is a speed figure, not asserted here (load moves it)."""
    srv, sim, t0 = launched("kv-rack-busy")
    b = srv.boot
    assert b.kind == "fatal" and b.signature == "exceeds available KV budget", b
    assert b.who.startswith("node2/dp"), b.who  # the rank that wrote it
    assert "Per-request cache tensor (3.35GB for 8 slots) exceeds available KV budget (-" in b.line
    written = _header_time(sim.dir / "node2" / "container" / "tmp" / "rackgate" / "atom-node2.log", b.lineno)
    assert written - t0 > 2.5, "the sim delays the line by a few seconds into the boot"
    assert b.decided_at >= written - 0.1, "decided on the line, after it was written"  # header: tenths
    assert "exceeds available KV budget" in b.excerpt and ">" in b.excerpt


def test_healthy_boot_is_ready_and_leaves_no_watcher_behind(launched):
    srv, sim, _ = launched()
    assert srv.boot.ok, srv.boot
    # The head's ready line comes after its own rendezvous in its one stream, so the head is past
    # it when the verdict is given; another node's follower may still be a line behind under load.
    assert srv.rack.head.name in srv.boot.past_rendezvous, srv.boot
    assert set(srv.boot.past_rendezvous) <= {n.name for n in srv.rack.nodes}
    assert srv.client.model_ids() == [srv.rack.server.served_model]
    tails = [p for p in processes_mentioning(str(sim.dir)) if "tail" in p]
    assert tails == [], tails
    srv.stop()
    deadline = time.monotonic() + 30  # a bound, not a threshold: stop() has ended them by PID
    while processes_mentioning(str(sim.dir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(sim.dir)) == []


def test_a_coloured_fatal_line_ends_the_boot_wait(tmp_path):
    """ANSI colour inside the signature (`Memory access fault` in bold red) must not hide it: the
    watcher ends on the line, not at the boot budget."""
    from rackgate.atom.logs import NodeLog
    from rackgate.atom.watch import BootWatcher
    from rackgate.config.serving import Launch
    from rackgate.transport.host import Host
    from rackgate.transport.runners import LocalRunner

    log = tmp_path / "atom-node1.log"
    log.write_text("[aiter] load RCCL version: 2.27.7\r\n"
                   "[atom 10:00:01] Engine Core: loading weights\r\n"
                   "\x1b[1;31mMemory access fault\x1b[0m by GPU node-2 (Agent handle: 0x5a) on address 0x7f. "
                   "Reason: Page not present or supervisor privilege.\r\n")
    host = Host("node1", LocalRunner("node1"))
    cfg = Launch(boot_budget_s=60, stall_limit_s=600, liveness_poll_s=5)
    v = BootWatcher({"node1": NodeLog("node1", host, str(log), range(0, 4))}, "node1", {}, lambda: False, cfg).run()
    assert v.kind == "fatal" and v.signature == "Memory access fault by GPU", v.summary()
    assert v.lineno == 3


def _watch(tmp_path, text: str, api_ready=lambda: False, procs=None, **cfg):
    from rackgate.atom.logs import NodeLog
    from rackgate.atom.watch import BootWatcher
    from rackgate.config.serving import Launch
    from rackgate.transport.host import Host
    from rackgate.transport.runners import LocalRunner

    log = tmp_path / "atom-node1.log"
    if text is not None:
        log.write_text(text)
    host = Host("node1", LocalRunner("node1"))
    settings = {"boot_budget_s": 60, "stall_limit_s": 600, "liveness_poll_s": 0.2, "ready_poll_s": 0.1, **cfg}
    return BootWatcher({"node1": NodeLog("node1", host, str(log), range(0, 4))}, "node1", procs or {},
                       api_ready, Launch(**settings)).run(), log, host


@pytest.mark.parametrize("line, signature", [
    ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 7.00 GiB. GPU 3 has a total capacity of "
     "191.98 GiB of which 2.12 GiB is free.", "HIP/CUDA out of memory"),
    ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
     "3356, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5", "NCCL/RCCL error"),
    ("Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
     "HSA runtime error"),
    ("RuntimeError: HIP error: hipErrorNoBinaryForGpu", "HIP error"),
])
def test_library_error_lines_end_the_boot_on_the_line(tmp_path, line, signature):
    v, _, _ = _watch(tmp_path, "[atom 10:00:01] Engine Core: loading weights\n" + line + "\n")
    assert v.kind == "fatal" and v.signature == signature, v.summary()
    assert v.line == line and v.lineno == 2


def test_a_traceback_s_final_exception_line_is_fatal(tmp_path):
    v, _, _ = _watch(tmp_path, "[atom 10:00:01] Engine Core: loading weights\n"
                               "Traceback (most recent call last):\n"
                               '  File "/app/ATOM/atom/model_engine/engine_core.py", line 88, in run\n'
                               "    self.load()\n"
                               "ValueError: shard 17 of 96 is truncated\n")
    assert v.kind == "fatal" and v.signature == "Python exception: ValueError", v.summary()
    assert v.line == "ValueError: shard 17 of 96 is truncated" and v.lineno == 5


def test_seen_is_the_fatal_line_not_the_progress_bar_around_it(tmp_path):
    bar = "".join(f"Loading safetensors checkpoint shards: {i:3d}% Completed | {i}/96 [00:{i:02d}<01:00]\r"
                  for i in range(40))
    oom = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity " \
          "of 191.98 GiB of which 1.12 GiB is free."
    v, _, _ = _watch(tmp_path, bar + oom + "\r" + bar + "\n")
    assert v.kind == "fatal" and v.line == oom, v.line


def test_the_launch_wrapper_s_exit_code_ends_the_boot_with_the_last_lines(tmp_path):
    from rackgate.atom.server import WRAPPER
    from rackgate.transport.host import Host
    from rackgate.transport.runners import LocalRunner

    log = tmp_path / "atom-node1.log"
    proc = Host("node1", LocalRunner("node1")).spawn(
        ["sh", "-c", WRAPPER, "rackgate-launch", "echo 'usage: serve [-h] [--port PORT]'; exit 2"], str(log))
    v, _, _ = _watch(tmp_path, None, procs={"node1": proc})
    assert v.kind == "died" and v.exit_code == 2, v.summary()
    assert "exited with code 2" in v.detail and "usage: serve" in v.detail and "no fatal line seen" in v.detail


def test_no_fatal_line_and_no_api_is_the_budget_reading(tmp_path):
    v, _, _ = _watch(tmp_path, "INFO:     Started server process [4242]\nINFO:     Waiting for application startup.\n",
                     boot_budget_s=1.0)
    assert v.kind == "budget", v.summary()
    assert "not ready within the budget" in v.detail and "no fatal line seen" in v.detail
    assert "Waiting for application startup." in v.detail
    assert v.log_format == "unrecognised" and "log format not recognised" in v.format_note


def test_ready_is_the_api_s_evidence_without_atom_s_ready_line(tmp_path):
    v, _, _ = _watch(tmp_path, "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\n",
                     api_ready=lambda: True)
    assert v.kind == "ready" and v.ready_line_s is None, v.summary()


def test_atom_s_ready_line_is_recorded_when_seen(tmp_path):
    seen = []
    v, _, _ = _watch(tmp_path, "[atom 10:00:09] Server started successfully and ready to accept requests\n",
                     api_ready=lambda: len(seen) > 2 or seen.append(1) or False)
    assert v.kind == "ready" and v.ready_line_s is not None and v.log_format == "atom", v


def test_the_pinned_alloc_warning_of_a_healthy_boot_is_evidence_not_a_failure(tmp_path):
    """ATOM's expert_staging WARNING carries torch's `HIP error: out of memory` and its hint block
    and ends `); using unpinned.`: the boot is ready, the record is noted."""
    from .test_records import MORE, PINNED
    ready_after = []
    v, _, _ = _watch(tmp_path, "\n".join([MORE.format(level="WARNING"), *PINNED,
                                          "[atom 10:00:09] Server started successfully and ready to accept requests"])
                     + "\n", api_ready=lambda: len(ready_after) > 8 or ready_after.append(1) or False)
    assert v.kind == "ready", v.summary()
    assert len(v.noted) == 1 and "'HIP error' in a WARNING record which says 'using unpinned'" in v.noted[0], v.noted


@pytest.mark.parametrize("command, said", [
    ("echo 'loading'; exit 137", "exited with code 137 (128+9, SIGKILL: killed"),
    ("echo 'loading'; kill -SEGV $$", "exited with code 139 (128+11, SIGSEGV: crashed"),
    # the command takes its whole process group with it, the wrapper included: no status written
    ("echo 'loading'; kill -KILL 0", "ended without the launch wrapper writing its exit status"),
])
def test_how_the_launch_command_ended_is_read_as_what_it_means(tmp_path, command, said):
    from rackgate.atom.server import WRAPPER
    from rackgate.transport.host import Host
    from rackgate.transport.runners import LocalRunner

    log = tmp_path / "atom-node1.log"
    proc = Host("node1", LocalRunner("node1")).spawn(["sh", "-c", WRAPPER, "rackgate-launch", command], str(log))
    v, _, _ = _watch(tmp_path, None, procs={"node1": proc})
    assert v.kind == "died" and said in v.detail, v.detail
    assert "loading" in v.detail


def test_a_healthy_boot_whose_ranks_fall_back_to_unpinned_memory_is_ready(launched):
    """The sim's node2 ranks log ATOM's pinned-alloc WARNING (HIP error text inside) and boot."""
    srv, sim, _ = launched("pinned-fallback")
    assert srv.boot.ok, srv.boot.summary()
    assert srv.boot.noted and all(n.startswith("node2: ") and "using unpinned" in n
                                            for n in srv.boot.noted), srv.boot.noted

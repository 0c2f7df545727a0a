"""The transport: commands are values, every wait is bounded, processes are ended by PID."""
import os
import time

import pytest

from rackgate.transport import REGISTRY, CommandTimeout, Host, LocalRunner, SshRunner, TransportError

pytestmark = pytest.mark.suite


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def wait_until(cond, bound_s: float = 30.0) -> bool:
    """Poll cond until it holds or bound_s passes (a bound on a wait, not a speed claim)."""
    deadline = time.monotonic() + bound_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def host(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "thing").write_text("42\n")
    return Host("n1", LocalRunner("n1", {"RG_TEST": "yes"}), sysroot=str(tmp_path))


def test_run_returns_a_value_on_failure(host):
    res = host.shell("echo out; echo err >&2; exit 3")
    assert (res.rc, res.stdout, res.stderr, res.ok) == (3, "out\n", "err\n", False)
    assert host.shell("echo $RG_TEST").stdout == "yes\n"


def test_sysroot_read_and_missing(host):
    assert host.read("/etc/thing") == "42\n"
    assert host.read("/etc/none") is None
    assert host.read_many(["/etc/thing", "/etc/none"]) == {"/etc/thing": "42\n", "/etc/none": None}
    assert host.glob("/etc/th*") == ["/etc/thing"]


@pytest.mark.timeout(120)  # a hang fails here; how fast is not the claim
def test_timeout_ends_the_whole_process_group(host, tmp_path):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(CommandTimeout) as e:
        host.shell('sleep 300 & echo $! > "$1"; echo started; wait', str(pidfile), timeout=1)
    assert "started" in e.value.stdout and "within 1s" in str(e.value)
    assert wait_until(lambda: not alive(int(pidfile.read_text()))), "the group's background child survived"


def test_spawn_and_stop_by_pid(host, tmp_path):
    proc = host.spawn(["sleep", "300"], "/logs/sleep.log")
    assert proc.alive() and alive(proc.pid)
    assert (tmp_path / "logs" / "sleep.log").exists()
    assert proc in REGISTRY.spawned()
    proc.stop(grace_s=2)
    assert not alive(proc.pid)
    assert proc not in REGISTRY.spawned()


def test_stop_escalates_to_kill(host, tmp_path):
    # the shell says when it ignores TERM (an event: a timer raced its start under load), and
    # SIGKILL is delivered asynchronously: the process is gone soon after stop(), not at its return
    log = tmp_path / "logs" / "stubborn.log"
    proc = host.spawn(["sh", "-c", "trap '' TERM; echo armed; while :; do sleep 0.1; done"], "/logs/stubborn.log")
    assert wait_until(lambda: log.exists() and "armed" in log.read_text())
    host.run(["kill", "-TERM", "--", f"-{proc.pid}"])
    assert alive(proc.pid), "the process ignores TERM"
    proc.stop(grace_s=1)
    assert wait_until(lambda: not alive(proc.pid)), "stop() did not end a process that ignores TERM"


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if d.isdigit() and int(rest[2]) == pgid and rest[0] != "Z":
            found.append(int(d))
    return found


def test_stop_ends_the_group_not_only_its_wrapper(host, tmp_path):
    """A launch runs under shells (rackgate.atom.server WRAPPER, and the rack file's own command line,
    e.g. `start-server & wait`): a shell in `wait` ends at TERM at once, the server it started may shut
    down for seconds or ignore TERM. stop() returns only when the whole group is gone: the spawned
    PID alone said "gone" while a launched transformers serve still ran (wave 12's quiet run), and a
    server that ignores TERM was never KILLed."""
    log = tmp_path / "logs" / "wrapped.log"
    # the wrapper ends at TERM (as a shell does whose TERM is not ignored), the server ignores it
    proc = host.spawn(["sh", "-c", "trap 'exit 0' TERM; sh -c \"trap '' TERM; echo armed; while :; do sleep 0.1; done\" & wait"],
                      "/logs/wrapped.log")
    assert wait_until(lambda: log.exists() and "armed" in log.read_text())
    assert len(_group(proc.pid)) >= 2, "the wrapper and the server it started"
    try:
        # a grace longer than this machine's init takes to reap the ended wrapper (~2 s): the wrapper's
        # PID alone then reads "gone" well before the KILL is due
        proc.stop(grace_s=8)
        assert _group(proc.pid) == [], "stop() returned while a process of the group it started still ran"
    finally:
        if _group(proc.pid):
            os.killpg(proc.pid, 9)  # ours: started by this test


def test_registry_stop_all_ends_everything(host):
    procs = [host.spawn(["sleep", "300"], f"/logs/s{i}.log") for i in range(3)]
    REGISTRY.stop_all()
    assert not any(alive(p.pid) for p in procs)


@pytest.mark.timeout(120)  # a hang fails here; how fast is not the claim
def test_ssh_unreachable_is_a_transport_error_not_a_hang():
    # The system OpenSSH client against a closed loopback port: refused at once.
    runner = SshRunner("ghost", "root@127.0.0.1", connect_timeout_s=3, options=["Port=1"])
    with pytest.raises(TransportError) as e:
        runner.run(["true"], timeout=5)
    assert str(e.value).startswith("node ghost: unreachable over ssh (root@127.0.0.1):")
    assert "\n" not in str(e.value)


def test_ssh_command_line_uses_batchmode_and_control_master():
    r = SshRunner("n", "root@h", connect_timeout_s=7, options=["ProxyJump=jump"], control_dir="/tmp/cm")
    opts = " ".join(r.opts)
    # commands only use a shared connection; the master is started detached from their pipes
    for want in ("BatchMode=yes", "ConnectTimeout=7", "ControlMaster=no", "ControlPath=/tmp/cm/%C",
                 "ProxyJump=jump"):
        assert want in opts
    assert "StrictHostKeyChecking" not in opts  # host-key checking stays as the user's config has it


def test_spawn_env_extends_variables_like_the_runbook(host, tmp_path):
    # `export LD_LIBRARY_PATH=/app/rjprefix/lib:$LD_LIBRARY_PATH` extends the node's own value;
    # quotes and backticks in values stay literal.
    proc = host.spawn(["sh", "-c", 'echo "$LD_LIBRARY_PATH|$Q"'], "/logs/env.log",
                      {"LD_LIBRARY_PATH": "/app/rjprefix/lib:$RG_TEST", "Q": 'a "q" `x` \\z'})
    log = tmp_path / "logs" / "env.log"
    assert wait_until(lambda: log.exists() and log.read_text().endswith("\n"))
    proc.stop(grace_s=1)
    assert log.read_text() == '/app/rjprefix/lib:yes|a "q" `x` \\z\n'


def test_a_literal_env_starts_the_command_itself_with_the_same_answers(tmp_path, monkeypatch):
    """A local node whose env values are literal text (the sim's PATH, PYTHONPATH) starts the command
    itself with that environment, not under an exporting `sh` (one process fewer per command): the
    values reach it, its PATH finds the node's tools, a tool missing there is rc 127 naming it; a
    value the shell must expand still goes through the shell."""
    from rackgate.transport import runners
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nodetool").write_text('#!/bin/sh\nprintf "%s|%s\\n" "$RG_LIT" "$RG_TWO"\n')
    (bindir / "nodetool").chmod(0o755)
    started: list[list[str]] = []
    real = runners.run_bounded

    def seen(argv, timeout, **kw):
        started.append(list(argv))
        return real(argv, timeout, **kw)
    monkeypatch.setattr(runners, "run_bounded", seen)
    node = Host("n", LocalRunner("n", {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "RG_LIT": 'a "q" b',
                                        "RG_TWO": "two"}))
    res = node.run(["nodetool"], timeout=30)
    assert (res.rc, res.stdout, started[-1]) == (0, 'a "q" b|two\n', ["nodetool"]), (res, started)
    missing = node.run(["no-such-tool-here"], timeout=30)
    assert (missing.rc, missing.stderr) == (127, "no-such-tool-here: not found\n"), missing
    expands = Host("n", LocalRunner("n", {"PATH": f"{bindir}{os.pathsep}$PATH", "RG_LIT": "x", "RG_TWO": "$RG_LIT-y"}))
    res = expands.run(["nodetool"], timeout=30)
    assert (res.rc, res.stdout, started[-1][:2]) == (0, "x|x-y\n", ["sh", "-c"]), (res, started)

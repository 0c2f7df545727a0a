"""No process the suite started outlives it: after a run, after a failing test, after Ctrl-C."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .harness import REPO, run_suite, user_env

pytestmark = pytest.mark.system


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment mentions text (the run's sim directory:
    every sim node process carries RACKGATE_SIM_NODE=<dir>/nodeN)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            blob = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in blob and state != "Z":
            found.append(f"{proc.name} {(proc / 'cmdline').read_bytes()[:120]!r}")
    return found


def test_nothing_left_after_a_failing_gate_run(tmp_path):
    simdir = tmp_path / "sim"
    run = run_suite(tmp_path, "-m", "gate or fabric", "--sim-fault", "bang-tokens", "--sim-fault", "slow-training",
                    env={"RACKGATE_SIM_WORKDIR": str(simdir)})
    assert run.ids("failed"), run.stdout[-2000:]
    assert (simdir / "node1" / "container" / "tmp" / "rackgate" / "atom-node1.log").exists()  # the server really ran
    assert processes_mentioning(str(simdir)) == []
    assert processes_mentioning(f"--rack-dir {simdir}") == []


HOLD_PLUGIN = """
import os, pathlib, time

MARK = pathlib.Path(os.environ["RG_HOLD_MARK"])


def pytest_runtest_call(item):
    # the first check that uses the running server holds the run here until Ctrl-C (bounded)
    if {"serving", "served"} & set(item.fixturenames) and not MARK.exists():
        MARK.write_text(item.nodeid)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            time.sleep(0.1)
"""


def wait_for(cond, bound_s: float, proc=None) -> bool:
    """Poll cond until it holds, the process ends, or bound_s passes (a bound, not a threshold)."""
    deadline = time.monotonic() + bound_s
    while not cond():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _as_from_a_shell() -> None:
    """In the child before exec: Ctrl-C as a user's shell leaves it (its default), whatever an
    earlier self-test or library in this long-lived process set for SIGINT (an ignored SIGINT is
    inherited across exec, and Python then never raises KeyboardInterrupt; so is a blocked one, as
    multiprocessing's resource tracker leaves it while it starts)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_nothing_left_after_ctrl_c(tmp_path):
    """Ctrl-C while a check is running against the up server: a plugin holds that check until the
    interrupt, so the run is provably still running when it comes (an event, not a timer)."""
    simdir = tmp_path / "sim"
    mark = tmp_path / "holding"
    (tmp_path / "rg_hold_plugin.py").write_text(HOLD_PLUGIN)
    env = {**user_env(), "RACKGATE_SIM_WORKDIR": str(simdir), "RG_HOLD_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    # A stuck link, and the fabric's link checks (FAB-ACCEL-ID, FAB-TRAINING) in the run as well.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "rg_hold_plugin", "-q", "-o", "addopts=",
         "SRV-ALIVE", "FAB-ACCEL-ID",
         "FAB-TRAINING", "--sim-fault", "stuck-link"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        preexec_fn=_as_from_a_shell)
    try:
        assert wait_for(mark.exists, 600, proc), proc.stdout.read() if proc.poll() is not None else "no hold"
        assert proc.poll() is None
        assert processes_mentioning(str(simdir)), "the server should be running before the interrupt"
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the suite's SIGTERM handler ends the sim it started, then it dies
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            raise AssertionError(f"the interrupted run was still running 120 s after Ctrl-C (SIGINT here: "
                                 f"{signal.getsignal(signal.SIGINT)}, blocked: "
                                 f"{signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())}); its output:\n{out[-3000:]}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "KeyboardInterrupt" in out or "Interrupted" in out or "interrupted" in out, out[-2000:]
    assert wait_for(lambda: processes_mentioning(str(simdir)) == [], 30), \
        f"{processes_mentioning(str(simdir))}\n{out[-2000:]}"


def test_sim_serve_cleans_up_on_sigterm(tmp_path):
    """`python -m rackgate.sim serve` stopped with SIGTERM (to its own PID, as a service manager
    or a self-test's teardown sends it) stops the server it started and removes its sim directory."""
    import re

    env = {**user_env(), "TMPDIR": str(tmp_path)}  # its sim directory is made here
    proc = subprocess.Popen([sys.executable, "-m", "rackgate.sim", "serve"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        line = proc.stdout.readline()  # printed once built, before the server starts
        assert re.match(r"serving http://\S+ ", line), line
        simdirs = [p for p in tmp_path.glob("rackgate-sim-*") if not p.name.startswith("rackgate-sim-gsm8k")]
        assert len(simdirs) == 1, simdirs
        os.kill(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM, out[-2000:]
    assert not simdirs[0].exists(), sorted(p.name for p in simdirs[0].rglob("*"))[:20]
    assert processes_mentioning(str(simdirs[0])) == []


POINT_PLUGIN = """
import os, pathlib, time

MARK = pathlib.Path(os.environ["RG_HOLD_MARK"])
AT = os.environ["RG_HOLD_AT"]


def _hold(where):
    # hold the run here until Ctrl-C (bounded): the interrupt provably comes at this point
    if MARK.exists():
        return
    MARK.write_text(where)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.1)


def pytest_collection_finish(session):
    if AT == "collection":
        _hold("collection")


def pytest_configure(config):
    if AT == "boot":
        from rackgate.atom import server
        watch = server.AtomServer.watch_boot

        def held(self):
            _hold("boot")  # the server is launched on every node, not yet up
            return watch(self)
        server.AtomServer.watch_boot = held


def pytest_runtest_call(item):
    if AT == "check" and {"serving", "served"} & set(item.fixturenames):  # a check asking the up server
        _hold(item.nodeid)


def pytest_runtest_teardown(item, nextitem):
    if AT == "teardown" and nextitem is None:
        _hold("teardown")  # before the session's fixtures (the server, the sim) are torn down
"""


def _tree(root: int) -> set[tuple[int, str]]:
    """(pid, start time) of root and every descendant now (a PID reused later is not ours)."""
    kids: dict[int, list[int]] = {}
    start: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(fields[1]), []).append(int(proc.name))
            start[int(proc.name)] = fields[19]
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in start:
            out.add((pid, start[pid]))
        todo += kids.get(pid, [])
    return out


def _alive(pid_start: tuple[int, str]) -> bool:
    try:
        fields = Path(f"/proc/{pid_start[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == pid_start[1] and fields[0] != "Z"


@pytest.fixture(scope="module")
def sshd_server(tmp_path_factory):
    from .sshd import sshd
    with sshd(tmp_path_factory.mktemp("sshd")) as s:
        yield s


@pytest.mark.parametrize("point", ["collection", "boot", "check", "teardown"])
def test_ctrl_c_at_any_point_over_ssh_leaves_nothing(point, tmp_path, sshd_server):
    """Ctrl-C during collection, the server's boot, a check, or teardown of a sim run over real ssh:
    the run ends, and no process of its PID tree, sim process, ControlMaster (its socket),
    /tmp/rg-ssh-* directory, port claim or temporary directory is left behind."""
    from .test_ssh import SLICE, _ssh_rack
    simdir, mark, claims = tmp_path / "sim", tmp_path / "holding", tmp_path / "claims"
    tmp = Path(tempfile.mkdtemp(prefix="rgc", dir="/tmp"))  # short: ControlPath must fit a socket name
    (tmp_path / "rg_point_plugin.py").write_text(POINT_PLUGIN)
    env = {**user_env(), "RACKGATE_SIM_WORKDIR": str(simdir), "RG_HOLD_MARK": str(mark), "RG_HOLD_AT": point,
           "TMPDIR": str(tmp), "RACKGATE_PORT_CLAIMS": str(claims),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "rg_point_plugin", "-q", "-o", "addopts=",
         "-p", "no:xdist", "--rack", _ssh_rack(tmp_path, sshd_server), *SLICE],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        preexec_fn=_as_from_a_shell)
    try:
        assert wait_for(mark.exists, 600, proc), proc.stdout.read() if proc.poll() is not None else "no hold"
        tree = _tree(proc.pid)
        if point in ("boot", "check"):
            assert processes_mentioning(str(simdir)), "the server should be running before the interrupt"
            assert list(tmp.glob("rg-ssh-*")), "the run should be using ssh before the interrupt"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    try:
        assert "nterrupt" in out, out[-2000:]
        assert wait_for(lambda: not any(_alive(p) for p in tree), 30), [p for p in tree if _alive(p)]
        assert processes_mentioning(str(simdir)) == [], out[-2000:]
        assert processes_mentioning(str(tmp)) == [], "a ControlMaster (or another child) outlived the run"
        assert list(tmp.iterdir()) == [], f"left in the run's TMPDIR: {list(tmp.iterdir())}"
        assert sorted(p.name for p in claims.iterdir()) in ([], [".lock"]) if claims.exists() else True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.timeout(120)
def test_the_sims_nodes_go_off_with_it(tmp_path):
    """A process left on a sim node -- a start whose reply the suite never got, which the suite
    rightly never kills (docs/fabric.md) -- ends when the sim stops, as its node would power off.
    Before: every fabric tool-failure run that lost a spawn's reply left a ubench07 tool running."""
    from rackgate import config
    from rackgate.sim.rack import SHIPPED_RACK, build, override
    sim = build(override(config.load(SHIPPED_RACK), "sim.nodes", 2), workdir=str(tmp_path / "sim"))
    try:
        env = {**os.environ, "RACKGATE_SIM_NODE": str(sim.dir / "node1")}
        out = subprocess.run(["sh", "-c", "setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!"], env=env,
                             capture_output=True, text=True, timeout=30).stdout
        pid = int(out.split()[-1])
        assert processes_mentioning(str(sim.dir / "node1")), "the orphan did not start"
    finally:
        sim.stop()
    assert not processes_mentioning(str(sim.dir) + "/"), f"PID {pid} outlived the sim"

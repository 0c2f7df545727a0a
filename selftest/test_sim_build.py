"""The sim's built nodes: their executables import no typed state, a failed build leaves nothing
(starts processes; the sim's data alone: test_sim_data.py)."""
import os
import tempfile

import pytest

pytestmark = pytest.mark.suite


def test_node_executables_import_no_typed_state():
    """Every probe of the sim starts one of these executables (thousands per self-test run): they
    read state.json through rackgate.sim.nodeview, never the typed build side (dataclasses)."""
    import subprocess
    import sys

    from rackgate.sim.render import PKG_ROOT, tools

    mods = [f"rackgate.sim.tools.{m}" for m in tools().values()]
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m in ('dataclasses', 'rackgate.sim.state', 'pydantic')))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": PKG_ROOT, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"the node executables import {out.stdout.strip()}"


def test_a_failed_build_leaves_no_directory(monkeypatch):
    """An unknown fault (or no free ports) stops a build after its directory was made: the
    directory goes too (self-test runs left hundreds of empty rackgate-sim-* in /tmp). Only the
    directory this build made is watched: what else the system temp dir holds (the sim's GSM8K
    set, made on first use; other runs' directories) is not this build's, whether there or not."""
    import threading

    from rackgate.config import load
    from rackgate.sim import rack as sim_rack
    made, me, real = [], threading.get_ident(), tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        d = real(*args, **kwargs)
        if threading.get_ident() == me:
            made.append(d)
        return d

    monkeypatch.setattr(sim_rack.tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(Exception, match="no-such-fault"):
        sim_rack.build(load(sim_rack.SHIPPED_RACK), ["no-such-fault"])
    assert made and all("rackgate-sim-" in d for d in made), made
    assert [d for d in made if os.path.exists(d)] == []


def test_reading_executables_import_neither_json_nor_re_nor_pathlib():
    """lsmod, dmesg, uptime and ps start hundreds of times a suite run: json, re and pathlib were
    two thirds of each start-up; nodeview reads state.json through json's C scanner alone."""
    import subprocess
    import sys

    from rackgate.sim.render import PKG_ROOT
    code = ("import sys\n"
            "for m in ('lsmod', 'dmesg', 'uptime', 'ps'): __import__('rackgate.sim.tools.' + m)\n"
            "print(sorted(m for m in sys.modules if m in ('json', 're', 'pathlib')))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": PKG_ROOT, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"the reading executables import {out.stdout.strip()}"


@pytest.fixture(scope="module")
def built():
    from rackgate.config import load
    from rackgate.sim import rack as sim_rack
    sim = sim_rack.build(load(sim_rack.SHIPPED_RACK))
    try:
        yield sim
    finally:
        sim.stop()


def _on_node(sim, *argv: str):
    import subprocess
    node = sim.rack.nodes[0]
    env = {**os.environ, **{k: os.path.expandvars(v) for k, v in node.env.items()}}
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, env=env)


def test_docker_exec_is_answered_by_the_node_launcher_alone(built, tmp_path):
    """`docker exec` (a hundred a suite run) starts no interpreter: the node's launcher holds the
    node's containers. With state.json unreadable, the Python half (`docker ps`) fails, exec does
    not, and answers as real docker does."""
    state = built.dir / "state.json"
    kept = tmp_path / "state.json"
    kept.write_bytes(state.read_bytes())
    state.write_text("not json")
    try:
        assert _on_node(built, "docker", "ps").returncode != 0
        res = _on_node(built, "docker", "exec", "-i", "-e", "RG_X=1", built.rack.container, "sh", "-c",
                       'echo "$RG_X $ROCM_PATH $PYTHONPATH"; exit 3')
        croot = built.rack.nodes[0].container_sysroot
        assert res.returncode == 3, res.stderr
        assert res.stdout.split()[:2] == ["1", "/opt/rocm"] and res.stdout.split()[2].startswith(f"{croot}/app/ATOM:")
        res = _on_node(built, "docker", "exec", "no-such", "true")
        assert (res.returncode, res.stderr) == (1, "Error response from daemon: No such container: no-such\n")
        res = _on_node(built, "docker", "exec", built.rack.container, "no-such-program")
        assert (res.returncode, res.stderr) == (126, "") and 'exec: "no-such-program": executable file not found' in res.stdout
    finally:
        state.write_bytes(kept.read_bytes())


def test_the_containers_python_has_its_own_prefix(built):
    """The container's python3 is this machine's interpreter with a prefix of its own, as an
    image's is: the ATOM tree from the container's PYTHONPATH, none of the machine's
    site-packages (whose .pth files were most of its start-up)."""
    res = _on_node(built, "docker", "exec", built.rack.container, "python3", "-c",
                   "import sys, atom; print(sys.prefix != sys.base_prefix); "
                   "print([p for p in sys.path if 'site-packages' in p]); print(atom.__file__)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "True", "[]", f"{built.rack.nodes[0].container_sysroot}{built.rack.atom_path}/atom/__init__.py"]


def test_dmesg_is_answered_by_the_node_launcher_alone(built, tmp_path):
    """`dmesg` (read around every ubench07 round, ~40 a fabric run) starts no interpreter: the node's
    launcher prints the ring buffer's text, which every change of the node's lines rewrites. It
    prints what the Python tool prints from state.json, before and after the fabric's kernel_log
    appends lines; with state.json unreadable the launcher still answers, an option still goes to
    the Python tool (and fails there)."""
    import sys

    from rackgate.sim import fabwire
    node = built.rack.nodes[0]

    def python_dmesg() -> str:
        res = _on_node(built, sys.executable, "-S", "-m", "rackgate.sim.tools.dmesg")
        assert res.returncode == 0, res.stderr
        return res.stdout

    before = _on_node(built, "dmesg")
    assert before.returncode == 0 and before.stdout == python_dmesg() and before.stdout.startswith("[    0.000000] Linux")
    fabwire.kernel_log(built.dir, node.name, ["ifoe: first line", "ifoe: second line"])
    after = _on_node(built, "dmesg")
    assert after.stdout == python_dmesg() and after.stdout.startswith(before.stdout)
    assert [line.partition("] ")[2] for line in after.stdout.splitlines()[-2:]] == ["ifoe: first line", "ifoe: second line"]
    state = built.dir / "state.json"
    kept = tmp_path / "state.json"
    kept.write_bytes(state.read_bytes())
    state.write_text("not json")
    try:
        assert _on_node(built, "dmesg").stdout == after.stdout
        assert _on_node(built, "dmesg", "--time-format", "iso").returncode != 0
    finally:
        state.write_bytes(kept.read_bytes())


def test_ps_is_answered_by_the_node_launcher_alone(built):
    """The product's `ps -eo FIELDS` (FAB-LEFTOVER's scan and ubench07's own around every round) starts
    no interpreter: the system's ps prints the node's processes (found by their environment), the
    same processes the Python tool lists, in procps' own layout; another form still goes to the tool."""
    import subprocess
    import sys
    node, other = built.rack.nodes[0], built.rack.nodes[1]

    def listed(*argv: str) -> dict[int, str]:
        res = _on_node(built, *argv)
        assert res.returncode == 0, res.stderr
        rows = [line.split(None, 2) for line in res.stdout.splitlines()]
        return {int(r[0]): r[2] for r in rows if r[0].isdecimal()  # the lister itself, either one, aside
                and "rackgate.sim.tools.ps" not in r[2] and os.path.basename(r[2].split()[0]) != "ps"}

    env = {**os.environ, **{k: os.path.expandvars(v) for k, v in node.env.items()}}
    mine = subprocess.Popen(["sleep", "61"], env=env, start_new_session=True)
    theirs = subprocess.Popen(["sleep", "62"], env={**os.environ, **{k: os.path.expandvars(v) for k, v in other.env.items()}})
    try:
        fast = listed("ps", "-ww", "-eo", "pid,pgid,args")
        slow = listed(sys.executable, "-S", "-m", "rackgate.sim.tools.ps", "-ww", "-eo", "pid,pgid,args")
        assert fast.get(mine.pid) == slow.get(mine.pid) == "sleep 61", (fast, slow)  # pid, pgid (its own), args
        assert theirs.pid not in fast and os.getpid() not in fast
        assert fast == slow
        joined = listed("ps", "-ww", "-eopid,pgid,args", "--no-headers")
        assert joined == fast, joined
        no_python = subprocess.run(["ps", "-ww", "-eo", "pid,pgid,args"], capture_output=True, text=True, timeout=60,
                                   env={**env, "PYTHONPATH": "/nonexistent"}, cwd="/")  # rackgate.sim.tools.ps cannot start
        assert no_python.returncode == 0 and f"{mine.pid} sleep 61" in " ".join(no_python.stdout.split()), no_python
        bsd = _on_node(built, "ps", "-o", "pid,args", "h")  # not the product's form: the Python tool answers
        assert bsd.returncode == 0 and "rackgate.sim.tools.ps" in bsd.stdout, bsd.stdout
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()


def _tree(rack_dir) -> dict:
    """Every node's tree under rack_dir: rel path -> (kind, mode, bytes or link target), the rack
    directory's own path written as RACK (the launchers in bin/ name it)."""
    import stat
    out = {}
    for name in sorted(p.name for p in rack_dir.iterdir() if (p / "root").is_dir()):
        base = rack_dir / name
        for dirpath, dirs, files in os.walk(base):
            for entry in [*dirs, *files]:
                p = os.path.join(dirpath, entry)
                rel = os.path.relpath(p, rack_dir)
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = ("link", os.readlink(p).replace(str(rack_dir), "RACK"))
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = ("dir", stat.S_IMODE(st.st_mode))
                else:
                    with open(p, "rb") as f:
                        body = f.read().replace(str(rack_dir).encode(), b"RACK")
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), body)
    return out


@pytest.mark.parametrize("faults", [[], ["driver-not-loaded@node2"], ["foreign-gpu-process@node1", "stale-shm@node4"],
                                    ["a0-prefix-installed", "umc-ue-boot", "duplicate-accel-id", "atom-path-elsewhere"]],
                         ids=["healthy", "driver", "kfd-shm", "prefix-ras-accel-atom"])
def test_nodes_on_the_scratch_dir_are_the_nodes_on_disk(monkeypatch, tmp_path, faults):
    """The sim's directory moved to /dev/shm (scratch_dir: ~0.4 CPU s less kernel time a build on
    this machine's ext4): every node's tree there -- files byte for byte (sparse ones too), modes,
    directories and symlinks -- is the tree built under the user's TMPDIR on disk."""
    import time
    from types import SimpleNamespace

    from rackgate.config import load
    from rackgate.sim import rack as sim_rack
    from rackgate.sim import state as sim_state
    rack = load(sim_rack.SHIPPED_RACK)
    now = time.time()  # both builds boot their nodes at the same time (the perf_setup report's name)
    monkeypatch.setattr(sim_state, "time", SimpleNamespace(time=lambda: now))
    monkeypatch.delenv("RACKGATE_SIM_WORKDIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    disk = sim_rack.build(rack, faults)
    try:
        monkeypatch.delenv("TMPDIR")
        scratch = sim_rack.scratch_dir()
        if scratch is None:
            pytest.skip("no writable, exec-able /dev/shm on this machine")
        moved = sim_rack.build(rack, faults)
        try:
            assert disk.dir.parent == tmp_path
            assert str(moved.dir.parent) == scratch
            assert _tree(moved.dir) == _tree(disk.dir)
        finally:
            moved.stop()
    finally:
        disk.stop()


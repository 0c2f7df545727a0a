"""One transport, proven over every runner: local, ssh (the system client against a real loopback
sshd), and docker exec (the sim's `docker`) over each. The same assertions hold on all four:
argv reaches the node word for word; env values are expanded by the node's shell (the runbook's
`LD_LIBRARY_PATH=/app/rjprefix/lib:$LD_LIBRARY_PATH`); spawn, stop and line streaming go through
the runner's own argv."""
from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

from rackgate.atom.stream import LineStream
from rackgate.transport import ContainerRunner, Host, LocalRunner, SshRunner
from rackgate.transport.deadline import wait_for

from .sshd import sshd

pytestmark = pytest.mark.system

RUNNERS = ["local", "ssh", "docker-over-local", "docker-over-ssh"]
# RG_NODE is exported first on the node; $RG_NODE in the next value must take *that* value, not
# this machine's ("here"). Quotes, backquotes and backslashes stay literal.
ENV = {"RG_NODE": "node-side", "RG_X": "/app/rjprefix/lib:$RG_NODE", "RG_Q": 'a "q" `x` \\z'}
WANT = '/app/rjprefix/lib:node-side|a "q" `x` \\z'
SHOW_ENV = ["sh", "-c", 'printf "%s|%s\\n" "$RG_X" "$RG_Q"']


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with sshd(tmp_path_factory.mktemp("sshd")) as s:
        yield s


@pytest.fixture(scope="module")
def sim_node(tmp_path_factory) -> dict[str, str]:
    """A one-node sim state with our container running and the sim's `docker` on PATH."""
    rack = tmp_path_factory.mktemp("rack")
    node = rack / "n1"
    (node / "bin").mkdir(parents=True)
    own = {"id": "c" * 64, "image": "atom:test", "created": 0, "status": "running",
           "env": ["RG_INSIDE=inside-the-container"]}
    (rack / "state.json").write_text(json.dumps({"container": "atom", "nodes": {"n1": {"plat": {"own": own}}}}))
    exe = node / "bin" / "docker"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -S -m rackgate.sim.tools.docker "$@"\n')
    exe.chmod(0o755)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {"PATH": f"{node / 'bin'}:$PATH", "RACKGATE_SIM_NODE": str(node), "PYTHONPATH": root}


@pytest.fixture(params=RUNNERS)
def host(request, sim_node, monkeypatch):
    monkeypatch.setenv("RG_NODE", "here")  # what a value expanded on this machine would take
    kind = request.param
    docker = kind.startswith("docker")
    node_env = sim_node if docker else ENV
    if "ssh" in kind:
        srv = request.getfixturevalue("server")
        control = tempfile.mkdtemp(prefix="rg-t-")
        base = SshRunner("n1", srv.target, 5, srv.options, control, env=node_env)
        request.addfinalizer(base.stop)
    else:
        base = LocalRunner("n1", node_env)
    h = Host("n1", base, default_timeout=60)
    return h.container("atom", env=ENV) if docker else h


def test_argv_reaches_the_node_word_for_word(host):
    words = ["a b", "it's", '"q"', "$HOME", "*", "back\\slash", "`id`", ""]
    res = host.run(["printf", "<%s>\\n", *words], timeout=60)
    assert res.ok, res.evidence()
    assert res.stdout.splitlines() == [f"<{w}>" for w in words]
    assert res.command.startswith("printf")  # evidence shows the command, not the transport


def test_env_values_expand_on_the_node(host):
    res = host.run(SHOW_ENV, timeout=60)
    assert (res.rc, res.stdout) == (0, WANT + "\n"), res.evidence()


# Values a shell would take apart if they were ever pasted into a command line.
HOSTILE = ["/x/a dir/$(touch {canary})/y", "it's 'quoted'", '"; touch {canary}; #', "`touch {canary}`",
           "$HOME", "*", "back\\slash", "-e", ""]


def test_a_str_is_refused_and_a_script_takes_values_as_arguments(host, tmp_path):
    with pytest.raises(TypeError, match="Host.shell"):
        host.run("echo one two | wc -w", timeout=60)
    with pytest.raises(TypeError, match="Host.shell"):
        host.spawn("sleep 1", str(tmp_path / "never.log"))
    canary = tmp_path / "canary"
    words = [w.format(canary=canary) for w in HOSTILE]
    res = host.shell('for a; do printf "<%s>\\n" "$a"; done', *words, timeout=60)
    assert res.stdout.splitlines() == [f"<{w}>" for w in words], res.evidence()
    assert not canary.exists(), "a value was run as a command"


def test_path_questions_take_quote_hostile_paths_intact(host, tmp_path):
    from rackgate.atom.logs import NodeLog
    from rackgate.fabric.ubench07 import require_exe
    from rackgate.probes import container, traces

    # were a path ever pasted into a command line, $(id) would change it and nothing below be found
    d = tmp_path / "a dir $(id) it's"
    d.mkdir()
    log = d / "server log's.txt"
    log.write_text("INFO it's 'ready'\nnoise\nERROR it's `x` $(touch c)\n")
    (d / "rank0.pt.trace.json.gz").write_bytes(b"x")
    exe = d / "tool it's.exe"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert host.exists(str(log)) and host.read(str(log)).startswith("INFO it's")
    assert host.find(str(d), "*log's.txt") == [str(log)]
    assert host.stat([str(log)], "%s") == {str(log): str(log.stat().st_size)}
    assert host.glob(str(d / "*.exe")) == [str(exe)]
    got = NodeLog("n1", host, str(log), range(1)).grep("it's 'ready'", "`x` $(touch")
    assert [r.text for r in got][-1].endswith("$(touch c)") and len(got) == 2
    sizes, count, _ = container.sizes_and_count(host, [str(log), str(d / "none")], "it's", str(log))
    assert (sizes, count) == ({str(log): log.stat().st_size, str(d / "none"): None}, 2)
    assert container.count_entries(host, str(d)) == 3
    assert container.which(host, "sh") is not None
    require_exe(host, str(exe))
    assert traces.missing_traces({0: (host, str(d))}, wait_s=0) == {}


def test_spawn_stream_and_stop(host, tmp_path):
    log = str(tmp_path / "logs" / "spawned.log")
    proc = host.spawn(["sh", "-c", 'printf "%s|%s\\n" "$RG_X" "$RG_Q"; echo "$1"; exec sleep 300', "sh", "late"],
                      log, {"RG_Q": 'a "q" `x` \\z'})
    try:
        assert proc.alive()
        stream = LineStream(host, log, bound_s=60)
        try:
            got = [wait_for(lambda: stream.readline(5), 60) for _ in range(2)]
        finally:
            stream.close()
        assert got == [WANT, "late"]
    finally:
        proc.stop(grace_s=5)
    assert not host.run(["kill", "-0", str(proc.pid)], timeout=30).ok


def test_docker_env_expands_inside_the_container(sim_node):
    h = Host("n1", LocalRunner("n1", sim_node)).container("atom", env={"RG_Y": "x:$RG_INSIDE"})
    assert h.run(["sh", "-c", 'echo "$RG_Y"'], timeout=60).stdout == "x:inside-the-container\n"


def test_no_container_runs_on_the_node_with_the_same_env_rule(tmp_path, monkeypatch):
    # container = "": the engine runs on the node itself; no `docker` is involved at all.
    monkeypatch.setenv("RG_NODE", "here")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    (tmp_path / "docker").write_text("#!/bin/sh\necho 'docker must not run' >&2; exit 99\n")
    (tmp_path / "docker").chmod(0o755)
    node = Host("n1", LocalRunner("n1"), sysroot=str(tmp_path))
    box = node.container("", sysroot="/ignored", env=ENV)
    assert box.name == "n1" and box.sysroot == node.sysroot
    res = box.run(SHOW_ENV, timeout=60)
    assert (res.rc, res.stdout) == (0, WANT + "\n"), res.evidence()
    with pytest.raises(ValueError):
        ContainerRunner(node.runner, "")

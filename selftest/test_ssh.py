"""The ssh transport against a real OpenSSH server on loopback: the suite over ssh behaves as it
does locally, remote work is bounded, and failures say which node and why."""
import os
import tempfile
import textwrap
import time

import pytest

from rackgate.transport import CommandTimeout, Host, SshRunner, TransportError

from .harness import run_suite
from .sshd import sshd

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with sshd(tmp_path_factory.mktemp("sshd")) as s:
        yield s


def ssh_host(server, control_dir=None, **kw) -> Host:
    return Host("n1", SshRunner("n1", server.target, 5, server.options, control_dir, **kw))


def test_commands_are_values_over_ssh(server):
    control = tempfile.mkdtemp(prefix="rg-t-")  # short: a unix socket path has ~100 bytes
    h = ssh_host(server, control, env={"RG_X": "a b"})
    try:
        res = h.shell("echo $RG_X; echo oops >&2; exit 7", timeout=20)
        assert (res.rc, res.stdout, res.stderr) == (7, "a b\n", "oops\n")
        assert os.listdir(control), "a ControlMaster socket is expected in the control dir"
        assert h.run(["echo", "again"], timeout=20).stdout == "again\n"
    finally:
        h.runner.stop()
    # `ssh -O exit` returns when the master has been asked; it removes its socket as it exits
    # (asynchronously): wait for that event, bounded.
    deadline = time.monotonic() + 30
    while os.listdir(control) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.listdir(control), "the control master should have exited"


@pytest.mark.timeout(180)  # a hang fails here; how fast is not the claim
def test_remote_work_ends_at_the_timeout(server, tmp_path):
    marker = f"sleep 299.{os.getpid()}"  # unique in ps
    h = ssh_host(server)
    with pytest.raises(CommandTimeout):
        h.run(marker.split(), timeout=2)
    deadline = time.monotonic() + 30
    while marker in os.popen("ps -eo args").read():
        assert time.monotonic() < deadline, "the remote command outlived its timeout"
        time.sleep(0.3)


def test_refused_key_is_a_transport_error(server, tmp_path):
    opts = [o for o in server.options if not o.startswith("IdentityFile")] + [f"IdentityFile={tmp_path}/none"]
    h = Host("n1", SshRunner("n1", server.target, 5, opts))
    with pytest.raises(TransportError) as e:
        h.run(["true"])
    assert "node n1: unreachable over ssh" in str(e.value) and "Permission denied" in str(e.value)


def _ssh_rack(tmp_path, server) -> str:
    rack = tmp_path / "ssh-sim.toml"
    opts = ", ".join(f'"{o}"' for o in server.options)
    base = open(os.path.join(os.path.dirname(__file__), "..", "rackgate", "sim", "racks", "sim.toml")).read()
    rack.write_text(base.replace("[sim]\n", f'[sim]\ntransport = "ssh"\nssh_target = "{server.target}"\n')
                    + textwrap.dedent(f"""
                        [ssh]
                        connect_timeout_s = 5
                        options = [{opts}]
                    """))
    return str(rack)


# A slice through every layer over ssh: sysfs reads, fan-out, and the server launched with
# `docker exec` on each node, watched and stopped by PID. (The whole suite over ssh is the same
# code at ~1 s per ssh round trip on this 2-core machine: too slow for CI.)
SLICE = ["FAB-STATE", "FAB-POD",
         "SRV-MODELS::server",
         "SRV-SANITY::server"]


def test_suite_slice_over_ssh_passes_on_health(server, tmp_path):
    run = run_suite(tmp_path, "--rack", _ssh_rack(tmp_path, server), *SLICE, timeout=600)
    assert run.outcomes and run.not_passed == set(), run.stdout[-3000:]


def test_fault_over_ssh_fails_the_same_item(server, tmp_path):
    run = run_suite(tmp_path, "--rack", _ssh_rack(tmp_path, server), "FAB-STATE",
                    "--sim-fault", "stuck-link@node3:2", timeout=600)
    assert run.ids("failed") == {"FAB-STATE::node3-card2"}, run.stdout[-3000:]

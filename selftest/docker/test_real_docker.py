"""The docker probes against a real docker daemon (selftest/docker/dockerd.py): real `ps
--format`, `events`, `inspect` and `exec` output, and the daemon killed mid-run (issue 24 item 3)."""
from __future__ import annotations

import pytest

from rackgate.errors import CouldNotObserve, ToolMissing
from rackgate.probes import docker
from rackgate.transport import Host
from rackgate.transport.runners import LocalRunner

from .dockerd import Dockerd, usable

WHY = usable()
pytestmark = [pytest.mark.system, pytest.mark.docker, pytest.mark.skipif(bool(WHY), reason=f"real dockerd: {WHY}")]
IMAGE = "rg/atom:selftest"


@pytest.fixture(scope="module")
def daemon():
    d = Dockerd().start()
    try:
        d.import_image(IMAGE)
        d.run("atom", IMAGE, env={"ATOM_PATCH": "1"})
        d.run("old", IMAGE, "true")
        d.docker("wait", "old")
        d.next_second()  # the creates are listed by `docker events --until 0s`
        yield d
    finally:
        d.stop()


@pytest.fixture
def dk1(daemon):
    return Host("dk1", LocalRunner("dk1", env=daemon.env()))


def test_ps_reads_real_rows_and_states(dk1):
    rows, _ = docker.ps_all(dk1)
    by_name = {r.name: r for r in rows}
    assert by_name["atom"].state == "running" and by_name["atom"].active
    assert by_name["old"].state == "exited" and not by_name["old"].active
    assert by_name["atom"].image == IMAGE and by_name["old"].status.startswith("Exited (0)")


def test_events_see_real_creates(dk1):
    events, _ = docker.recent_creates(dk1, "30m")
    assert {e.name for e in events if e.action == "create"} >= {"atom", "old"}
    assert all(e.time > 1_600_000_000 and e.image == IMAGE for e in events)


def test_inspect_real_container_and_unknown_name(dk1):
    got, _ = docker.inspect(dk1, "atom")
    assert got.running and got.network_mode == "none" and got.image == IMAGE
    assert got.env_dict()["ATOM_PATCH"] == "1" and got.image_id.startswith("sha256:")
    assert docker.inspect(dk1, "no-such-container")[0] is None


def test_exec_exit_codes_as_real_docker_gives_them(dk1, daemon):
    inside = dk1.container("atom")
    assert inside.run(["true"]).rc == 0 and inside.run(["false"]).rc == 1
    # through the runner (bounded by the container's `timeout`): the node's missing tool
    with pytest.raises(ToolMissing):
        inside.run(["no-such-program"]).require(tool="no-such-program")
    # bare `docker exec`: 126, and the runtime's words on stdout, not stderr
    raw = daemon.docker("exec", "atom", "no-such-program", check=False)
    assert raw.returncode == 126 and "executable file not found" in raw.stdout and not raw.stderr.strip()
    # an exited container: could not observe, in the daemon's words
    with pytest.raises(CouldNotObserve, match=r"node dk1: container old: Error response from daemon: Container \w+ is not running"):
        dk1.container("old").run(["true"])


def test_daemon_killed_mid_run_is_could_not_observe_in_dockers_words(dk1, daemon):
    # last in this module: the module's daemon is gone after it
    daemon.kill_daemon()
    for read in (docker.ps_all, lambda h: docker.recent_creates(h, "30m"), lambda h: docker.inspect(h, "atom")):
        with pytest.raises(CouldNotObserve) as got:
            read(dk1)
        assert f"Cannot connect to the Docker daemon at {daemon.host}" in str(got.value), str(got.value)

"""The collective probe through a real `docker exec -i` (issue 24 item 3): its source on stdin,
its environment as `-e` options, in a container of the private dockerd whose python is this
machine's (CPU torch, gloo on the container's loopback). FAB-COLLECTIVE passes on it; with the
daemon gone it is could-not-observe quoting docker."""
from __future__ import annotations

import pytest

from ..harness import run_suite
from .dockerd import Dockerd, local_node, usable

WHY = usable()
pytestmark = [pytest.mark.system, pytest.mark.docker, pytest.mark.skipif(bool(WHY), reason=f"real dockerd: {WHY}")]
IMAGE = "rg/atom:selftest"
ITEM = "FAB-COLLECTIVE::dk1"


@pytest.fixture
def daemon():
    pytest.importorskip("torch", reason="CPU torch is installed by scripts/setup.sh")
    d = Dockerd().start()
    try:
        d.import_image(IMAGE)
        d.python = d.run_with_host_python("atom", IMAGE)
        yield d
    finally:
        d.stop()


def _suite(tmp_path, daemon):
    rack = tmp_path / "rack.toml"
    rack.write_text(f"""name = "real-docker"
gpus_per_node = 2
container = "atom"
image = "{IMAGE}"

[fabric]
container_python = "{daemon.python}"
collective_backend = "gloo"
collective_world_sizes = [1, 2]
collective_bw_bytes = 65536
collective_bw_warmup = 1
collective_bw_iters = 2
collective_join_s = 60
collective_env = {{ GLOO_SOCKET_IFNAME = "lo", NCCL_DEBUG = "INFO" }}

""" + local_node(daemon.host))
    run = run_suite(tmp_path, "-m", "fabric", f"--rack={rack}", "-p", "no:randomly", "-k", "FAB-COLLECTIVE",
                    timeout=400)
    assert ITEM in run.outcomes, run.stdout[-3000:] + run.stderr[-2000:]
    return run.outcomes[ITEM]


def test_collective_probe_through_real_docker_exec(tmp_path, daemon):
    got = _suite(tmp_path, daemon)
    assert got.status == "passed", got.message


def test_collective_with_the_daemon_gone_quotes_docker(tmp_path, daemon):
    daemon.kill_daemon()
    got = _suite(tmp_path, daemon)
    assert got.status == "error" and "could not observe" in got.message, got.message
    assert f"Cannot connect to the Docker daemon at {daemon.host}" in got.message, got.message

"""The platform suite's docker-reading items on a node whose docker is a real daemon (issue 24
item 3): a local-transport node whose DOCKER_HOST is the private dockerd, our container `atom`
made from an imported root filesystem (the node's /sys/class/kfd under a sysroot: no GPU here) holding an ATOM git checkout with the patch files.
PLAT-FREE, PLAT-CONTAINER, PLAT-ATOM-COMMIT and PLAT-PATCH-SIZE pass on it, PLAT-FREE fails on a
second container, and with the daemon gone each is could-not-observe in docker's own words."""
from __future__ import annotations

import subprocess

import pytest

from rackgate.sim.areas.survey import TCP_HEAD

from ..harness import run_suite
from .dockerd import Dockerd, usable

WHY = usable()
pytestmark = [pytest.mark.system, pytest.mark.docker, pytest.mark.skipif(bool(WHY), reason=f"real dockerd: {WHY}")]
IMAGE = "rg/atom:selftest"
ITEMS = {"free": "PLAT-FREE::dk1",
         "container": "PLAT-CONTAINER::dk1",
         "commit": "PLAT-ATOM-COMMIT::dk1",
         "patch": "PLAT-PATCH-SIZE::dk1"}
PATCH = {"atom/model_ops/mla_unfused_gather.py": 120, "atom/utils/envs.py": 80}
GREP = ("atom/model_ops/attention_mla.py", "use_unfused_gather_kv_b_proj", 3)


def _atom_tree(root):
    """An ATOM git checkout with the patch files at their expected sizes."""
    for rel, size in PATCH.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("#" * (size - 1) + "\n")
    (root / GREP[0]).write_text("".join(f"x = {GREP[1]}  # {i}\n" for i in range(GREP[2])))
    git = ["git", "-C", str(root), "-c", "user.name=rg", "-c", "user.email=rg@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "atom"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def _rack(path, daemon):
    files = "\n".join(f'"{rel}" = {size}' for rel, size in PATCH.items())
    path.write_text(f"""name = "real-docker"
gpus_per_node = 4
container = "atom"
image = "{IMAGE}"
atom_path = "/app/ATOM"

[platform]
network_mode = "none"
devices = []
patch_grep_file = "{GREP[0]}"
patch_grep_pattern = "{GREP[1]}"
patch_grep_count = {GREP[2]}

[platform.patch_files]
{files}

[[nodes]]
name = "dk1"
transport = "local"
data_ip = "127.0.0.1"
tray = 1
sysroot = "{daemon.sysroot}"
env = {{ DOCKER_HOST = "{daemon.host}" }}
""")
    return path


@pytest.fixture
def daemon(tmp_path):
    d = Dockerd().start()
    try:
        tree = tmp_path / "ATOM"
        tree.mkdir()
        d.commit = _atom_tree(tree)
        # the node's amdgpu kfd process list, with nobody on the GPUs (no GPU on this machine)
        d.sysroot = tmp_path / "node"
        (d.sysroot / "sys/class/kfd/kfd/proc").mkdir(parents=True)
        # ... and its TCP socket table, nobody listening on the bring-up's ports (PLAT-FREE reads it)
        (d.sysroot / "proc/net").mkdir(parents=True)
        (d.sysroot / "proc/net/tcp").write_text(TCP_HEAD + "\n")
        d.import_image(IMAGE, {"/app/ATOM": tree})
        d.run("atom", IMAGE)
        yield d
    finally:
        d.stop()


def _suite(tmp_path, daemon):
    tmp_path.mkdir(exist_ok=True)
    rack = _rack(tmp_path / "rack.toml", daemon)
    run = run_suite(tmp_path, "-m", "platform", f"--rack={rack}", "-p", "no:randomly",
                    "-k", "PLAT-FREE or PLAT-CONTAINER or ATOM-COMMIT or PLAT-PATCH-SIZE", timeout=300)
    assert set(ITEMS.values()) <= set(run.outcomes), run.stdout[-3000:] + run.stderr[-2000:]
    return {k: run.outcomes[v] for k, v in ITEMS.items()}


def test_healthy_node_passes_then_a_second_container_fails_plat_free(tmp_path, daemon):
    got = _suite(tmp_path / "healthy", daemon)
    assert {k: o.status for k, o in got.items()} == dict.fromkeys(ITEMS, "passed"), \
        {k: o.message for k, o in got.items()}
    daemon.create("someone-elses-engine", IMAGE)
    free = _suite(tmp_path / "intruder", daemon)["free"]
    assert free.status == "failed" and "someone-elses-engine" in free.message, free.message


def test_daemon_gone_makes_each_docker_item_could_not_observe(tmp_path, daemon):
    daemon.kill_daemon()
    got = _suite(tmp_path, daemon)
    for k, o in got.items():
        assert o.status == "error" and "could not observe" in o.message, (k, o.status, o.message)
        assert f"Cannot connect to the Docker daemon at {daemon.host}" in o.message, (k, o.message)

"""The docker probes against the real docker client whose daemon is not there (issue 24): every
docker read is could-not-observe naming the node and quoting docker's own words, never a Python
exception (the `.split` of an argv list in `_docker`'s error branch) and never a finding."""
from __future__ import annotations

import shutil

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.probes import docker
from rackgate.transport import Host
from rackgate.transport.runners import LocalRunner

pytestmark = [pytest.mark.system, pytest.mark.skipif(not shutil.which("docker"), reason="no docker client (scripts/system_tools.sh)")]


@pytest.fixture
def dn1(tmp_path):
    # the real client, pointed at a socket no daemon listens on
    return Host("dn1", LocalRunner("dn1", env={"DOCKER_HOST": f"unix://{tmp_path}/docker.sock"}))


@pytest.mark.parametrize("read", [docker.ps_all, lambda h: docker.recent_creates(h, "30m"),
                                  lambda h: docker.inspect(h, "atom")], ids=["ps", "events", "inspect"])
def test_daemon_down_is_could_not_observe_in_dockers_words(dn1, tmp_path, read):
    with pytest.raises(CouldNotObserve) as got:
        read(dn1)
    msg = str(got.value)
    assert msg.startswith("dn1: `docker "), msg
    assert f"Cannot connect to the Docker daemon at unix://{tmp_path}/docker.sock" in msg, msg

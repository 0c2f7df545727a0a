"""PLAT-CONTAINER, PLAT-TOOLS: our container runs the expected image on the host network with the
GPU devices, and has the tools a hang needs."""
import pytest

from rackgate.gates import plat as judge
from rackgate.probes import container, docker
from rackgate.report.verdict import check


@pytest.mark.row("PLAT-CONTAINER")
def test_container_config(node, rack, evidence, facts):
    p = rack.platform
    if not rack.container:
        pytest.skip('container = "": the engine runs on the node itself (no container to inspect)')
    info, raw = docker.inspect(node.host, rack.container)
    evidence.attach(f"docker inspect {rack.container}", raw, kind="json" if info else "text")
    if info is not None:
        facts.record("platform.image.tag", info.image, where=node.name, row="PLAT-CONTAINER")
        facts.record("platform.image.id", info.image_id, where=node.name, row="PLAT-CONTAINER")
    bad = judge.container(info, rack.container, rack.image, p.network_mode, p.devices)
    check(not bad, "PLAT-CONTAINER", node.name, "; ".join(bad))


@pytest.mark.row("PLAT-TOOLS")
def test_container_tools(node, rack, evidence):
    ch = node.container()
    found = {t: container.which(ch, t) for t in rack.platform.container_tools}
    evidence.attach("command -v (in the container)", "\n".join(f"{t}: {p or 'not found'}" for t, p in found.items()))
    missing = [t for t, p in found.items() if p is None]
    check(not missing, "PLAT-TOOLS", node.name, f"{', '.join(missing)} missing in container {rack.container}")

"""PLAT-ATOM-COMMIT's judgment and the sim's commits, without a checkout (the git reads:
test_atom_commit.py)."""
import pytest

from rackgate import baseline as bl
from rackgate.baseline import compare as cmp
from rackgate.probes import atom_commit

from .test_atom_commit import SHA

pytestmark = pytest.mark.unit


def test_the_sim_holds_one_atom_commit_and_one_image_id_per_image():
    from rackgate.sim.areas.plat import atom_commit as sim_commit
    from rackgate.sim.tools.docker import image_id
    img = "rocm/fw-bringup:gfx1250-atom-20260918-ep8"
    assert image_id({"id": "a" * 64, "image": img}) == image_id({"id": "b" * 64, "image": img})
    assert image_id({"id": "a" * 64, "image": img}) != image_id({"id": "a" * 64, "image": img + "x"})
    assert atom_commit.COMMIT.match(sim_commit(img)) and sim_commit(img) != sim_commit(img + "x")


def test_nodes_that_disagree_get_their_own_line():
    facts = [bl.Fact("platform.image.id", f"sha256:{c}", f"node{i}") for i, c in enumerate("aaab", 1)]
    facts += [bl.Fact("platform.atom.commit", SHA, f"node{i}") for i in range(1, 5)]
    prov = bl.provenance_from_facts(facts)
    assert prov["image_id"] == bl.NODES_DIFFER and prov["atom_commit"] == SHA
    assert prov["image_id_by_node"] == {"node1": "sha256:a", "node2": "sha256:a", "node3": "sha256:a",
                                        "node4": "sha256:b"}
    text = cmp.header({"image": "i:1", "image_id": "sha256:a", "atom_commit": SHA}, {"image": "i:1", **prov})
    assert " | " not in text
    line = next(x for x in text.splitlines() if "disagree" in x)
    assert line.strip().startswith("new:") and "node4=sha256:b" in line and "node1=sha256:a" in line
    assert f"ATOM commit: {SHA} -> {SHA}   (same)" in text

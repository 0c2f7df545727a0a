"""container = "" in the rack file: the engine runs on the node itself. Every path honours it --
the server is launched, watched and asked on the node (never `docker exec ''`), and the checks
about a container say they do not apply."""
import pytest

from .harness import REPO, run_suite

pytestmark = pytest.mark.suite

SLICE = ["SRV-MODELS::server",
         "SRV-SANITY::server", "PLAT-CONTAINER"]


def test_engine_on_the_node_is_a_rack_file_choice(tmp_path):
    base = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    assert '\ncontainer = "atom"\n' in base
    rack = tmp_path / "no-container.toml"
    rack.write_text(base.replace('\ncontainer = "atom"\n', '\ncontainer = ""\n'))
    run = run_suite(tmp_path, "--rack", str(rack), *SLICE, timeout=600)
    assert "value is empty" not in run.stdout, run.stdout[-3000:]
    assert run.ids("passed") == {SLICE[0], SLICE[1]}, run.stdout[-3000:]
    skipped = [k for k in run.ids("skipped") if "PLAT-CONTAINER" in k]
    assert skipped and not run.ids("failed") and not run.ids("error"), run.stdout[-3000:]

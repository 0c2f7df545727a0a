"""An unreachable node is an ERROR item naming it, never a hang or a shorter node list."""
import textwrap

from .harness import run_suite


def test_unreachable_node_is_its_own_error(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(textwrap.dedent("""
        name = "two-nodes"
        gpus_per_node = 1
        [ssh]
        connect_timeout_s = 3
        options = ["Port=1"]
        [[nodes]]
        name = "good"
        transport = "local"
        data_ip = "127.0.0.1"
        tray = 1
        [[nodes]]
        name = "ghost"
        ssh = "root@127.0.0.1"
        data_ip = "127.0.0.2"
        tray = 2
    """))
    run = run_suite(tmp_path, "--rack", str(rack), "tests/platform/test_driver.py::test_driver_loaded", timeout=120)
    ghost = "tests/platform/test_driver.py::test_driver_loaded[ghost]"
    assert set(run.outcomes) == {ghost, "tests/platform/test_driver.py::test_driver_loaded[good]"}
    assert run.outcomes[ghost].status == "error"
    assert "node ghost: unreachable over ssh (root@127.0.0.1)" in run.outcomes[ghost].message

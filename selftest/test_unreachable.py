"""An unreachable node is an ERROR item naming it, never a hang or a shorter node list."""
import textwrap

import pytest

from rackgate.sim.drm import lay_out_card

from .harness import run_suite

pytestmark = pytest.mark.suite


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
    run = run_suite(tmp_path, "--rack", str(rack), "PLAT-DRIVER", timeout=120)
    ghost = "PLAT-DRIVER::ghost"
    assert set(run.outcomes) == {ghost, "PLAT-DRIVER::good"}
    assert run.outcomes[ghost].status == "error"
    assert "node ghost: unreachable over ssh (root@127.0.0.1)" in run.outcomes[ghost].message


def _ualink_root(root, tray: int, gpus: int = 2):
    """A node root showing healthy ualink attributes at the real sysfs paths (the cards linked to
    their PCI devices, bound to amdgpu)."""
    for g in range(gpus):
        lay_out_card(root, g, f"0000:{0x05 + 0x10 * g:02x}:00.0", "amdgpu")
        d = root / f"sys/class/drm/card{g}/device/ualink"
        d.mkdir(parents=True)
        for k, v in {"accel_state": "active", "accel_id": str(gpus * (tray - 1) + g), "link_type": "ualoe",
                     "ppod_id": "0x5a1c0de000000001", "vpod_id": "1", "local_accels": "1 0",
                     "station_lane_en_bitmap": "0x000000ff"}.items():
            (d / k).write_text(v + "\n")
    return root


def test_one_dead_node_errors_only_its_items_and_rack_wide_checks_judge_the_rest(tmp_path):
    """Per-node isolation (issue 10, item 3), with `[ssh] config` passed as -F: the dead node is
    named by its alias from that file and ssh's own words; the rack-wide FAB-POD judges the two
    live nodes and reports only the dead one."""
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host deadnode\n  HostName 127.0.0.1\n  Port 1\n")
    nodes = "".join(textwrap.dedent(f"""
        [[nodes]]
        name = "live{i}"
        transport = "local"
        data_ip = "127.0.0.1"
        tray = {i}
        sysroot = "{_ualink_root(tmp_path / f'live{i}', i)}"
    """) for i in (1, 2))
    rack = tmp_path / "rack.toml"
    rack.write_text(textwrap.dedent(f"""
        name = "three-nodes"
        gpus_per_node = 2
        [ssh]
        connect_timeout_s = 3
        config = "{cfg}"
        [fabric]
        state_wait_s = 1
    """) + nodes + textwrap.dedent("""
        [[nodes]]
        name = "ghost"
        ssh = "root@deadnode"
        data_ip = "127.0.0.3"
        tray = 3
    """))
    run = run_suite(tmp_path, "--rack", str(rack), "FAB-STATE",
                    "FAB-POD", timeout=180)
    state = {k: o for k, o in run.outcomes.items() if "FAB-STATE" in k}
    assert len(state) == 6, sorted(run.outcomes)
    for k, o in state.items():
        if "::ghost-" in k:
            assert o.status == "error" and "node ghost: unreachable over ssh (root@deadnode)" in o.message, o.message
            assert "port 1" in o.message.lower()  # ssh's words, from the -F file's Port
        else:
            assert o.status == "passed", (k, o.message)
    # FAB-POD: each reachable node judged across the nodes that answered; the ghost's own item ERRORs
    pod = {k.partition("::")[2]: o for k, o in run.outcomes.items() if k.startswith("FAB-POD::")}
    assert pod["live1"].status == pod["live2"].status == "passed", pod
    assert pod["ghost"].status == "error" and "node ghost: unreachable over ssh" in pod["ghost"].message

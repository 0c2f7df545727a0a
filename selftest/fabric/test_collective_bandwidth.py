"""FAB-COLLECTIVE bandwidth: the probe's RGCOLL-BW lines -> algbw and busbw as nccl-tests define
them for all_reduce (algbw = S/t, busbw = algbw x 2(n-1)/n, t the slowest rank's), and nothing
when a rank's time is missing or unreadable."""
import pytest

from rackgate.probes import collective

pytestmark = pytest.mark.unit


def _lines(ws, times, size=1 << 28):
    return "".join(f"RGCOLL-BW scope=local ws={ws} rank={r} bytes={size} iters=20 warmup=5 mean_s={t}\n"
                   for r, t in enumerate(times))


def test_busbw_from_the_slowest_rank():
    out = collective.parse(_lines(4, ["2.000000e-03", "2.500000e-03", "2.100000e-03", "2.200000e-03"]))
    bw = out.worlds[4].bandwidth()
    assert bw.time_s == pytest.approx(2.5e-3)
    assert bw.algbw_gbps == pytest.approx((1 << 28) / 2.5e-3 / 1e9)
    assert bw.busbw_gbps == pytest.approx(bw.algbw_gbps * 2 * 3 / 4)
    assert "busbw" in bw.describe()


def test_two_ranks_busbw_equals_algbw():
    bw = collective.parse(_lines(2, ["1e-3", "1e-3"], size=1000)).worlds[2].bandwidth()
    assert bw.busbw_gbps == pytest.approx(bw.algbw_gbps) == pytest.approx(1e-3)


@pytest.mark.parametrize("text", [
    _lines(4, ["1e-3", "1e-3", "1e-3"]),            # a rank printed no time
    _lines(2, ["1e-3", "nan"]),                      # an unreadable time
    _lines(2, ["0", "1e-3"]).replace("rank=1 bytes=268435456", "rank=1 bytes=4096"),  # sizes differ
    _lines(2, ["0.0", "0.0"]),                       # no time at all
])
def test_no_bandwidth_from_incomplete_lines(text):
    w = collective.parse(text).worlds.get(int(text.split("ws=")[1].split()[0]))
    assert w is None or w.bandwidth() is None


def test_command_asks_for_the_rack_files_size():
    from rackgate import config
    from rackgate.fabric.collective import command
    rack = config.load("rackgate/sim/racks/sim.toml")
    cmd = command(rack, 0, "127.0.0.1")  # argv
    assert cmd[cmd.index("--bw-bytes") + 1] == str(rack.fabric.collective_bw_bytes)
    assert cmd[cmd.index("--bw-iters") + 1] == str(rack.fabric.collective_bw_iters)

"""The metrics textfile's text (rackgate/report/openmetrics.py) and the node-problem-detector plugin's
contract (rackgate/report/npd.py): NPD's custom-plugin monitor reads exit 0 as OK, 1 as NonOK and any
other as Unknown, and keeps the first max_output_length (80) bytes of the trimmed stdout
(kubernetes/node-problem-detector pkg/custompluginmonitor/plugin/plugin.go)."""
import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackgate.report import npd, openmetrics, validity
from rackgate.report import verdict_file as vf

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 7, 12, 0, 0, tzinfo=timezone.utc)
NODES = [("node1", 1, "h1"), ("node2", 2, "h2")]
SAMPLE = re.compile(r'^([a-z_]+)\{((?:[a-z]+="(?:[^"\\]|\\.)*",?)*)\} (-?[0-9.e+]+)$')


def _it(test, outcome, row, seen="", when=T0, where=""):
    return vf.Item(test, outcome, row, where, seen, *validity.stamps(row, when), "sha256:" + "a" * 64)


def _verdict(fault=True):
    items = [_it(f"t::test_fab_state[{n}-card{g}]", vf.FAIL if fault and (n, g) == ("node2", 1) else vf.PASS, "FAB-STATE",
                 "accel_state=unconfigured" if fault and (n, g) == ("node2", 1) else "", where=f"{n}/card{g}")
             for n in ("node1", "node2") for g in range(4)]
    items += [_it("t::test_plat_ras[node1]", vf.PASS, "PLAT-RAS"), _it("t::test_plat_ras[node2]", vf.PASS, "PLAT-RAS"),
              _it("t::test_srv_alive[node2-dp5]", vf.UNKNOWN, "SRV-ALIVE", "could not observe: timeout"),
              _it("t::test_srv_sanity", vf.PASS, "SRV-SANITY"),
              _it("t::test_fab_p2p[node1-node2]", vf.PASS, "FAB-P2P")]
    return vf.build("sim", NODES, 4, items)


def test_every_item_is_one_series_with_its_place_and_the_file_ends_in_eof_without_timestamps():
    text = openmetrics.render(_verdict(), [{"node": "node1", "gpu": "0", "counter": "ras.umc.ue", "value": 3}], 42.5, 1.7e9)
    assert text.endswith("\n# EOF\n")
    samples = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert all(SAMPLE.match(ln) for ln in samples), [ln for ln in samples if not SAMPLE.match(ln)]
    status = {m.group(2): m.group(3) for m in map(SAMPLE.match, samples) if m and m.group(1) == "rackgate_check_status"}
    assert len(status) == 13
    assert status['rack="sim",node="node2",gpu="1",rank="",row="FAB-STATE"'] == "0"
    assert status['rack="sim",node="node2",gpu="",rank="5",row="SRV-ALIVE"'] == "-1"
    assert status['rack="sim",node="",gpu="",rank="",row="SRV-SANITY"'] == "1"
    assert status['rack="sim",node="node1-node2",gpu="",rank="",row="FAB-P2P"'] == "1"
    assert [v for k, v in status.items() if v == "0"] == ["0"]
    assert 'rackgate_gpu_hardware_errors{rack="sim",node="node1",gpu="0",kind="ras.umc.ue"} 3' in samples
    assert 'rackgate_last_run_duration_seconds{rack="sim"} 42.500' in samples
    until = [ln for ln in samples if ln.startswith('rackgate_check_valid_until_seconds{rack="sim",node="node1",gpu="",rank="",row="PLAT-RAS"}')]
    assert until == [f'rackgate_check_valid_until_seconds{{rack="sim",node="node1",gpu="",rank="",row="PLAT-RAS"}} {int((T0 + timedelta(minutes=10)).timestamp())}']


def test_two_items_of_one_place_are_one_series_the_worst_status():
    v = vf.build("sim", NODES, 4, [_it("t::test_a[node1]", vf.PASS, "PLAT-DRIVER"), _it("t::test_b[node1]", vf.UNKNOWN, "PLAT-DRIVER"),
                                   _it("t::test_c[node2]", vf.FAIL, "PLAT-DRIVER"), _it("t::test_d[node2]", vf.UNKNOWN, "PLAT-DRIVER")])
    lines = [ln for ln in openmetrics.render(v).splitlines() if ln.startswith("rackgate_check_status{")]
    assert lines == ['rackgate_check_status{rack="sim",node="node1",gpu="",rank="",row="PLAT-DRIVER"} -1',
                     'rackgate_check_status{rack="sim",node="node2",gpu="",rank="",row="PLAT-DRIVER"} 0']


# fixed examples, no deadline: the shared machine's load must not fail a property (selftest/properties/mutate.py)
@settings(derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.text(min_size=1, max_size=30))
def test_label_values_are_escaped_whatever_the_rack_is_called(name):
    v = _verdict()
    v["rack"] = name
    for ln in openmetrics.render(v).splitlines():
        assert ln.startswith("#") or SAMPLE.match(ln), ln


def test_the_file_is_replaced_whole(tmp_path):
    p = tmp_path / "tf" / "rackgate.prom"
    openmetrics.write(p, "a 1\n# EOF\n")
    openmetrics.write(p, "a 2\n# EOF\n")
    assert p.read_text() == "a 2\n# EOF\n" and [f.name for f in p.parent.iterdir()] == ["rackgate.prom"]


@pytest.mark.parametrize(("condition", "at", "fault", "code", "says"), [
    ("link", "node2", True, 1, "FAB-STATE [node2/card1]: accel_state=unconfigured"),
    ("link", "node1", True, 0, "link on node1: 5 checks green"),
    ("link", "", False, 0, "link: 9 checks green"),
    ("gpu-ras", "node1", True, 0, "gpu-ras on node1: 1 checks green"),
    ("serving", "node2", True, 2, "serving on node2: 1 of 2 unobserved (test_srv_alive[node2-dp5])"),
    ("serving", "node1", True, 0, "serving on node1: 1 checks green"),
    ("link", "node9", True, 2, "link: rack sim has no node 'node9'"),
])
def test_each_condition_answers_0_1_2_with_one_line(condition, at, fault, code, says):
    got = npd.judge(_verdict(fault), condition, at, T0 + timedelta(minutes=1))
    assert got == (code, says)


def test_expired_is_unknown_and_nothing_judged_is_unknown_never_ok():
    assert npd.judge(_verdict(False), "gpu-ras", "node1", T0 + timedelta(hours=2))[0] == npd.UNKNOWN
    assert "expired" in npd.judge(_verdict(False), "gpu-ras", "node1", T0 + timedelta(hours=2))[1]
    empty = vf.build("sim", NODES, 4, [])
    assert npd.judge(empty, "link", "", T0) == (npd.UNKNOWN, "link: nothing judged (no item of its rows in the verdict)")


def test_the_command_prints_one_line_within_npds_max_output_length(tmp_path, capsys):
    v = _verdict()
    v["items"][5]["seen"] = "accel_state=unconfigured\n" + "x" * 500
    v["items"][5]["outcome"] = "FAIL"
    path = tmp_path / "v.json"
    vf.write(path, v)
    assert npd.main(["link", "--verdict", str(path), "--node", "node2"]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and len(out.strip()) <= 80 and out.startswith("FAB-STATE [node2/card1]")
    assert npd.main(["link", "--verdict", str(tmp_path / "none.json")]) == 2
    out = capsys.readouterr().out
    assert out.startswith("link: ") and out.count("\n") == 1 and len(out.strip()) <= 80

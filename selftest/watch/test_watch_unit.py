"""rackgate watch's parts that need no process: its arguments (its own vs the suite's, never an
abbreviation of one taken for the other), what a cycle runs (only what is due, the suite's arguments
unchanged -- the attach URL every cycle), and the history's cycle count after a crash cut a line."""
from datetime import datetime, timedelta, timezone

import pytest

from rackgate.ids import path_arg
from rackgate.report import validity
from rackgate.report import verdict_file as vf
from rackgate.watch.cli import _parser
from rackgate.watch.cycle import HISTORY, Watch

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 7, 12, 0, 0, tzinfo=timezone.utc)
NODES = [("node1", 1, "h1")]
IDS = [f"{r}::node1" for r in ("PLAT-RAS", "FAB-POD", "PLAT-DRIVER")]


def test_its_own_options_and_everything_else_for_the_suite():
    o, rest = _parser().parse_known_args(["--every", "5", "--tier", "quick", "--max", "3", "--atom-url", "http://h:8000",
                                          "-m", "gate", "--metrics-file", "m.prom"])
    assert (o.every, o.max_age, o.metrics_file) == (5.0, None, "m.prom")
    assert rest == ["--tier", "quick", "--max", "3", "--atom-url", "http://h:8000", "-m", "gate"]


def test_a_cycle_runs_only_what_is_due_with_the_suites_arguments_unchanged(tmp_path):
    w = Watch(tmp_path, ["--atom-url", "http://h:8000", "--served-model", "m", "--tier", "quick"])
    assert w.due(T0) == (None, "no verdict yet: the whole selection")
    items = [vf.Item(IDS[0], vf.PASS, "PLAT-RAS", "", "", *validity.stamps("PLAT-RAS", T0)),
             vf.Item(IDS[1], vf.FAIL, "FAB-POD", "node1", "x", *validity.stamps("FAB-POD", T0)),
             vf.Item(IDS[2], vf.PASS, "PLAT-DRIVER", "", "", *validity.stamps("PLAT-DRIVER", T0)),
             vf.Item("(tier quick)", vf.UNKNOWN, seen="past its budget")]
    vf.write(tmp_path / "verdict.json", vf.build("r", NODES, 4, items))
    assert w.due(T0 + timedelta(minutes=1)) == ([path_arg(IDS[1])], "1 of 3 items due (failed, unobserved or expired)")
    paths, _ = w.due(T0 + timedelta(minutes=11))
    assert paths == sorted([path_arg(IDS[0]), path_arg(IDS[1])])
    assert w.due(T0 + timedelta(hours=2))[0] is None    # everything due: the whole selection
    cmd = w.command(paths)
    assert cmd[3:9] == ["--atom-url", "http://h:8000", "--served-model", "m", "--tier", "quick"]
    assert cmd[9:11] == paths and f"--verdict-file={tmp_path / 'run' / 'verdict.json'}" in cmd
    vf.write(tmp_path / "verdict.json", vf.build("r", NODES, 4, items[:1]))
    assert w.due(T0 + timedelta(minutes=1))[0] == []


def test_the_cycle_count_goes_on_past_a_line_a_crash_cut(tmp_path):
    (tmp_path / HISTORY).write_text('{"cycle": 1, "test": "t", "outcome": "PASS"}\n{"cycle": 1, "ran": 1, "duration_s": 4.5}\n'
                                    '{"cycle": 2, "test": "t", "outc')
    w = Watch(tmp_path, [])
    assert w.next_cycle() == 2 and w._last() == (1, 4.5)

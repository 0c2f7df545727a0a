"""The boot and log SRV rows as declared checks (issue 35): SRV-BOOT and SRV-RENDEZVOUS judge the
boot verdict and name the place it ended, SRV-LAUNCH-LINT the launch before anything runs (per
server), SRV-ENGINE-ARGS each node's own kwargs, SRV-THROTTLE the bracket's throttle rises -- each
through the generic item (rackgate/checks/declared.py `judge`), with no server and no sim."""
from __future__ import annotations

import inspect

import pytest

from rackgate import config
from rackgate.atom.planned import Planned
from rackgate.checks import declared as items
from rackgate.errors import CouldNotObserve
from rackgate.gates import boot, lint, ras, serverlogs
from rackgate.gates.declare import Check, DeclarationError, Finding, Shown, declare
from rackgate.probes import boot as boot_probe
from rackgate.probes import launch as launch_probe
from rackgate.probes.engine_args import EngineArgs
from rackgate.probes.ras import Rise, Throttled
from rackgate.registry import checks
from rackgate.report.verdict import CheckFailed

from ..harness import REPO

pytestmark = pytest.mark.unit

RACK = config.load(REPO / "racks" / "example-gfx1250.toml")


class _Evidence:
    def __init__(self) -> None:
        self.attached: list[tuple[str, str]] = []

    def attach(self, name: str, text: str, kind: str = "text") -> None:
        self.attached.append((name, text))


class _Facts:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, object, str]] = []

    def record(self, name: str, value: object, where: str = "", unit: str = "", row: str = "") -> None:
        self.recorded.append((name, value, where))


def _item(row: str, got: object, rack=RACK) -> tuple[_Evidence, _Facts]:
    """Run one declared item on `got` as the generic module does; CheckFailed / CouldNotObserve propagate."""
    ev, fa = _Evidence(), _Facts()
    items.judge(checks()[row], rack, "server", "http://10.0.0.1:8000", ev, fa, lambda: got)
    return ev, fa


def test_the_five_rows_are_declared_with_their_scopes_and_stages():
    c = checks()
    assert {r: (c[r].per, c[r].sees) for r in ("SRV-BOOT", "SRV-RENDEZVOUS", "SRV-LAUNCH-LINT", "SRV-ENGINE-ARGS",
                                                "SRV-THROTTLE")} == {
        "SRV-BOOT": ("server", "launched"), "SRV-RENDEZVOUS": ("server", "launched"),
        "SRV-LAUNCH-LINT": ("server", "planned"), "SRV-ENGINE-ARGS": ("node", "log"), "SRV-THROTTLE": ("node", "")}


def test_a_stage_a_scope_does_not_have_is_refused():
    def judge(v: int, rack: object, where: str) -> list[str]:
        return []

    def shows(v: int, rack: object) -> list[Shown]:
        return []
    with pytest.raises(DeclarationError, match="sees"):
        declare(Check("PLAT-SHM-X", "gpu", probe=lambda on: 1, judge=judge, shows=shows, sees="launched"))


class _Verdict:
    def __init__(self, kind: str, **kw: object) -> None:
        self.kind, self.seconds, self.node, self.who, self.line, self.lineno = kind, 12.5, "node3", "", "", 0
        self.excerpt = self.hint = self.signature = self.detail = self.why = self.format_note = ""
        self.past_rendezvous: tuple[str, ...] = ()
        self.exit_code, self.ready_line_s, self.noted, self.root_cause = None, None, (), ""
        self.__dict__.update(kw)

    def summary(self) -> str:
        return f"{self.who or self.node}: {self.kind}"


class _Launched:
    attached = False

    def __init__(self, verdict: _Verdict) -> None:
        self.boot = verdict

    def log_path(self, node: str) -> str:
        return f"/tmp/rackgate/atom-{node}.log"


def _boot(kind: str, **kw: object) -> boot_probe.Boot:
    return boot_probe.boot(_Launched(_Verdict(kind, **kw)))


def test_a_fatal_line_fails_the_boot_at_the_rank_that_wrote_it_with_its_reading():
    b = _boot("fatal", who="node3/dp9", line="[rank9]: Watchdog caught collective operation timeout", lineno=812,
              signature="PyTorch NCCL watchdog timeout", hint="a collective never completed", why="an ERROR record",
              excerpt="a\nb")
    with pytest.raises(CheckFailed) as e:
        _item("SRV-BOOT", b)
    msg = str(e.value)
    assert msg.startswith("SRV-BOOT [node3/dp9] ")
    assert "line 812 of /tmp/rackgate/atom-node3.log after 12.5s" in msg
    assert "a fatal line appeared while booting (PyTorch NCCL watchdog timeout, in an ERROR record)" in msg


def test_a_ready_boot_passes_records_the_cold_start_and_a_stall_is_rendezvous_not_boot():
    ev, fa = _item("SRV-BOOT", _boot("ready", ready_line_s=11.0))
    assert fa.recorded == [("serving.cold_start_s", 12.5, "rack")]
    assert "ATOM's ready line at 11.0s" in dict(ev.attached)["boot"]
    stall = _boot("stall", line="load RCCL version 2.22", detail="600s", excerpt="last")
    with pytest.raises(CouldNotObserve, match="see SRV-RENDEZVOUS"):
        _item("SRV-BOOT", stall)
    with pytest.raises(CheckFailed, match=r"(?s)SRV-RENDEZVOUS \[node3\] .*the log stopped at 'load RCCL version 2.22' 600s"):
        _item("SRV-RENDEZVOUS", stall)


def test_rendezvous_passes_once_one_node_is_past_it_and_cannot_look_before_it():
    _item("SRV-RENDEZVOUS", _boot("fatal", who="node3/dp9", past_rendezvous=("node1",)))
    with pytest.raises(CouldNotObserve, match="ended before the NCCL rendezvous"):
        _item("SRV-RENDEZVOUS", _boot("died", detail="exited with code 2"))


def test_the_launch_lint_is_judged_per_server_at_the_node_whose_command_it_read():
    planned = Planned(RACK, lambda: {})
    got = launch_probe.launch(planned)
    assert got.where == RACK.head.name and got.env == dict(RACK.launch.env)
    _item("SRV-LAUNCH-LINT", got)  # the runbook's launch is clean
    bad = launch_probe.Launch(got.command, {**got.env, "NCCL_MNNVL_ENABLE": "0"}, "node1 pid 4242")
    with pytest.raises(CheckFailed) as e:
        _item("SRV-LAUNCH-LINT", bad)
    assert str(e.value).startswith("SRV-LAUNCH-LINT [node1 pid 4242] ") and "1 rule(s) broken" in str(e.value)
    assert lint.has_command(RACK) == ""


def test_attached_the_lint_reads_the_head_and_a_head_that_does_not_answer_is_could_not_observe():
    attached = RACK.model_copy(update={"server": RACK.server.model_copy(update={"attach_url": "http://10.0.0.1:8000"})})

    class _Down(dict):
        missing = {RACK.head.name: "ssh: connect to host 10.210.11.19 port 22: Connection refused"}
    with pytest.raises(CouldNotObserve, match="the suite did not launch this server, and its command line could not "
                                              "be read: ssh: connect"):
        launch_probe.launch(Planned(attached, _Down))
    bare = attached.model_copy(update={"nodes": []})
    assert "--atom-url without a rack file" in lint.has_command(bare)
    assert boot.launched_here(attached) == boot.ATTACHED


def _args(node: str, **kw: object) -> EngineArgs:
    return EngineArgs(node, {"max_model_len": None, "kv_cache_dtype": "fp8", **kw}, "Engine kwargs: {...}",
                      node == RACK.head.name)


def test_engine_args_are_each_nodes_own_and_the_head_records_the_facts():
    ev, fa = _item("SRV-ENGINE-ARGS", _args(RACK.head.name))
    assert ("serving.engine.kwarg", "fp8", "kv_cache_dtype") in fa.recorded
    _, other = _item("SRV-ENGINE-ARGS", _args("ct2"))
    assert other.recorded == []  # one node's facts, as baselines recorded them
    assert serverlogs.logged_args(_args("ct2", max_model_len=4096), RACK, "ct2") == [
        "'max_model_len': 4096 (a cap: K3's reasoning budget is truncated)"]


def test_throttle_judges_the_bracket_rises_of_its_node():
    gpus = ("gpu0 (card1, 0000:05:00.0)",)
    rises = {"serving load": [Rise(gpus[0], "throttle.accumulation_counter", 0, 100),
                              Rise(gpus[0], "throttle.ppt_accumulated", 0, 34)]}
    assert ras.throttled_item(Throttled("node3", rises, gpus), RACK, "node3") == [
        f"{gpus[0]} during serving load: throttled ppt 34% of the time (allowed 5%)"]
    with pytest.raises(CouldNotObserve, match="amd-smi metric --throttle failed"):
        ras.throttled_item(Throttled("node3", {"serving load": []}, gpus, "amd-smi metric --throttle failed"), RACK,
                           "node3")


def test_a_finding_keeps_its_place_and_reading_through_a_join():
    f = Finding("seen", where="node2", means="how it ended")
    assert str(f) == "seen" and (f.where, f.means) == ("node2", "how it ended")


def test_only_a_check_that_reads_a_server_log_sets_the_server_up():
    """A node check's item uses `server_logs` (launching the server, joining its xdist group) only
    with sees="log"; a server check's item the fixture of the stage it reads."""
    stages = {"server_logs", "atom_server", "planned", "served", "serving"}
    for c in checks().values():
        uses = set(inspect.signature(items.item_class(c).check).parameters) & stages
        want = {"log": {"server_logs"}, "launched": {"atom_server"}, "planned": {"planned"}}.get(
            c.sees, {"served"} if c.per == "server" else {"serving", "served"} if c.per == "rank" else set())
        assert uses == want, (c.row, uses)

"""A launched server that dies mid-gate (issue 52): its API stops answering because its process is
gone (the kernel's OOM killer: exit 137). The check that finds it is SRV-ALIVE's FAILED on the head
node naming the exit status -- not "could not observe ... connection refused" -- and the ordering then
does not run the server's later checks (a dead rank, SRV-ALIVE's). Fakes in place of the nodes (as
test_life.py); an attached server (not ours to watch) stays could-not-observe."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from rackgate.atom.client import ServerError
from rackgate.atom.life import ServerLife
from rackgate.atom.server import AtomServer
from rackgate.errors import CouldNotObserve, ServerGone
from rackgate.hooks.outcome import _gone
from rackgate.report.verdict import CheckFailed

from .test_life import RACK, READY, _attached

pytestmark = pytest.mark.unit


class RefusingClient:
    base_url, model = "http://10.0.0.1:8000", "moonshotai/Kimi-K3"

    def model_ids(self) -> list[str]:
        raise ServerError(f"GET {self.base_url}/v1/models: cannot connect ([Errno 111] Connection refused)")


@dataclass
class Proc:
    up: bool

    def alive(self) -> bool:
        return self.up

    def stop(self, grace_s: float) -> None:
        pass


@dataclass
class Rec:
    text: str


class Log:
    def __init__(self, lines: list[str]):
        self.lines = lines

    def grep(self, *patterns: str, max_matches: int = 0) -> list[Rec]:
        return [Rec(t) for t in self.lines if any(p in t for p in patterns)]


class Server(AtomServer):
    logs_of: dict[str, Log] = {}

    def node_logs(self, hosts=None):  # type: ignore[override]
        return self.logs_of


def _life(rack, head_up: bool):
    def launch(rack, hosts):
        srv = Server(rack, RefusingClient(), launched={"node1": Proc(head_up), "node2": Proc(True)},  # type: ignore[arg-type]
                     boot=READY)
        srv.logs_of = {"node1": Log(["INFO ready", "rackgate: the launch command exited with code 137"]),
                       "node2": Log([])}
        return srv
    return ServerLife(rack, {}, launch=launch)


@pytest.fixture(scope="module")
def rack():
    from rackgate.config import parse
    return parse(RACK, "rack.toml")


def test_a_launched_server_gone_mid_run_is_srv_alives_finding_with_its_exit_status(rack):
    with _life(rack, head_up=False) as life:
        with pytest.raises(ServerGone) as e:
            life.serving()
    gone = e.value
    assert isinstance(gone, CouldNotObserve)   # where a check could not start (a fixture's setup): could not observe
    assert gone.where == "node1" and "exited with code 137" in gone.seen and "SIGKILL" in gone.seen, gone.seen
    finding = _gone(gone).value           # in a check's call: the finding
    assert isinstance(finding, CheckFailed) and finding.row_id == "SRV-ALIVE" and finding.where == "node1"
    assert "OOM" in str(finding)


def test_a_server_that_is_still_up_but_refuses_is_could_not_observe(rack):
    with _life(rack, head_up=True) as life:
        with pytest.raises(CouldNotObserve) as e:
            life.serving()
    assert not isinstance(e.value, ServerGone) and "Connection refused" in str(e.value)


def test_an_attached_server_is_never_read_as_gone(rack):
    srv = Server(_attached(rack), RefusingClient(), launched={}, boot=None)  # type: ignore[arg-type]
    with ServerLife(_attached(rack), None, claim=None, launch=None, attach=lambda r, h: srv) as life:
        with pytest.raises(CouldNotObserve) as e:
            life.serving()
    assert not isinstance(e.value, ServerGone)

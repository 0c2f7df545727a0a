"""The server's life as one object (rackgate.atom.life.ServerLife), with fakes in place of the nodes:
a boot that failed is a value (SRV-BOOT's NotRun for every check that needs the server), a launch
that could not start is an error and leaves nothing claimed, the block's end stops what was launched
-- also on an exception or Ctrl-C --, an attached server is never stopped, a second launch in one
run is refused by the claim before anything is launched, and the dead ranks come from the ordering
(the `dead` it is handed), never from a check writing into it."""
from __future__ import annotations

import pytest

from rackgate.atom.life import Claim, ClaimRefused, ServerLife
from rackgate.atom.server import AtomServer, BootFailed
from rackgate.atom.watch import BootVerdict
from rackgate.config import parse
from rackgate.errors import CouldNotObserve, NotRun

pytestmark = pytest.mark.unit

RACK = """name = "two-trays"
[launch]
command = "atom serve --data-parallel-size {dp_size}"
[[nodes]]
name = "node1"
transport = "local"
data_ip = "10.0.0.1"
tray = 1
[[nodes]]
name = "node2"
transport = "local"
data_ip = "10.0.0.2"
tray = 2
"""


class FakeClient:
    def __init__(self, ids: list[str], model: str = "moonshotai/Kimi-K3"):
        self.base_url, self.model, self.ids = "http://10.0.0.1:8000", model, ids

    def model_ids(self) -> list[str]:
        return list(self.ids)


class FakeProcess:
    """A launched process: stop() is what the suite does to it (by PID in the real one)."""
    def __init__(self, stops: list[str], node: str):
        self.stops, self.node = stops, node

    def stop(self, grace_s: float) -> None:
        self.stops.append(self.node)


@pytest.fixture(scope="module")
def rack():
    r = parse(RACK, "rack.toml")
    assert [n.name for n in r.nodes] == ["node1", "node2"]
    return r


def _attached(rack):
    return rack.model_copy(update={"server": rack.server.model_copy(update={"attach_url": "http://10.0.0.9:8000"})})


def _launcher(stops: list[str], boot: BootVerdict, calls: list[str] | None = None, ids: list[str] | None = None):
    def launch(rack, hosts):
        if calls is not None:
            calls.append("launch")
        procs = {n.name: FakeProcess(stops, n.name) for n in rack.nodes}
        return AtomServer(rack, FakeClient(ids if ids is not None else [rack.server.served_model]),  # type: ignore[arg-type]
                          launched=procs, boot=boot)  # type: ignore[arg-type]
    return launch


READY = BootVerdict("ready", 3.0)
FATAL = BootVerdict("fatal", 7.5, node="node3", who="node3/dp9", signature="RCCL error")


def test_a_failed_boot_is_a_value_every_check_that_needs_the_server_reads_as_srv_boot(rack):
    stops: list[str] = []
    with ServerLife(rack, {}, launch=_launcher(stops, FATAL)) as life:
        assert life.boot is FATAL and not life.boot.ok  # the verdict, for SRV-BOOT to report
        for view in (life.ready, life.serving, life.served):
            with pytest.raises(NotRun) as e:
                view()
            assert e.value.root == "SRV-BOOT" and "node3/dp9: 'RCCL error' after 7.5s" in str(e.value), e.value
    assert sorted(stops) == ["node1", "node2"]  # what did launch is still stopped


def test_a_launch_that_cannot_start_is_an_error_and_releases_the_claim(rack, tmp_path):
    """The real launch, with no launch.command: nothing is started; the claim is let go."""
    no_command = rack.model_copy(update={"launch": rack.launch.model_copy(update={"command": ""})})
    claim = Claim(tmp_path, "worker gw0")
    with pytest.raises(BootFailed, match="no launch.command"):
        with ServerLife(no_command, {}, claim=claim):
            pass
    assert claim._fd is None


@pytest.mark.parametrize("ending", [RuntimeError("a check's bug"), KeyboardInterrupt()], ids=["exception", "ctrl-c"])
def test_the_launched_server_is_stopped_when_the_block_ends_with(rack, tmp_path, ending):
    stops: list[str] = []
    claim = Claim(tmp_path, "worker gw0")
    with pytest.raises(type(ending)):
        with ServerLife(rack, {}, claim=claim, launch=_launcher(stops, READY)) as life:
            assert life.ready().boot is READY
            raise ending
    assert sorted(stops) == ["node1", "node2"]
    assert claim._fd is None


def test_an_attached_server_is_never_launched_nor_stopped(rack):
    def never(*_):
        raise AssertionError("attached: the suite launched a server")

    srv = AtomServer(_attached(rack), FakeClient(["moonshotai/Kimi-K3"]), attached=True)  # type: ignore[arg-type]
    srv.launched = {"node1": FakeProcess(stopped := [], "node1")}  # type: ignore[dict-item]
    with ServerLife(_attached(rack), None, claim=None, launch=never, attach=lambda r, h: srv) as life:
        assert life.attached and life.boot is None and life.ready() is srv
    life.stop()
    assert stopped == []


def test_the_claim_refuses_a_second_launch_in_one_run_before_anything_is_launched(rack, tmp_path):
    stops: list[str] = []
    calls: list[str] = []
    first = Claim(tmp_path, "worker gw0 (pid 1)")
    with ServerLife(rack, {}, claim=first, launch=_launcher(stops, READY, calls)):
        with pytest.raises(ClaimRefused, match=r"launched by another worker \(worker gw0 \(pid 1\)\); worker gw1 launches none"):
            with ServerLife(rack, {}, claim=Claim(tmp_path, "worker gw1"), launch=_launcher(stops, READY, calls)):
                pass
    with pytest.raises(ClaimRefused, match="which has ended"):  # not again, once the launcher has ended
        with ServerLife(rack, {}, claim=Claim(tmp_path, "worker gw2"), launch=_launcher(stops, READY, calls)):
            pass
    assert calls == ["launch"]
    assert sorted(stops) == ["node1", "node2"]  # the one launch, stopped once


def test_dead_ranks_are_the_orderings_record_read_when_asked(rack):
    failed: list[str] = []
    with ServerLife(rack, {}, dead=lambda: failed, launch=_launcher([], READY)) as life:
        assert life.served().dead_ranks() is None
        failed.append("node3/dp9")  # SRV-ALIVE FAILED there (rackgate/hooks/order.py records it)
        got = life.served().dead_ranks()
        assert isinstance(got, NotRun) and got.root == "SRV-ALIVE" and "node3/dp9 does not answer" in str(got)


def test_a_server_that_does_not_serve_the_configured_name_is_srv_models(rack):
    with ServerLife(rack, {}, name_source="--served-model", launch=_launcher([], READY, ids=["/models/Kimi-K3"])) as life:
        assert life.ready() is life.server
        with pytest.raises(NotRun) as e:
            life.serving()
    assert e.value.root == "SRV-MODELS" and "'/models/Kimi-K3'" in str(e.value) and "--served-model" in str(e.value)


def test_the_served_view_has_no_head_to_run_on_without_nodes(rack):
    with ServerLife(rack, {}, launch=_launcher([], READY)) as life:
        with pytest.raises(CouldNotObserve, match="cannot be reached"):
            life.served().head()  # no node's log known: no head container to run the benchmark in

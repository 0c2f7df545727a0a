"""ACC-FAKE-EPLB's judgment on launch commands and Engine kwargs (ATOM's real formats)."""
import pytest

from rackgate.atom.logfacts import engine_kwargs
from rackgate.gates import void

pytestmark = pytest.mark.unit

RUNBOOK = ("python3 -m atom.entrypoints.openai_server --model /models/Kimi-K3 --served-model-name x "
           "--trust-remote-code -tp 1 --enable-expert-parallel --max-num-batched-tokens 2048 "
           "--no-enable_prefix_caching --server-port 8000")
CONFIG_B = RUNBOOK.replace("--server-port 8000", "--fake-eplb --enable_prefix_caching --server-port 8000")
# arg_utils.py: logger.info(f"Engine kwargs: {kwargs}") (objects in it are not literals)
KWARGS = ("Engine kwargs: {'model': '/models/Kimi-K3', 'max_model_len': None, 'fake_eplb': %s, "
          "'compilation_config': CompilationConfig(level=3, cudagraph_mode=<CUDAGraphMode.FULL: 2>), "
          "'speculative_config': None}")


def test_the_runbook_launch_is_clean():
    assert void.judge(RUNBOOK, {"ct1": engine_kwargs(KWARGS % "False")}) == []


def test_config_b_flag_in_the_command():
    assert void.judge(CONFIG_B, {}) == ["the launch command has --fake-eplb"]
    assert void.command_has_flag(RUNBOOK.replace("-tp 1", "-tp 1 --fake_eplb"))


def test_the_running_servers_kwargs():
    got = void.judge(None, {"ct2": engine_kwargs(KWARGS % "True"), "ct1": engine_kwargs(KWARGS % "False")})
    assert got == ["ct2: Engine kwargs has 'fake_eplb': True"]


# --- the declared check: probes/acc.py `launch` through the server object, gates/void.py ------------
class _Log:
    def __init__(self, lines: list[str], exists: bool = True):
        self.lines, self._exists = lines, exists

    def exists(self) -> bool:
        return self._exists

    def grep(self, pattern: str) -> list:
        from rackgate.atom.logs import Record
        return [Record(i + 1, ln, ln) for i, ln in enumerate(self.lines) if pattern in ln]


class _Served:
    def __init__(self, command: str, logs: dict[str, _Log], attached: bool):
        from types import SimpleNamespace
        self.rack = SimpleNamespace(launch=SimpleNamespace(command=command, log_path="/var/log/atom.log"))
        self.server = SimpleNamespace(attached=attached, node_logs=lambda: logs)


def test_launched_reads_every_node_s_last_kwargs_line_and_judges_the_flag():
    from rackgate.probes import acc
    logs = {"node1": _Log([KWARGS % "False"]), "node2": _Log([KWARGS % "False", "[atom] " + KWARGS % "True"])}
    got = acc.launch(_Served(RUNBOOK, logs, attached=False))
    assert got.command == RUNBOOK and set(got.kwargs) == {"node1", "node2"}
    assert void.launched_void(got, None, "u") == ["node2: Engine kwargs has 'fake_eplb': True"]
    assert [s.name for s in void.launched_shown(got, None)] == ["Engine kwargs (node1)", "Engine kwargs (node2)",
                                                                "launch command (rack file)"]


def test_attached_the_server_s_own_line_speaks_and_without_it_the_command_says_so():
    from rackgate.errors import CouldNotObserve
    from rackgate.probes import acc
    clean = acc.launch(_Served(CONFIG_B, {"node1": _Log([KWARGS % "False"])}, attached=True))
    assert clean.command is None and void.launched_void(clean, None, "u") == []  # the server's own line wins
    stand_in = acc.launch(_Served(CONFIG_B, {"node1": _Log(["INFO ready"])}, attached=True))
    assert void.launched_void(stand_in, None, "u") == [
        "the launch command has --fake-eplb (the rack file's launch command: the server's log was not readable)"]
    with pytest.raises(CouldNotObserve, match="no launch.command in the rack file"):
        acc.launch(_Served("", {"node1": _Log(["INFO ready"])}, attached=True))
    with pytest.raises(CouldNotObserve, match="no server log at launch.log_path .* on node1"):
        acc.launch(_Served(CONFIG_B, {"node1": _Log([], exists=False)}, attached=True))

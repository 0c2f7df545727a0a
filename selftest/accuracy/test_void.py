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

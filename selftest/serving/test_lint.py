"""SRV-LAUNCH-LINT rule by rule: the runbook's launch passes; each broken rule is one finding with
its reason, and only that rule fires."""
import pytest

from rackgate import config
from rackgate.atom.server import launch_command
from rackgate.gates import lint

from ..harness import REPO

pytestmark = pytest.mark.unit

RACK = config.load(REPO / "racks" / "example-gfx1250.toml")
CMD = launch_command(RACK, RACK.nodes[0], 0)
ENV = dict(RACK.launch.env)
FACTS = lint.Facts(hbm_gib=432, data_plane_nic="enp1s0f1", accuracy_run=True, unfused_gather_patch=True)


def test_the_runbook_launch_is_clean():
    assert lint.lint(CMD, ENV, FACTS) == []


def _env(**kw):
    e = dict(ENV)
    for k, v in kw.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


CASES = [
    ("MEGA_WIRE set", CMD, _env(MEGA_WIRE="fp4"), FACTS),
    ("MEGA_DISPATCH=flydsl with a quantizing wire", CMD, _env(MEGA_DISPATCH="flydsl"), FACTS),
    ("ATOM_USE_TRITON_MLA not 1", CMD, _env(ATOM_USE_TRITON_MLA=None), FACTS),
    ("custom all-gather pair split", CMD, _env(AITER_CUSTOM_AR_USE_SYMM_MEM=None), FACTS),
    ("custom all-gather pair split", CMD, _env(ATOM_USE_CUSTOM_ALL_GATHER="0"), FACTS),
    ("ATOM_USE_TRITON_MOE_DECODE=1", CMD, _env(ATOM_USE_TRITON_MOE_DECODE="1"), FACTS),
    ("ATOM_MOE_GU_ITLV not 1", CMD, _env(ATOM_MOE_GU_ITLV=None), FACTS),
    ("NCCL_MNNVL_ENABLE not 1", CMD, _env(NCCL_MNNVL_ENABLE="0"), FACTS),
    ("ATOM_UNFUSED_GATHER_KV_B_PROJ=1 without the patch", CMD, ENV,
     lint.Facts(hbm_gib=432, data_plane_nic="enp1s0f1", unfused_gather_patch=False)),
    ("ATOM_USE_TRITON_MLA_SHUFFLE_KV not 0 with the unfused gather", CMD, _env(ATOM_USE_TRITON_MLA_SHUFFLE_KV="1"), FACTS),
    ("--max-model-len set", CMD + " --max-model-len 32768", ENV, FACTS),
    ("--max-model-len set", CMD + " --max_model_len=32768", ENV, FACTS),
    ("--served-model-name missing", CMD.replace("--served-model-name moonshotai/Kimi-K3", ""), ENV, FACTS),
    ("--fake-eplb on an accuracy run", CMD + " --fake-eplb", ENV, FACTS),
    ("ATOM_TORCH_PROFILER_DIR instead of --torch-profiler-dir", CMD, _env(ATOM_TORCH_PROFILER_DIR="/data/p"), FACTS),
    ("profiling asked for without --torch-profiler-dir", CMD, ENV,
     lint.Facts(hbm_gib=432, data_plane_nic="enp1s0f1", profile_dir="/data/p")),
    ("socket ifname not the data-plane NIC", CMD, _env(NCCL_SOCKET_IFNAME="eno1"), FACTS),
    ("--max-num-batched-tokens 16384 on 288 GiB boards", CMD.replace("2048", "16384"), ENV,
     lint.Facts(hbm_gib=288, data_plane_nic="enp1s0f1")),
    ("--max-num-batched-tokens 16384 on 288 GiB boards", CMD.replace("--max-num-batched-tokens 2048", ""), ENV,
     lint.Facts(hbm_gib=288, data_plane_nic="enp1s0f1")),
]


@pytest.mark.parametrize("rule,cmd,env,facts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_rule_fires_alone_with_its_reason(rule, cmd, env, facts):
    found = lint.lint(cmd, env, facts)
    assert [f.rule for f in found] == [rule], found
    assert len(found[0].reason) > 30 and "\n" not in found[0].reason


def test_rules_that_hold_stay_quiet():
    assert lint.lint(CMD + " --fake-eplb", ENV, lint.Facts(accuracy_run=False)) == []
    assert lint.lint(CMD.replace("2048", "16384"), ENV, lint.Facts(hbm_gib=432)) == []
    assert lint.lint(CMD, _env(NCCL_SOCKET_IFNAME="enp1s0f1", GLOO_SOCKET_IFNAME="=enp1s0f1"), FACTS) == []
    assert lint.lint(CMD, _env(MEGA_DISPATCH="flydsl", MEGA_DISPATCH_WIRE="bf16"), FACTS) == []


def test_several_broken_rules_are_several_lines():
    found = lint.lint(CMD + " --max-model-len 4096", _env(MEGA_WIRE="fp4", NCCL_MNNVL_ENABLE=None), FACTS)
    assert {f.rule for f in found} == {"MEGA_WIRE set", "NCCL_MNNVL_ENABLE not 1", "--max-model-len set"}


def test_every_catalogue_signature_has_a_rule():
    """The catalogue row lists 15 rule signatures; the lint covers each of them (by its test above)."""
    from rackgate.catalogue import row
    assert len(row("SRV-LAUNCH-LINT").signatures) == 15
    assert len({c[0] for c in CASES}) >= 15

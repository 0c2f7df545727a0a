"""SRV-LAUNCH-LINT: the launch command and environment against every rule the runbook learned
the hard way. A pure function of the command, the environment and the rack's facts; each broken
rule is one Finding with its reason, so a launch that breaks three rules prints three lines.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config.model import Rack
from ..config.serving import LintExpect
from ..probes import argv
from ..probes import launch as probe
from ..probes.launch import NOT_LAUNCHED, Launch
from .declare import Check, Shown, declare
from .declare import Finding as Placed

ATOM_DEFAULT_BATCHED_TOKENS = 16384  # arg_utils.py default for --max-num-batched-tokens
SOCKET_IFNAMES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "MORI_SOCKET_IFNAME")
_RACK = LintExpect()  # the rack file's defaults are the one place they are written


@dataclass(frozen=True)
class Facts:
    """What the rules need to know about the rack, beyond the command and environment."""
    hbm_gib: float | None = None
    data_plane_nic: str = _RACK.data_plane_nic
    accuracy_run: bool = _RACK.accuracy_run
    unfused_gather_patch: bool = _RACK.unfused_gather_patch
    profile_dir: str = ""
    batched_tokens_limit_small_hbm: int = _RACK.batched_tokens_limit_small_hbm
    small_hbm_gib: float = _RACK.small_hbm_gib


@dataclass(frozen=True)
class Finding:
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.reason}"


def flags(command: str) -> dict[str, str | None]:
    """--flag value / --flag=value / bare --flag -> {flag: value or None}. Dashes and
    underscores are the same to ATOM's parser (--kv_cache_dtype, --kv-cache-dtype)."""
    try:
        words = argv.split(command)
    except ValueError:
        words = command.split()
    return argv.flags(words)


def _on(env: dict[str, str], key: str) -> bool:
    return env.get(key, "").strip() not in ("", "0", "false", "False")


def lint(command: str, env: dict[str, str], facts: Facts) -> list[Finding]:
    f = flags(command)
    out: list[Finding] = []

    def bad(rule: str, reason: str) -> None:
        out.append(Finding(rule, reason))

    if "MEGA_WIRE" in env:
        bad("MEGA_WIRE set", f"MEGA_WIRE={env['MEGA_WIRE']} was renamed to MEGA_DISPATCH_WIRE and is no longer read; "
            "ATOM and aiter raise when the two disagree: remove MEGA_WIRE")
    wire = env.get("MEGA_DISPATCH_WIRE", "")
    if env.get("MEGA_DISPATCH") == "flydsl" and wire in ("fp4", "fp8"):
        bad("MEGA_DISPATCH=flydsl with a quantizing wire",
            f"MEGA_DISPATCH_WIRE={wire} makes ATOM hard-wire mori (only mori carries the scale row): "
            "MEGA_DISPATCH=flydsl is inert; use MEGA_DISPATCH=mori, or flydsl with MEGA_DISPATCH_WIRE=bf16")
    if env.get("ATOM_USE_TRITON_MLA") != "1":
        bad("ATOM_USE_TRITON_MLA not 1", f"ATOM_USE_TRITON_MLA={env.get('ATOM_USE_TRITON_MLA', '<unset>')}: "
            "the first decode request SIGABRTs silently; export ATOM_USE_TRITON_MLA=1")
    ag, symm = _on(env, "ATOM_USE_CUSTOM_ALL_GATHER"), _on(env, "AITER_CUSTOM_AR_USE_SYMM_MEM")
    if ag != symm:
        have, miss = (("ATOM_USE_CUSTOM_ALL_GATHER", "AITER_CUSTOM_AR_USE_SYMM_MEM") if ag
                      else ("AITER_CUSTOM_AR_USE_SYMM_MEM", "ATOM_USE_CUSTOM_ALL_GATHER"))
        bad("custom all-gather pair split", f"{have} is set without {miss}: `assert not ca_comm.disabled` kills "
            "the ModelRunner while HTTP stays up; set both or neither")
    if env.get("ATOM_USE_TRITON_MOE_DECODE") == "1":
        bad("ATOM_USE_TRITON_MOE_DECODE=1", "K3's activation is situ, not SiLU: the Triton MoE decode asserts; "
            "set ATOM_USE_TRITON_MOE_DECODE=0")
    if env.get("ATOM_MOE_GU_ITLV") != "1":
        bad("ATOM_MOE_GU_ITLV not 1", f"ATOM_MOE_GU_ITLV={env.get('ATOM_MOE_GU_ITLV', '<unset>')}: MoE GUGU layout "
            "error on gfx1250 (required, not a tuning knob); export ATOM_MOE_GU_ITLV=1")
    if env.get("NCCL_MNNVL_ENABLE") != "1":
        bad("NCCL_MNNVL_ENABLE not 1", f"NCCL_MNNVL_ENABLE={env.get('NCCL_MNNVL_ENABLE', '<unset>')}: RCCL silently "
            "falls back to TCP sockets (~4.5 GB/s); export NCCL_MNNVL_ENABLE=1")
    unfused = env.get("ATOM_UNFUSED_GATHER_KV_B_PROJ") == "1"
    if unfused and not facts.unfused_gather_patch:
        bad("ATOM_UNFUSED_GATHER_KV_B_PROJ=1 without the patch", "the variable does nothing on stock ATOM: apply "
            "PR #2380's diff to the image's ATOM (PLAT-PATCH-SIZE) or long prompts at concurrency kill the engine")
    if unfused and env.get("ATOM_USE_TRITON_MLA_SHUFFLE_KV", "") != "0":
        bad("ATOM_USE_TRITON_MLA_SHUFFLE_KV not 0 with the unfused gather",
            f"ATOM_USE_TRITON_MLA_SHUFFLE_KV={env.get('ATOM_USE_TRITON_MLA_SHUFFLE_KV', '<unset>')}: the unfused "
            "gather has no shuffled KV layout; export ATOM_USE_TRITON_MLA_SHUFFLE_KV=0")
    if "max-model-len" in f:
        bad("--max-model-len set", f"--max-model-len {f['max-model-len']} caps K3's reasoning budget (the accuracy "
            "run needs 12288 generated tokens): drop it and let ATOM use max_position_embeddings")
    if "served-model-name" not in f:
        bad("--served-model-name missing", "/v1/models will list the model's filesystem path and clients that send "
            "the served name get 404/400: add --served-model-name {served_model}")
    if "fake-eplb" in f and facts.accuracy_run:
        bad("--fake-eplb on an accuracy run", "the router is replaced by a uniform one, the output is not the model's: "
            "accuracy results are void (drop --fake-eplb, or set serving.lint.accuracy_run = false for throughput)")
    if "ATOM_TORCH_PROFILER_DIR" in env and "torch-profiler-dir" not in f:
        bad("ATOM_TORCH_PROFILER_DIR instead of --torch-profiler-dir", "the environment variable is overridden "
            "downstream on this image ('torch_profiler_dir': None, no traces): pass --torch-profiler-dir DIR")
    elif facts.profile_dir and "torch-profiler-dir" not in f:
        bad("profiling asked for without --torch-profiler-dir", f"serving.profile_dir={facts.profile_dir} but the "
            "command has no --torch-profiler-dir: /start_profile will answer 200 and write nothing")
    if facts.data_plane_nic:
        for key in SOCKET_IFNAMES:
            val = env.get(key)
            if val is not None and val.lstrip("=") != facts.data_plane_nic:
                bad("socket ifname not the data-plane NIC", f"{key}={val}: ranks address each other over the "
                    f"data plane ({facts.data_plane_nic}), not the management port")
    if facts.hbm_gib is not None and facts.hbm_gib <= facts.small_hbm_gib:
        raw = f.get("max-num-batched-tokens")
        try:
            tokens = int(raw) if raw is not None else ATOM_DEFAULT_BATCHED_TOKENS
        except ValueError:
            tokens = None
        if tokens is not None and tokens >= facts.batched_tokens_limit_small_hbm:
            given = f"--max-num-batched-tokens {tokens}" + ("" if raw is not None else " (ATOM's default)")
            bad("--max-num-batched-tokens 16384 on 288 GiB boards", f"{given} on {facts.hbm_gib:g} GiB boards: "
                "peak_torch and the cudagraph estimate push available_for_kv negative, the server never starts; "
                "use --max-num-batched-tokens 2048")
    return out


# --- the declaration: one item per server, read before anything is launched ---------------------
# Per server, not per node: the runbook has every node run the same command and environment (only
# the node's DP rank filled in), so a broken rule lives in the one launch configuration, and a
# per-node item would repeat one finding on every node; attached, the command line is the head's.
def rack_facts(rack: Rack) -> Facts:
    cfg = rack.serving
    return Facts(hbm_gib=rack.platform.hbm_gib, data_plane_nic=cfg.lint.data_plane_nic,
                 accuracy_run=cfg.lint.accuracy_run, unfused_gather_patch=cfg.lint.unfused_gather_patch,
                 profile_dir=cfg.profile_dir, batched_tokens_limit_small_hbm=cfg.lint.batched_tokens_limit_small_hbm,
                 small_hbm_gib=cfg.lint.small_hbm_gib)


def launch_rules(got: Launch, rack: Rack, where: str) -> list[str]:
    """Every rule the launch breaks, one line each, at the node whose command it is."""
    findings = lint(got.command, got.env, rack_facts(rack))
    if not findings:
        return []
    return [Placed(f"{len(findings)} rule(s) broken:\n" + "\n".join(f"           - {f}" for f in findings), where=got.where)]


def launch_shown(got: Launch, rack: Rack) -> list[Shown]:
    return [Shown(f"launch command and environment ({got.where})",
                  got.command + "\n\n" + "\n".join(f"{k}={v}" for k, v in sorted(got.env.items())))]


def has_command(rack: Rack) -> str:
    """SKIPPED attached without a rack file: no nodes to read the command line from."""
    if rack.server.attach_url and not rack.nodes:
        return f"{NOT_LAUNCHED} (--atom-url without a rack file: no nodes to read its command line from)"
    return ""


declare(Check("SRV-LAUNCH-LINT", "server", probe=probe.launch, judge=launch_rules, shows=launch_shown,
              applies=has_command, sees="planned"))

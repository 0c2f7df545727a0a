"""What the real-engine self-tests hand to the suite and to the reference tools: a rack file for
the engine on this machine, a `docker` test double, aiperf and lm-eval command lines, and readers
of their outputs (formats observed with aiperf 0.13.0 and lm-eval 0.4.13; docs/real-engine.md).
"""
from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# `docker exec [-i] [-e K=V]... CONTAINER CMD...` run on this machine: the suite runs the rack's
# benchmark command "inside the container" (ContainerRunner); the engine here has none.
DOCKER_SHIM = """#!/bin/sh
# test double of `docker exec` for the real-engine self-tests: the engine runs on this machine
[ "$1" = exec ] || { echo "docker shim: only 'exec' is supported, got: $*" >&2; exit 125; }
shift
while [ $# -gt 0 ]; do
  case "$1" in
    -i|-t|-it) shift ;;
    -e) export "$2"; shift 2 ;;
    *) break ;;
  esac
done
shift  # the container's name
exec "$@"
"""


def docker_shim(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / "docker"
    p.write_text(DOCKER_SHIM)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def rack_file(path: Path, served_model: str, *, shim_dir: Path | None = None, max_tokens: int = 16,
              request_timeout_s: float = 600, bench_command: str = "", bench_result_path: str = "",
              bench_timeout_s: float = 900, accuracy: dict | None = None, tokenizer: str = "",
              gpus_per_node: int = 1, serving: dict | None = None) -> Path:
    """A one-node rack: this machine, attached to with --atom-url (nothing is launched).
    gpus_per_node: the DP ranks the suite counts on it: one engine is one process, one rank (the
    rack file's default, 4, made every per-rank ask four times over on the one engine); the
    engines behind the self-tests' balancer are as many ranks. serving: more keys of [serving]
    (e.g. SRV-GOLDEN's golden_max_tokens)."""
    env = {"PATH": f"{shim_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"} if shim_dir else {}
    lines = [
        'name = "realengine-cpu"',
        'container = "engine"',
        f"gpus_per_node = {gpus_per_node}",
        "",
        "[[nodes]]",
        'name = "cpu"',
        'transport = "local"',
        'data_ip = "127.0.0.1"',
        "tray = 1",
        "env = {" + ", ".join(f"{k} = {_toml_str(v)}" for k, v in env.items()) + "}",
        "",
        "[server]",
        f"served_model = {_toml_str(served_model)}",
        "",
        "[serving]",
        f"request_timeout_s = {request_timeout_s}",
        f"tokenizer = {_toml_str(tokenizer)}",
        *(f"{k} = {_toml_str(v) if isinstance(v, str) else json.dumps(v)}" for k, v in (serving or {}).items()),
        "",
        "[serving.bench]",
        f"timeout_s = {bench_timeout_s}",
        "",
        "[bench]",
        f"command = {_toml_str(bench_command)}",
        f"result_path = {_toml_str(bench_result_path)}",
        "",
        "[accuracy]",
        f"max_tokens = {max_tokens}",
    ]
    for k, v in (accuracy or {}).items():
        lines.append(f"{k} = {_toml_str(v) if isinstance(v, str) else json.dumps(v)}")
    path.write_text("\n".join(lines) + "\n")
    return path


# --- aiperf ----------------------------------------------------------------------------------
def aiperf_command(venv_bin: Path, model: str, url: str, tokenizer_dir: Path, out_dir: Path, *,
                   requests: int = 4, concurrency: int = 2, isl: int = 32, osl: int = 8,
                   model_selection: str | None = None) -> str:
    """aiperf profile against the chat endpoint. HF_HUB_OFFLINE must be unset for aiperf with a
    local tokenizer directory (it prefetches the tokenizer "into the HF cache")."""
    argv = ["env", "-u", "HF_HUB_OFFLINE", str(venv_bin / "aiperf"), "profile",
            "--model", model, "--url", url, "--endpoint-type", "chat",
            "--tokenizer", str(tokenizer_dir), "--isl", str(isl), "--osl", str(osl),
            "--request-count", str(requests), "--concurrency", str(concurrency), "--random-seed", "1",
            "--request-timeout-seconds", "600", "--output-artifact-dir", str(out_dir)]
    if model_selection:
        argv += ["--model-selection-strategy", model_selection]
    return shlex.join(argv)


def read_aiperf_export(out_dir: Path) -> dict | None:
    p = out_dir / "profile_export_aiperf.json"
    return json.loads(p.read_text()) if p.exists() else None


def aiperf_counts(export: dict) -> dict[str, float | None]:
    """request_count (successful) and error_request_count (absent when 0) of an export."""
    def metric(k):
        v = export.get(k)
        return v.get("avg") if isinstance(v, dict) else None
    return {k: metric(k) for k in ("request_count", "error_request_count", "completed_request_count",
                                   "benchmark_duration")}


# --- lm-eval ---------------------------------------------------------------------------------
LOCAL_TASK = "gsm8k_local"
NARROW = Path(__file__).resolve().parents[2] / "rackgate" / "gsm8k" / "lmeval_narrow.py"


def gsm8k_task_yaml(directory: Path, venv_python: Path, data_dir: Path) -> Path:
    """lm-eval's own gsm8k.yaml (included from the venv's lm-eval), data from local JSONL."""
    out = subprocess.run([str(venv_python), "-c", "import importlib.resources as r; "
                          "print(r.files('lm_eval') / 'tasks' / 'gsm8k' / 'gsm8k.yaml')"],
                         capture_output=True, text=True, timeout=120, check=True)
    directory.mkdir(parents=True, exist_ok=True)
    y = directory / f"{LOCAL_TASK}.yaml"
    y.write_text(f"include: {json.dumps(out.stdout.strip())}\n"
                 f"task: {LOCAL_TASK}\n"
                 "tag: []\n"
                 "dataset_path: json\n"
                 "dataset_name: null\n"
                 "dataset_kwargs:\n"
                 "  data_files:\n"
                 f"    train: {json.dumps(str(data_dir / 'train.jsonl'))}\n"
                 f"    test: {json.dumps(str(data_dir / 'test.jsonl'))}\n")
    return y


@dataclass(frozen=True)
class LmEvalRun:
    argv: list[str]
    rc: int
    seconds: float
    output: str
    out_dir: Path


def run_lm_eval(venv_bin: Path, url: str, model: str, task_dir: Path, out_dir: Path, *, limit: int,
                api: str = "completions", max_tokens: int = 128, timeout: float = 1800) -> LmEvalRun:
    """lm_eval as the runbook runs it (greedy, --log_samples), on the first `limit` questions.

    lm_eval's own CLI in the venv, started through rackgate/gsm8k/lmeval_narrow.py: the task is
    the one in task_dir (it includes lm-eval's gsm8k.yaml by path), so the index of the ~14k task
    YAMLs lm-eval ships, which it builds on every start, is not built (15 CPU s, 129 s wall at
    load 16, against 2 CPU s for the narrowed start);
    arguments, task, prompts, filters and outputs are lm_eval's, unchanged."""
    if api == "chat":
        model_type, path, extra = "local-chat-completions", "/v1/chat/completions", ["--apply_chat_template"]
    else:
        model_type, path, extra = "local-completions", "/v1/completions", []
    argv = [str(venv_bin / "python"), str(NARROW), "--model", model_type, *extra, "--tasks", LOCAL_TASK,
            "--include_path", str(task_dir), "--num_fewshot", "5", "--limit", str(limit),
            "--model_args", f"model={model},base_url={url}{path},num_concurrent=1,max_retries=1,"
                            f"timeout=900,tokenizer_backend=None,tokenized_requests=False,eos_string=</s>",
            "--gen_kwargs", f"max_tokens={max_tokens},temperature=0,top_p=1",
            "--log_samples", "--output_path", str(out_dir)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, start_new_session=True)
    return LmEvalRun(argv, proc.returncode, time.monotonic() - t0, proc.stdout + proc.stderr, out_dir)


def lm_eval_samples(out_dir: Path, task: str = LOCAL_TASK, filter_name: str = "strict-match") -> dict[int, dict]:
    """{doc_id: sample} of one filter from --log_samples: <out>/<model>/samples_<task>_<time>.jsonl
    (one line per doc and filter; the line's `exact_match` is that filter's score, its
    `filtered_resps` the extracted answer)."""
    files = sorted(out_dir.glob(f"*/samples_{task}_*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no samples_{task}_*.jsonl under {out_dir}")
    out = {}
    for line in files[-1].read_text().splitlines():
        s = json.loads(line)
        if s.get("filter") == filter_name:
            out[int(s["doc_id"])] = s
    return out


def lm_eval_results(out_dir: Path) -> dict:
    files = sorted(out_dir.glob("*/results_*.json"))
    if not files:
        raise FileNotFoundError(f"no results_*.json under {out_dir}")
    return json.loads(files[-1].read_text())

"""ACC-GSM8K: lm-evaluation-harness itself, driven as the runbook drives it, as a subprocess the
suite starts, bounds in time and ends by its process group; then its own results parsed.

The command (runbook, "GSM8K"):
  lm_eval --model local-chat-completions --apply_chat_template --tasks gsm8k --num_fewshot 5 \
    --model_args model=M,base_url=URL/v1/chat/completions,eos_string=</s>,max_retries=5,\
num_concurrent=32,timeout=1800,tokenized_requests=False,max_length=16384 \
    --gen_kwargs max_tokens=12288,temperature=0,top_p=1 --output_path DIR --log_samples
(or local-completions on /v1/completions). A rack without hub access names a local directory:
the suite then writes a task YAML that includes lm-eval's own gsm8k.yaml and changes only where
the data comes from (`dataset_path: json`, `data_files`), and runs that task, through
lmeval_narrow.py: lm_eval's CLI with its task index narrowed to that task's directory (the ~14k
shipped task files are not indexed on every start; docs/performance.md has the figures).
The API key, if any, travels in OPENAI_API_KEY (lm-eval's API models read it), never in argv.

The hang rule, for a client the suite does not drive request by request: lm-eval sends no rank
hint and its requests are not ours to time, so the check (a) asks every rank once before it starts
(the per-rank mechanism: a rank that does not answer is a FAILED then), and (b) watches lm-eval's
own progress line (`Requesting API: N/M`): once it has answered some, a stall past
max(hang_floor_s, hang_factor x the longest wait between its answers so far) -- or a request of its
timing out in its log (`Exception:TimeoutError()`, lm-eval's api_models.py) -- makes the check ask
every rank again (`Stall`, `timed_out`). docs/accuracy.md says what each outcome means.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..config.accuracy import AccuracyExpect
from ..errors import CouldNotObserve, UnrecognisedOutput
from ..gates.sanity import degenerate
from ..probes.gsm8k_results import Results, Score, describe
from ..transport.procs import Overran, run_bounded
from .data import check_dir, split_path
from .task import FLEXIBLE, STRICT, TASK, yaml_path

LOCAL_TASK = "gsm8k_local"  # the generated task's name when the data is a local directory
NARROW = Path(__file__).with_name("lmeval_narrow.py")  # lm_eval's CLI, index narrowed to --include_path
_PROGRESS = re.compile(r"Requesting API:\s*(\d+)%\|[^\r\n]*?(\d+)/(\d+)")
# lm-eval's api_models.py logs each failed request as f"Exception:{e!r}, ..., retrying." -- aiohttp's
# total timeout is asyncio's TimeoutError (repr 'TimeoutError()'), or aiohttp's own *TimeoutError
_TIMED_OUT = re.compile(r"Exception:(\w*TimeoutError)\(")


class LmEvalError(CouldNotObserve):
    """lm_eval did not produce a result; str() is one line with what it said last."""


# --- the command -------------------------------------------------------------------------------
def local_task_yaml(data_dir: str) -> str:
    """A task that is lm-eval's gsm8k with the data read from local JSONL files."""
    check_dir(data_dir)
    files = {s: str(split_path(data_dir, s).resolve()) for s in ("train", "test")}
    return (f"include: {json.dumps(str(yaml_path()))}\n"
            f"task: {LOCAL_TASK}\n"
            f"dataset_path: json\n"
            f"dataset_name: null\n"
            f"dataset_kwargs:\n"
            f"  data_files:\n"
            f"    train: {json.dumps(files['train'])}\n"
            f"    test: {json.dumps(files['test'])}\n")


@dataclass(frozen=True)
class Plan:
    argv: list[str]
    env: dict[str, str]
    task: str
    out_dir: Path

    def shown(self) -> str:
        """The command as a user would type it (no secrets: the key is in the environment)."""
        import shlex
        return " ".join(shlex.quote(a) for a in self.argv)


def new_run_dir(output_dir: str | Path, now: float | None = None) -> Path:
    """A directory of this run's own under output_dir, named for when it started
    (run-YYYYmmdd-HHMMSS-XXXXXXXX) and created here: two runs started in the same second (two racks
    from one checkout, xdist, a CI worker running twice) never read each other's results."""
    base = Path(output_dir)
    stamp = time.strftime("run-%Y%m%d-%H%M%S", time.localtime(now))
    try:
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=stamp + "-", dir=base))
    except OSError as e:
        raise CouldNotObserve(f"accuracy.output_dir {base}: no run directory could be made there "
                              f"({e.strerror or e})") from None


def plan(cfg: AccuracyExpect, url: str, model: str, out_dir: Path, limit: int = 0, api_key: str | None = None,
         python: str = sys.executable) -> Plan:
    """The lm_eval command for a server at url serving model, writing into out_dir."""
    out_dir = Path(out_dir).resolve()  # lm_eval runs in out_dir: every path it gets is absolute
    out_dir.mkdir(parents=True, exist_ok=True)
    chat = cfg.api == "chat"
    route = "/v1/chat/completions" if chat else "/v1/completions"
    model_args = {"model": model, "base_url": url.rstrip("/") + route, "eos_string": cfg.eos_string,
                  "max_retries": cfg.max_retries, "num_concurrent": cfg.num_concurrent,
                  "timeout": int(cfg.request_timeout_s), "tokenized_requests": False,
                  "max_length": cfg.max_length}
    if not chat:
        model_args["tokenizer_backend"] = None
    argv = [python, "-m", "lm_eval", "--model", "local-chat-completions" if chat else "local-completions"]
    if chat:
        argv.append("--apply_chat_template")
    task = TASK
    env = {"HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
    if cfg.gsm8k_dir:
        tasks_dir = out_dir / "tasks"
        tasks_dir.mkdir(exist_ok=True)
        (tasks_dir / f"{LOCAL_TASK}.yaml").write_text(local_task_yaml(cfg.gsm8k_dir))
        argv += ["--include_path", str(tasks_dir)]
        # the same CLI, without indexing lm-eval's ~14k shipped task files the local task never uses
        argv[1:3] = [str(NARROW)]
        task = LOCAL_TASK
        env.update({"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    argv += ["--tasks", task, "--num_fewshot", str(cfg.num_fewshot),
             "--model_args", ",".join(f"{k}={v}" for k, v in model_args.items()),
             "--gen_kwargs", f"max_tokens={cfg.max_tokens},temperature=0,top_p=1",
             "--output_path", str(out_dir), "--log_samples"]
    if cfg.fewshot_seed != 1234:
        argv += ["--seed", f"0,1234,1234,{cfg.fewshot_seed}"]
    if limit:
        argv += ["--limit", str(limit)]
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    return Plan(argv, env, task, out_dir)


# --- running it --------------------------------------------------------------------------------
@dataclass
class RunLog:
    rc: int
    seconds: float
    log_path: Path

    def last_error(self) -> str:
        """The line that says why lm_eval stopped (the exception's own line, else the last one)."""
        lines = self.tail(200).splitlines()
        for ln in reversed(lines):
            if re.match(r"^\s*[\w.]*(Error|Exception)\b.*:", ln.strip()):
                return ln.strip()[:400]
        return lines[-1].strip()[:400] if lines else "(no output)"

    def tail(self, lines: int = 15) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        text = text.replace("\r", "\n")
        return "\n".join([ln for ln in text.splitlines() if ln.strip()][-lines:])


def progress_of(log_text: str) -> tuple[int, int] | None:
    """(answered, total) from the last tqdm 'Requesting API' line lm_eval printed."""
    last = None
    for m in _PROGRESS.finditer(log_text):
        last = m
    return (int(last.group(2)), int(last.group(3))) if last else None


def timed_out(log_text: str) -> str:
    """lm-eval's own line saying a request of its timed out ('' when none)."""
    found = list(_TIMED_OUT.finditer(log_text))
    if not found:
        return ""
    m = found[-1]
    start = log_text.rfind("\n", 0, m.start()) + 1
    end = log_text.find("\n", m.end())
    return log_text[start:end if end >= 0 else None].strip()[:300]


@dataclass
class Stall:
    """lm-eval's progress against the hang rule: `seen(progress, now)` returns how long its answers
    have not moved once that is past max(floor_s, factor x the longest wait between its answers so
    far) -- the wait before its first answer counted from its first progress line -- (None: not
    stalled, or nothing answered yet: nothing back is not a hang). After a look that found every
    rank answering, `looked(now)` starts the clock again."""
    floor_s: float
    factor: float
    answered: int = 0
    since: float | None = None   # when the answers last moved (or the first progress line)
    longest_s: float = 0.0       # the longest wait between answers so far

    def bound(self) -> float:
        return max(self.floor_s, self.factor * self.longest_s)

    def seen(self, progress: tuple[int, int] | None, now: float) -> float | None:
        if progress is None:
            return None
        done, total = progress
        if self.since is None:
            self.since, self.answered = now, done
            return None
        if done > self.answered:
            self.longest_s = max(self.longest_s, now - self.since)
            self.since, self.answered = now, done
            return None
        if not self.answered or done >= total or now - self.since < self.bound():
            return None
        return now - self.since

    def looked(self, now: float) -> None:
        self.since = now


def _tail_bytes(path: Path, n: int) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - n))
        return f.read().decode(errors="replace")


# (progress, log tail, elapsed): the check's look at a running lm_eval; what it raises ends the run
Watch = Callable[[tuple[int, int] | None, str, float], None]


def execute(p: Plan, timeout_s: float, progress: Callable[[str], None] | None = None,
            progress_every_s: float = 10.0, watch: Watch | None = None, watch_every_s: float = 5.0) -> RunLog:
    """Run lm_eval to completion or to the deadline (then its process group is ended). `watch`
    looks at it every watch_every_s; an exception it raises ends lm_eval's group and propagates."""
    log_path = p.out_dir / "lm_eval.log"
    said = [0.0]

    def tick(pid: int, elapsed: float) -> None:
        text = _tail_bytes(log_path, 16384)
        pr = progress_of(text)
        if progress is not None and elapsed - said[0] >= progress_every_s - 0.01:
            said[0] = elapsed
            where = f"{pr[0]}/{pr[1]} answered" if pr else "building requests"
            progress(f"ACC-GSM8K lm_eval (pid {pid}) {elapsed:.0f}s: {where}")
        if watch is not None:
            watch(pr, text, elapsed)

    every = min(progress_every_s, watch_every_s) if watch else progress_every_s
    with open(log_path, "w") as log:
        try:
            done = run_bounded(p.argv, timeout_s, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **p.env},
                               cwd=p.out_dir, tick=tick if (progress or watch) else None, tick_s=every)
        except Overran as e:
            raise LmEvalError(f"lm_eval (pid {e.pid}) did not finish within accuracy.full_timeout_s "
                              f"({timeout_s:g}s): ended it; its log: {log_path}") from None
    return RunLog(done.rc, done.duration, log_path)


# --- its results -------------------------------------------------------------------------------
class ResultsError(UnrecognisedOutput, ValueError):
    pass


def parse_results(text: str, task: str, path: str = "") -> Results:
    """lm-eval's results_<date>.json -> the scores of one task (pure)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path or 'results'}: not JSON ({e.msg})") from None
    try:
        res = data["results"][task]
    except (KeyError, TypeError):
        raise ResultsError(f"{path or 'results'}: no results for task {task!r} "
                           f"(has: {', '.join((data.get('results') or {}).keys()) or 'none'})") from None
    scores = {}
    for key, val in res.items():
        metric, _, filt = key.partition(",")
        if metric == "exact_match" and filt and isinstance(val, (int, float)):
            se = res.get(f"exact_match_stderr,{filt}")
            scores[filt] = Score(float(val), float(se) if isinstance(se, (int, float)) else None)
    if STRICT not in scores:
        raise ResultsError(f"{path or 'results'}: task {task!r} has no exact_match,{STRICT}")
    n = (data.get("n-samples") or {}).get(task) or {}
    return Results(task, str((data.get("versions") or {}).get(task, "")), scores,
                   int(n.get("effective", 0)), int(n.get("original", 0)),
                   str(data.get("lm_eval_version", "")), path,
                   extras={"limit": (data.get("config") or {}).get("limit")})


@dataclass(frozen=True)
class Sample:
    doc_id: int
    filter: str
    target: str
    response: str
    extracted: str
    exact_match: float


def parse_samples(lines: Iterable[str]) -> list[Sample]:
    """lm-eval's samples_<task>_<date>.jsonl (--log_samples) -> one Sample per (doc, filter)."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            s = json.loads(line)
            resp = s["resps"][0][0] if s["resps"] and s["resps"][0] else ""
            filt = s["filtered_resps"][0] if isinstance(s["filtered_resps"], list) else s["filtered_resps"]
            out.append(Sample(int(s["doc_id"]), s["filter"], str(s["target"]), resp, str(filt),
                              float(s["exact_match"])))
        except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as e:
            raise ResultsError(f"samples line {n}: not an lm-eval sample ({type(e).__name__}: {e})") from None
    return out


def find_outputs(out_dir: Path, task: str) -> tuple[Path, Path | None]:
    """The newest results JSON under out_dir, and the samples file of the same run."""
    results = sorted(out_dir.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not results:
        raise ResultsError(f"lm_eval wrote no results_*.json under {out_dir}")
    res = results[-1]
    stamp = res.stem[len("results_"):]
    samples = res.parent / f"samples_{task}_{stamp}.jsonl"
    if not samples.exists():
        cands = sorted(res.parent.glob(f"samples_{task}_*.jsonl"), key=lambda p: p.stat().st_mtime)
        return res, cands[-1] if cands else None
    return res, samples


def read_outputs(out_dir: Path, task: str, fallback: str = "[invalid]") -> Results:
    res_path, samples_path = find_outputs(out_dir, task)
    results = parse_results(res_path.read_text(), task, str(res_path))
    if samples_path is not None:
        with open(samples_path) as f:
            samples = [s for s in parse_samples(f) if s.filter == STRICT]
        results.samples = len(samples)
        results.invalid = sum(1 for s in samples if s.extracted == fallback)
        bad = [s for s in samples if s.response.strip() and degenerate(s.response)]
        results.degenerate = len(bad)
        results.wrong = sum(1 for s in samples if not s.exact_match) - len(bad)
        results.sample_path = str(samples_path)
    return results


__all__ = ["plan", "execute", "Stall", "timed_out", "read_outputs", "parse_results", "parse_samples", "describe",
           "LmEvalError", "ResultsError", "Results", "Sample", "FLEXIBLE", "STRICT"]

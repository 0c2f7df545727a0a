"""Expectations for the ACC rows: the reasoning budget, GSM8K (quick gate and full lm-eval run)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import Section


class AccuracyExpect(Section):
    # The generation budget (ACC-BUDGET, the quick gate, lm-eval's gen_kwargs max_tokens): K3
    # reasons before it answers; 12288 is the validated value.
    max_tokens: int = Field(default=12288, gt=0)
    # ACC-BUDGET probe question.
    budget_prompt: str = "What is 17 + 25? Answer with the number only."
    # ACC-BUDGET asks every DP rank once (the rank hint); attached without a rack file the ranks are
    # not known: this many requests, spread by the server.
    budget_requests_attached: int = Field(default=16, ge=1)

    # --- GSM8K: data, and how lm-eval and the quick gate talk to the server ----------------
    # "" = lm-eval's own gsm8k task, data from the Hugging Face hub (openai/gsm8k, main).
    # A directory = the same task on local data, for racks without hub access: it must hold
    # test.jsonl and train.jsonl, the hub's rows (question, answer) one JSON object a line.
    gsm8k_dir: str = ""
    # "chat" = lm-eval local-chat-completions --apply_chat_template (the runbook's command);
    # "completions" = local-completions on /v1/completions.
    api: Literal["chat", "completions"] = "chat"
    # Requests in flight. --max-num-seqs is per DP rank (8 x dp16 = 128 admitted): 32 is the
    # runbook's value; too low measures the client, not the engine.
    num_concurrent: int = Field(default=32, ge=1, le=1024)
    # lm-eval model_args: retries of a failed request, per-request timeout, context length.
    max_retries: int = Field(default=5, ge=1)
    request_timeout_s: float = Field(default=1800.0, gt=0)
    max_length: int = Field(default=16384, gt=0)
    # lm-eval model_args eos_string (also a stop string).
    eos_string: str = "</s>"
    # GSM8K's shots and lm-eval's --fewshot_seed default (the sampler replays it per question).
    num_fewshot: int = Field(default=5, ge=0)
    fewshot_seed: int = 1234

    # --- ACC-GSM8K: the full lm-eval run ------------------------------------------------------
    # Validated strict-match: 0.9621 +- 0.0053 on B0 (0.9545 +- 0.0057 on A0: set it there).
    expected: float = Field(default=0.9621, gt=0, le=1)
    # The full run passes at strict-match >= expected - tolerance (two of the validated run's
    # standard errors, 2 x 0.0053).
    tolerance: float = Field(default=0.0106, ge=0, lt=1)
    # [invalid] extractions (strict-match found no "#### N") above this share fail the run
    # even when the score passes: the answer format broke (healthy K3: under 1%).
    max_invalid_rate: float = Field(default=0.02, ge=0, le=1)
    # lm-eval --limit: 0 = the full 1319 questions (the reportable number). A limited run is a
    # rehearsal: its score is not comparable with the validated one.
    full_limit: int = Field(default=0, ge=0)
    # Wall-clock bound of the lm-eval run (9 min at num_concurrent=32 on B0; 39 min on A0).
    full_timeout_s: float = Field(default=5400.0, gt=0)
    # Where lm-eval writes its results JSON and --log_samples (one timestamped folder per run).
    output_dir: str = "reports/lm-eval"

    # --- ACC-QUICK: the sequential gate -------------------------------------------------------
    # The rack passes if its strict-match accuracy is at least this (default: the full run's
    # floor, expected - tolerance) ...
    quick_pass_accuracy: float | None = Field(default=None, gt=0, lt=1)
    # ... and fails if it is at most this: a broken or badly degraded rack.
    quick_fail_accuracy: float = Field(default=0.90, gt=0, lt=1)
    # The sequential test's error rates: passing a rack at quick_fail_accuracy, failing one at
    # quick_pass_accuracy (benchmarks/quick_gate_error_rates.py measures them).
    quick_false_pass: float = Field(default=0.01, gt=0, lt=0.5)
    quick_false_fail: float = Field(default=0.05, gt=0, lt=0.5)
    # If the test has not settled after this many questions it decides on the evidence so far.
    quick_max_questions: int = Field(default=400, ge=10)
    # Wall-clock bound of the quick gate (a healthy B0 rack settles in minutes at 32 in flight).
    quick_timeout_s: float = Field(default=1800.0, gt=0)
    # Seed of the random order in which the quick gate draws test questions.
    quick_seed: int = 20260918
    # ACC-UNDER-LOAD (MLPerf TEST01): the quick gate's first `under_load_questions` questions asked
    # while filler completions keep `under_load_per_rank` requests per DP rank in flight (the load
    # SRV-DEADLOCK drives), the questions themselves num_concurrent at a time, never ramped down.
    # Their accuracy must not fall below ACC-QUICK's by more than `under_load_z` standard errors
    # of the difference (two proportions, pooled).
    under_load_per_rank: int = Field(default=4, ge=1)
    # Attached without a rack file the DP size is not known: this many fillers in flight instead.
    under_load_fillers_attached: int = Field(default=32, ge=1)
    under_load_questions: int = Field(default=64, ge=4)
    under_load_max_tokens: int = Field(default=256, ge=1)  # each filler's
    # Each filler's prompt, in words (about a token each): long enough that the fillers' prefills
    # load the server too; a rack whose model has a short context, or a CPU engine that prefills a
    # request at a time, sizes it down.
    under_load_filler_words: int = Field(default=600, ge=1)
    under_load_z: float = Field(default=2.58, gt=0)
    # Seconds between progress lines while the quick gate or lm-eval runs.
    progress_every_s: float = Field(default=10.0, gt=0)

    @property
    def floor(self) -> float:
        """The full run's pass mark."""
        return self.expected - self.tolerance

    @property
    def quick_pass(self) -> float:
        return self.floor if self.quick_pass_accuracy is None else self.quick_pass_accuracy

    @model_validator(mode="after")
    def _quick_order(self) -> AccuracyExpect:
        if not self.quick_fail_accuracy < self.quick_pass:
            raise ValueError(f"accuracy.quick_fail_accuracy ({self.quick_fail_accuracy}) must be below the "
                             f"quick gate's pass accuracy ({self.quick_pass:.4f}: quick_pass_accuracy, or "
                             f"expected - tolerance)")
        return self

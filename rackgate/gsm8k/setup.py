"""From the rack file to the GSM8K pieces: lm-eval's task, the sequential test, clients, and a
progress line that reaches the terminal while a long check runs."""
from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..atom.client import Client
from ..config.accuracy import AccuracyExpect
from ..config.model import Rack
from ..gates.sequential import Sprt
from .quick import ClientFactory
from .task import Api, Gsm8kTask

if TYPE_CHECKING:
    import pytest

log = logging.getLogger("rackgate.accuracy")


def gen_kwargs(cfg: AccuracyExpect) -> dict[str, Any]:
    """The run's --gen_kwargs (the runbook's): max_tokens from the rack file, greedy."""
    return {"max_tokens": cfg.max_tokens, "temperature": 0, "top_p": 1}


@functools.lru_cache(maxsize=4)
def _task(data_dir: str, num_fewshot: int, fewshot_seed: int, api: Api, max_tokens: int, eos: str) -> Gsm8kTask:
    return Gsm8kTask(data_dir, num_fewshot=num_fewshot, fewshot_seed=fewshot_seed, api=api,
                     gen_kwargs={"max_tokens": max_tokens, "temperature": 0, "top_p": 1}, eos_string=eos)


def task_for(cfg: AccuracyExpect) -> Gsm8kTask:
    """lm-eval's gsm8k task as the rack file's accuracy section configures the run (built once)."""
    return _task(cfg.gsm8k_dir, cfg.num_fewshot, cfg.fewshot_seed, cfg.api, cfg.max_tokens, cfg.eos_string)


def sprt_for(cfg: AccuracyExpect) -> Sprt:
    return Sprt(p_pass=cfg.quick_pass, p_fail=cfg.quick_fail_accuracy, false_pass=cfg.quick_false_pass,
                false_fail=cfg.quick_false_fail, max_n=cfg.quick_max_questions)


def clients_for(rack: Rack, url: str, model: str) -> ClientFactory:
    key = rack.server.api_key.get_secret_value() if rack.server.api_key else None
    timeout = rack.accuracy.request_timeout_s
    return lambda: Client(url, model, timeout, key)


def reporter(config: pytest.Config) -> Callable[[str], None]:
    """A progress line on the terminal (outside pytest's capture) and in the log."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:
        log.info(line)
        if tr is None:
            return
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tr.ensure_newline()
            tr.write_line(line)
    return say

"""lm-eval's own GSM8K task, built by lm-eval from the YAML it installs: nothing here retypes the
prompt format, the few-shot sampler, the stop strings, the filters or the metric.

What lm_eval does for document i of a run, this does for any i on its own:
- the context: lm-eval's sampler is one Random(fewshot_seed) shared by all documents in order,
  so document i's shots are the i-th draw. The sampler's state before each draw is recorded once
  (cheap: no text is rendered), and document i's context is then built by lm-eval's own
  `fewshot_context` from that state, exactly as in a full run;
- the request: the generation kwargs of the task plus the run's (`--gen_kwargs`), sent the way
  lm-eval's local-chat-completions / local-completions send them;
- the score: lm-eval's filter ensembles and `process_results` on an lm-eval `Instance`.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import importlib.metadata
import importlib.resources
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..probes.gsm8k_results import FLEXIBLE, STRICT
from .data import DataError, read_dir

TASK = "gsm8k"
VALIDATED_LM_EVAL = "0.4.13"  # the runbook's version; the task definition is read from this one
SEED = 1234                   # lm-eval's API models send seed=1234 with every request

Api = Literal["chat", "completions"]


class TaskError(Exception):
    """lm-eval's task could not be built; str() is one line saying why and what to do."""


def lm_eval_version() -> str:
    try:
        return importlib.metadata.version("lm_eval")
    except importlib.metadata.PackageNotFoundError:
        raise TaskError("lm-eval is not installed: pip install 'lm-eval[api]==0.4.13' "
                        "(the quick gate reads GSM8K's task definition from it)") from None


def yaml_path(task: str = TASK) -> Path:
    """The task YAML the installed lm-eval ships."""
    lm_eval_version()
    p = Path(str(importlib.resources.files("lm_eval"))) / "tasks" / task / f"{task}.yaml"
    if not p.is_file():
        raise TaskError(f"the installed lm-eval has no {p}")
    return p


def load_config(task: str = TASK) -> dict[str, Any]:
    """The task's YAML as lm-eval loads it (includes resolved, !function tags honoured)."""
    from lm_eval.tasks._yaml_loader import load_yaml
    cfg: dict[str, Any] = load_yaml(str(yaml_path(task)))
    return cfg


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """lm-eval and datasets log warnings while a task is built (custom data, defaults)."""
    loggers = [logging.getLogger(n) for n in ("lm_eval", "datasets", "huggingface_hub")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)


def _dataset_from_dir(data_dir: str) -> Any:  # a datasets.DatasetDict (datasets has no types)
    import datasets
    rows = read_dir(data_dir)
    return datasets.DatasetDict({split: datasets.Dataset.from_list(r) for split, r in rows.items()})


def _chat_history(messages: list[dict[str, str]], add_generation_prompt: bool = True) -> list[dict[str, str]]:
    """What lm-eval's API models do with a chat history: send it as is (JSON round trip)."""
    return messages


def _templates_compiled_once() -> None:
    """lm-eval renders the task's Jinja templates (doc_to_text, doc_to_target: ~12 a prompt with
    its five shots) through `utils.apply_template`, which compiles the template's source again on
    every call: 0.37 CPU s of a quick gate's 130 prompts, 0.016 with each source compiled once by
    the same environment (docs/performance.md, wave 11). The same text rendered: only the compile
    is kept. Once per process; an lm-eval without that function or environment is left as it is."""
    from lm_eval import utils
    if getattr(utils.apply_template, "rackgate_compiled_once", False) or not hasattr(utils, "env"):
        return
    compiled = functools.lru_cache(maxsize=256)(utils.env.from_string)

    def apply_template(template: str, doc: dict[str, Any]) -> str:
        return str(compiled(template).render(**doc))

    apply_template.rackgate_compiled_once = True  # type: ignore[attr-defined]
    utils.apply_template = apply_template


@dataclass(frozen=True)
class Request:
    path: str   # /v1/chat/completions or /v1/completions
    body: dict[str, Any]  # without "model": the client adds its own


class Gsm8kTask:
    """lm-eval's gsm8k task over a data set, with per-document prompts, requests and scores."""

    def __init__(self, data_dir: str = "", *, num_fewshot: int = 5, fewshot_seed: int = 1234,
                 api: Api = "chat", gen_kwargs: dict[str, Any] | None = None, eos_string: str = "</s>"):
        self.api, self.num_fewshot, self.fewshot_seed = api, num_fewshot, fewshot_seed
        cfg = load_config()
        if data_dir:
            dataset = _dataset_from_dir(data_dir)  # DataError: one line, raised as is
            cfg["custom_dataset"] = lambda **_: dataset
        self.source = data_dir or f"{cfg.get('dataset_path')} ({cfg.get('dataset_name')}) from the hub"
        from lm_eval.api.task import ConfigurableTask
        _templates_compiled_once()
        try:
            with _quiet():
                self.task = ConfigurableTask(config=cfg)
        except DataError:
            raise
        except Exception as e:  # noqa: BLE001 - the hub, the network, a broken install: one line
            hint = "" if data_dir else "; on a rack without hub access pass --gsm8k-dir DIR or set accuracy.gsm8k_dir"
            raise TaskError(f"lm-eval could not build its {TASK} task from {self.source}: "
                            f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}{hint}") from None
        # as lm_eval's evaluator does: --num_fewshot, --gen_kwargs, then the few-shot seed
        self.task.set_config(key="num_fewshot", value=num_fewshot)
        if gen_kwargs:
            self.task.set_config(key="generation_kwargs", value=dict(gen_kwargs), update=True)
        self.task.set_fewshot_seed(seed=fewshot_seed)
        self.eos_string = eos_string
        self.docs = list(self.task.eval_docs)
        self._states = self._replay_sampler()

    # --- what lm-eval would send for document i ----------------------------------------------
    def _replay_sampler(self) -> list[tuple[Any, ...]]:
        if self.num_fewshot <= 0:
            return []
        t, states = self.task, []
        same_split = t.fewshot_cfg.split == t.config.test_split
        for doc in self.docs:
            states.append(t.sampler.rnd.getstate())
            t.sampler.sample(n=self.num_fewshot, eval_doc=doc if same_split else None)
        return states

    def __len__(self) -> int:
        return len(self.docs)

    @property
    def version(self) -> str:
        return str(self.task.VERSION)

    @property
    def generation_kwargs(self) -> dict[str, Any]:
        gk: dict[str, Any] = copy.deepcopy(self.task.config.generation_kwargs)
        return gk

    def context(self, i: int) -> str | list[dict[str, str]]:
        """Document i's prompt, as lm-eval builds it in a full run: a message list (chat, few-shot
        as multi-turn, as --apply_chat_template implies) or one string (completions)."""
        if self._states:
            self.task.sampler.rnd.setstate(self._states[i])
        chat = self.api == "chat"
        ctx: str | list[dict[str, str]] = self.task.fewshot_context(
            doc=self.docs[i], num_fewshot=self.num_fewshot, apply_chat_template=chat, fewshot_as_multiturn=chat,
            chat_template=_chat_history if chat else None, gen_prefix=self.task.doc_to_prefix(self.docs[i]))
        return ctx

    def request(self, i: int) -> Request:
        """The body lm-eval's local-(chat-)completions posts for document i (model left out)."""
        gk = self.generation_kwargs
        gk.pop("do_sample", None)
        max_tokens = gk.pop("max_tokens", gk.pop("max_gen_toks", 256))
        temperature = gk.pop("temperature", 0)
        until = gk.pop("until", None) or []
        until = [until] if isinstance(until, str) else list(until)
        ctx = self.context(i)
        if self.api == "chat":
            body = {"messages": ctx, "max_tokens": max_tokens, "temperature": temperature,
                    "stop": until[:4], "seed": SEED, **gk}
            return Request("/v1/chat/completions", body)
        body = {"prompt": ctx, "max_tokens": max_tokens, "temperature": temperature, "stop": until,
                "seed": SEED, **gk}
        return Request("/v1/completions", body)

    # --- lm-eval's score of a response ---------------------------------------------------------
    def target(self, i: int) -> str:
        return str(self.task.doc_to_target(self.docs[i]))

    def filters(self) -> list[Any]:  # lm-eval's FilterEnsembles
        return list(self.task._filters)

    def score(self, i: int, response: str) -> dict[str, tuple[str, float]]:
        """filter name -> (extracted value, exact_match) for one response, by lm-eval's own
        filter ensembles and process_results (what lm_eval logs per sample)."""
        from lm_eval.api.instance import Instance
        doc = self.docs[i]
        inst = Instance(request_type="generate_until", doc=doc, arguments=("", {}), idx=0,
                        metadata=(TASK, i, 1), resps=[response])
        out = {}
        for ens in self.filters():
            ens.apply([inst])
            extracted = inst.filtered_resps[ens.name]
            metrics = self.task.process_results(doc, [extracted])
            out[ens.name] = (extracted, float(metrics["exact_match"]))
        return out

    def fallbacks(self) -> dict[str, str]:
        """filter name -> the placeholder lm-eval writes when its regex finds nothing ([invalid])."""
        out = {}
        for ens in self.filters():
            for step in ens.filters:
                f = step()
                if hasattr(f, "fallback") and isinstance(f.fallback, str):
                    out[ens.name] = f.fallback
        return out


def response_text(api: Api, body: dict[str, Any]) -> tuple[str, str | None]:
    """(the text lm-eval scores, finish_reason) from a 200 response body. lm-eval reads only
    `content` (chat) or `text` (completions); a null content becomes "" (its placeholder)."""
    try:
        choice = body["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"no choices in the response: {str(body)[:160]}") from None
    if api == "chat":
        text = (choice.get("message") or {}).get("content")
    else:
        text = choice.get("text")
    if not isinstance(text, str):  # lm-eval's placeholder for a null answer (api_models.py)
        text = os.environ.get("LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER", "")
    return text, choice.get("finish_reason")


__all__ = ["Gsm8kTask", "Request", "TaskError", "DataError", "response_text", "STRICT", "FLEXIBLE",
           "VALIDATED_LM_EVAL", "lm_eval_version"]

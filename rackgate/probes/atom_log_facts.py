"""The facts ATOM's log lines give, as types (parsed by rackgate/atom/logfacts.py, judged by
rackgate/gates/serverlogs.py): the `Memory budget:` figures, the KV budget error, and a value of
the `Engine kwargs:` repr that is not a Python literal; and the `Engine kwargs:` line's parser
(ATOM's model_engine/arg_utils.py `_get_engine_kwargs()` logs "Engine kwargs: {kwargs}", a dict repr
whose values may be objects -- CompilationConfig(...), <CUDAGraphMode.FULL: 2> -- that are not Python
literals), which SRV-ENGINE-ARGS' and ACC-FAKE-EPLB's probes read every node's log with."""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from ..errors import UnrecognisedOutput

ENGINE_KWARGS = "Engine kwargs: "


@dataclass(frozen=True)
class MemoryBudget:
    total_gpu: float | None
    utilization: float | None
    budget: float | None
    peak_torch: float | None
    cudagraph_est: float | None
    available_for_kv: float
    num_kvcache_blocks: int | None
    line: str


@dataclass(frozen=True)
class KvError:
    reserved_gb: float
    slots: int
    available_gb: float
    utilization: float | None
    line: str = ""


class Unparsed(str):
    """A value of the kwargs repr that is not a Python literal (an object's repr), kept as text."""

    def __repr__(self) -> str:
        return f"Unparsed({str(self)!r})"


class KwargsError(UnrecognisedOutput, ValueError):
    """The `Engine kwargs:` message is not a dict repr this parser can read."""


def engine_kwargs(message: str) -> dict[object, object]:
    """The dict of an `Engine kwargs: {...}` message. Literal values are evaluated with
    ast.literal_eval; anything else (CompilationConfig(...), <CUDAGraphMode.FULL: 2>) is kept as
    Unparsed text. Nothing is ever executed."""
    i = message.find(ENGINE_KWARGS)
    if i < 0:
        raise KwargsError("no 'Engine kwargs:' in the line")
    text = message[i + len(ENGINE_KWARGS):].strip()
    # Object reprs such as <CUDAGraphMode.FULL: 2> are not Python syntax: quote them first.
    text = _quote_angle_reprs(text)
    try:
        with warnings.catch_warnings():  # a log's stray backslashes must not warn in the test run
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise KwargsError(f"the kwargs repr does not parse ({e.msg} at column {e.offset})") from None
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        raise KwargsError(f"the kwargs repr does not parse ({type(e).__name__})") from None
    if not isinstance(tree.body, ast.Dict):
        raise KwargsError("the kwargs repr is not a dict")
    out: dict[object, object] = {}
    for k, v in zip(tree.body.keys, tree.body.values):
        if k is None:
            continue
        try:
            key = ast.literal_eval(k)
            hash(key)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            key = ast.get_source_segment(text, k)
        try:
            out[key] = ast.literal_eval(v)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[key] = Unparsed(_unquote_angle_reprs(ast.get_source_segment(text, v) or ""))
    return out


_ANGLE = re.compile(r"<([A-Za-z_][\w.]*(?:: [^<>]*)?)>")
_ANGLE_MARK = "__angle__"


def _quote_angle_reprs(text: str) -> str:
    return _ANGLE.sub(lambda m: repr(_ANGLE_MARK + m.group(1)), text)


def _unquote_angle_reprs(text: str) -> str:
    return re.sub(r"'" + _ANGLE_MARK + r"([^']*)'", r"<\1>", text)

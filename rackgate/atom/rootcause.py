"""The root cause of an engine that failed to start, read from its log by structure.

An engine that cannot build or load its GPU kernels for this architecture dies with a wrapper on
top (vLLM V1's `RuntimeError: Engine core initialization failed. See root cause above.`, an exit
code with nothing fatal by its words); the line that says why is earlier in the log. docs/formats.md
cites each format:

- aiter's JIT (`aiter/jit/core.py`): `[aiter] failed jit build [<module>]` followed by ten `↓`,
  the build's history (every line of it after `-->`, the compiler's output inside), closed by
  `failed jit build [<module>]` and ten `↑`. Its root cause is the first compiler diagnostic in the
  block (`file:line:col: [fatal ]error: ...`, `clang++: error: ...`), else the block's head.
- a compiler's driver diagnostic anywhere (clang's `err_drv_offload_bad_gpu_arch`,
  `unsupported HIP gpu architecture: gfx...`, as `clang: error:` / `clang++: error:`).
- rocBLAS without kernels for the architecture (Tensile host): `rocBLAS error: Cannot read
  <dir>/TensileLibrary.dat: <reason> for GPU arch : gfx...`.
- vLLM V1's engine-start records, `WorkerProc hit an exception.` (multiproc_executor.py) and
  `EngineCore failed to start.` (core.py), each a logger.exception whose traceback follows with the
  same prefix: the exception on the traceback's last line is the cause when no kernel-library line
  came before it; the wrappers that only point elsewhere (`... See root cause above.`, `... See
  stack trace for root cause.`) never are.

Lines are cleaned of ANSI colour and CRs first (aiter colours its tag and every `error:`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..lines import clean
from .logformat import Record

JIT_OPEN = re.compile(r"failed jit build \[([^\]]+)\]\s*↓")
JIT_CLOSE = re.compile(r"failed jit build \[([^\]]+)\]\s*↑")
# a clang/hipcc diagnostic: "path:12:10: fatal error: msg" or the driver's "clang++: error: msg"
COMPILER = re.compile(r"(?:^|(?<=[\s:>|\]]))((?:[^\s:]+:\d+:\d+|(?:amd)?clang(?:\+\+)?(?:-\d+)?|hipcc|ld\.lld|lld): "
                      r"(?:fatal )?error: .+)")
ARCH = re.compile(r"unsupported (?:HIP|CUDA) gpu architecture: (\S+)")
ROCBLAS = re.compile(r"rocBLAS error: Cannot read (\S*TensileLibrary\S*?): (.+?) for GPU arch : (\S+)")
ENGINE_START = ("WorkerProc hit an exception.", "EngineCore failed to start.")
# exceptions that only point elsewhere: the API server's (v1/engine/utils.py wait_for_engine_startup) and
# the executor's (multiproc_executor.py, a worker that failed to start)
WRAPPERS = ("See root cause above.", "See stack trace for root cause.")
EXC_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)(?::|$)")
CUT = 300

HINTS = {
    "kernel build": "the engine's kernel library (aiter's JIT) could not compile a module for this GPU: an image "
                    "without support for this architecture (gfx) or a broken toolchain in it; use the image built for it",
    "compiler": "the compiler does not know this GPU's architecture: the image's ROCm/LLVM predates it",
    "kernel load": "the BLAS library has no kernels for this GPU's architecture (its TensileLibrary files list the "
                   "ones it has): an image built without this arch",
    "engine start": "the engine core raised while starting: the exception names the cause",
}


@dataclass(frozen=True)
class Cause:
    lineno: int
    text: str
    kind: str   # a HINTS key

    @property
    def hint(self) -> str:
        return HINTS[self.kind]

    def said(self) -> str:
        return f"line {self.lineno}: {self.text} ({self.kind}: {self.hint})"


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= CUT else text[:CUT] + "…"


class RootCause:
    """One log's records fed in order; `best` is the first kernel-library cause (a failed JIT
    build's first compiler error, an unsupported architecture, rocBLAS without the arch's kernels),
    else the exception a vLLM engine-start record carried, else None."""

    def __init__(self) -> None:
        self.library: Cause | None = None
        self.engine: Cause | None = None
        self._jit: tuple[int, str] | None = None   # the open block's head (lineno, text)
        self._jit_error: Cause | None = None
        self._start: str | None = None             # the prefix an engine-start record's lines carry
        self._start_exc: Cause | None = None

    @property
    def best(self) -> Cause | None:
        return self.library or self.engine

    def feed(self, rec: Record) -> None:
        text = clean(rec.raw if rec.raw else rec.text)
        if self._jit is not None:
            self._in_jit(rec.lineno, text)
            return
        if (m := JIT_OPEN.search(text)) is not None:
            self._jit, self._jit_error = (rec.lineno, _cut(text[m.start():])), None
            return
        if self.library is None:
            if (m := ROCBLAS.search(text)) is not None:
                self.library = Cause(rec.lineno, _cut(text[m.start():]), "kernel load")
            elif (m := COMPILER.search(text)) is not None:
                self.library = Cause(rec.lineno, _cut(m.group(1)), "compiler")
        self._engine_start(rec, text)

    def _in_jit(self, lineno: int, text: str) -> None:
        if self._jit_error is None and (m := COMPILER.search(text)) is not None:
            self._jit_error = Cause(lineno, _cut(m.group(1)), "kernel build")
        if JIT_CLOSE.search(text) is not None:
            head = self._jit
            assert head is not None
            if self.library is None:
                self.library = self._jit_error or Cause(head[0], head[1], "kernel build")
            self._jit = None

    def _engine_start(self, rec: Record, text: str) -> None:
        """An engine-start record: its lines repeat the prefix its first line has before the
        message (vLLM's NewLineFormatter; a compose or journal prefix before that alike)."""
        at = next((text.find(s) for s in ENGINE_START if s in text), -1)
        if at >= 0:
            self._close_start()
            self._start = text[:at]
            return
        if self._start is None:
            return
        if not text.startswith(self._start):  # the record's lines ended: another writer's line
            self._close_start()
            return
        body = text[len(self._start):].strip()
        if EXC_LINE.match(body) and not any(w in body for w in WRAPPERS):
            self._start_exc = Cause(rec.lineno, _cut(body), "engine start")

    def _close_start(self) -> None:
        if self._start_exc is not None and self.engine is None:
            self.engine = self._start_exc
        self._start, self._start_exc = None, None

    def flush(self) -> Cause | None:
        """The log ended (or the verdict is due): close what is open, return the best cause."""
        if self._jit is not None and self.library is None:
            self.library = self._jit_error or Cause(self._jit[0], self._jit[1], "kernel build")
        self._jit = None
        self._close_start()
        return self.best


def find(lines: list[str]) -> Cause | None:
    """A whole log's root cause (what the boot watcher decides line by line)."""
    from .logformat import records
    rc = RootCause()
    for rec in records(lines):
        rc.feed(rec)
    return rc.flush()

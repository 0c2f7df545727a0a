"""A fatal signature is judged inside its record (rackgate.atom.dialects, signatures.Judge): its
level and its outcome decide, in every dialect an engine's log mixes. Lines are the sources'
formats (docs/formats.md)."""
import pytest

from rackgate.atom import logformat, outcome, signatures

pytestmark = pytest.mark.unit

HINT = ["HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
        "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."]
# atom/model_loader/expert_staging.py: logger.warning("Pinned staging alloc failed (%s); using unpinned.", e)
# with e a torch RuntimeError from c10_hip_check_implementation (its text ends in a newline)
PINNED = ["Pinned staging alloc failed (HIP error: out of memory", *HINT, "); using unpinned."]
MORE = "[atom {level}] 2026-12-04 13:38:47.1 - ModelRunner0/1:4242 - " \
       "/app/ATOM/atom/model_loader/expert_staging.py:377 - _staging_buffer"


judge = signatures.judge


def test_the_pinned_alloc_warning_is_evidence_not_fatal():
    fatal, noted = judge([MORE.format(level="WARNING"), *PINNED, "[atom INFO] 2026-12-04 13:38:48.0 - "
                          "ModelRunner0/1:4242 - /app/ATOM/atom/model_engine/model_runner.py:1738 - get_num_blocks",
                          "Memory budget: total_gpu=432.00GB"])
    assert fatal == [] and [(n.signature, n.level, n.outcome) for n in noted] == [("HIP error", "WARNING",
                                                                                   "using unpinned")]
    assert noted[0].rec.lineno == 2


def test_the_same_words_in_an_error_record_are_fatal_on_the_line():
    fatal, _ = judge([MORE.format(level="ERROR"), "Pinned staging alloc failed (HIP error: out of memory"])
    assert [(f.signature, f.level, f.rec.lineno) for f in fatal] == [("HIP error", "ERROR", 2)]


def test_atom_s_default_format_has_no_level_the_outcome_decides():
    lines = ["[atom 13:38:47] " + PINNED[0], *PINNED[1:], "[atom 13:38:48] Memory budget: total_gpu=432.00GB"]
    fatal, noted = judge(lines)
    assert fatal == [] and noted[0].outcome == "using unpinned"
    # the same record without the recovery: the allocation error reached nobody who handled it
    fatal, _ = judge(["[atom 13:38:47] RuntimeError: HIP error: out of memory", *HINT, "[atom 13:38:48] next"])
    assert [(f.signature, f.rec.lineno) for f in fatal] == [("HIP error", 1)]


@pytest.mark.parametrize("quiet, loud", [
    # vLLM (vllm/logger.py: "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s", %m-%d)
    ("(EngineCore_DP3 pid=4242) WARNING 12-04 13:38:47 [expert_staging.py:377] HIP error: out of memory; "
     "falling back to pageable memory",
     "(EngineCore_DP3 pid=4242) ERROR 12-04 13:38:47 [core.py:700] RuntimeError: HIP error: out of memory"),
    # older vLLM ("%(filename)s:%(lineno)d] ")
    ("WARNING 12-04 13:38:47 worker.py:12] HIP error: invalid argument, retrying",
     "ERROR 12-04 13:38:47 worker_base.py:464] RuntimeError: HIP error: invalid argument"),
    # Python logging BASIC_FORMAT, uvicorn's padded level
    ("WARNING:atom.loader:torch.OutOfMemoryError on the pinned buffer; will use default allocator",
     "ERROR:    torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB."),
    # PyTorch's c10 logging (glog layout), behind torch.distributed's rank prefix
    ("[rank3]:[W1204 13:38:47.507447385 ProcessGroupNCCL.cpp:1168] Warning: HIP error: out of memory, "
     "retrying with a smaller buffer",
     "[rank3]:[E1204 13:38:47.507447385 ProcessGroupNCCL.cpp:1168] HIP error: an illegal memory access"),
    # NCCL / RCCL: a WARN goes back to its caller as an error code; the caller's record decides
    ("node2:4242:4301 [3] NCCL WARN NET/IB : ncclSystemError on qp create, falling back to socket",
     "RuntimeError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
     "ncclSystemError: System call failed"),
    # CPython's warnings module (warnings.formatwarning) is a warning; the exception's own line is not
    ("/usr/local/lib/python3.12/dist-packages/aiter/jit/core.py:211: UserWarning: HIP error: out of memory while "
     "probing the workspace",
     "RuntimeError: HIP error: out of memory"),
    # the HIP runtime's own trace (AMD_LOG_LEVEL): :2: warning, :1: error
    (":2:hip_memory.cpp           :731 : 1234567 us: [pid:4242 tid:0x7f] hipErrorOutOfMemory on host pin, "
     "using unpinned",
     ":1:hip_code_object.cpp      :616 : 1234567 us: [pid:4242 tid:0x7f] hipErrorNoBinaryForGpu: Unable to find "
     "code object for all current devices!"),
])
def test_each_dialect_s_level_decides(quiet, loud):
    fatal, noted = judge([quiet])
    assert fatal == [] and len(noted) == 1, (fatal, noted)
    fatal, _ = judge([loud])
    assert len(fatal) == 1, fatal


def test_a_rank_prefix_names_the_rank():
    fatal, _ = judge(["[rank5]:[E1204 13:38:47.5 ProcessGroupNCCL.cpp:1168] HIP error: an illegal memory access"])
    assert logformat.rank_of(fatal[0].rec) == 5


def test_an_uncaught_traceback_is_fatal_with_the_signature_from_its_frame():
    fatal, _ = judge(["[atom 13:38:47] Traceback (most recent call last):",
                      '  File "/usr/local/lib/python3.12/dist-packages/aiter/dist/parallel_state.py", line 412',
                      "    assert not ca_comm.disabled", "AssertionError"])
    assert [(f.signature, f.why) for f in fatal] == [("assert not ca_comm.disabled",
                                                      "an uncaught traceback's final line")]


def test_an_unclosed_bracket_does_not_swallow_a_fatal_line_for_ever():
    lines = ["[atom WARNING] 2026-12-04 13:38:47.1 - MainProcess:1 - /app/ATOM/atom/x.py:1 - f",
             "loading shards (1 of 96"] + [f"shard {i}" for i in range(20)] + [
             "Memory access fault by GPU node-2 (Agent handle: 0x5a) on address 0x7f. Reason: Page not present."]
    fatal, _ = judge(lines)
    assert [f.signature for f in fatal] == ["Memory access fault by GPU"]


def test_ansi_crlf_and_progress_bars_do_not_change_the_record():
    bar = "".join(f"Loading: {i}%|#| {i}/96\r" for i in range(5))
    lines = [bar + "\x1b[33m" + MORE.format(level="WARNING") + "\x1b[0m\r\n"] + [x + "\r\n" for x in PINNED]
    fatal, noted = judge(lines)
    assert fatal == [] and noted and noted[0].outcome == "using unpinned"


@pytest.mark.parametrize("code, said", [
    (137, "128+9, SIGKILL: killed"), (139, "SIGSEGV"), (134, "SIGABRT"), (1, "a plain error exit"),
    (127, "command not found"), (None, "without the launch wrapper writing its exit status"),
])
def test_an_exit_status_reads_as_what_it_means(code, said):
    text = outcome.explain(code, "node3")
    assert said in text, text
    if code in (137, None):
        assert "dmesg" in text and "node3" in text


WORK = "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds"


@pytest.mark.parametrize("lines, signature, rank", [
    # PyTorch ProcessGroupNCCL.cpp: LOG(ERROR) << "[Rank " << rank_ << "] Watchdog caught collective operation
    # timeout: " << work << " ran for " ... behind the c10 glog prefix and torch's rank prefix
    ([f"[rank9]:[E1204 13:38:47.426415540 ProcessGroupNCCL.cpp:629] [Rank 9] Watchdog caught collective operation "
      f"timeout: {WORK} before timing out."], "PyTorch NCCL watchdog timeout", 9),
    # libstdc++'s verbose terminate handler; the rank only in the what() line of the same record
    (["terminate called after throwing an instance of 'c10::DistBackendError'",
      f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog thread terminated with exception: "
      f"[Rank 5] Watchdog caught collective operation timeout: {WORK} before timing out.",
      "Exception raised from ncclCommWatchdog at /app/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1903 "
      "(most recent call first):", "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9c"],
     "C++ terminate", 5),
    # triton/runtime/errors.py OutOfResources.__str__, raised into ATOM's run_engine (ERROR record)
    (["[atom ERROR] 2026-12-04 13:38:47.1 - EngineCore-DP11:4242 - /app/ATOM/atom/model_engine/engine_core.py:243 "
      "- run_engine", "run_engine: exception: out of resource: shared memory, Required: 98304, Hardware limit: "
      "65536. Reducing block sizes or `num_stages` may help."], "Triton out of resources", 11),
    # CPython (Python/pylifecycle.c fatal_error; faulthandler): no rank in its words
    (["Fatal Python error: Segmentation fault", "", "Current thread 0x00007fb899f39700 (most recent call first):",
      '  File "/app/ATOM/atom/model_ops/moe.py", line 486 in forward'], "Fatal Python error", None),
    # uvicorn/lifespan/on.py: logger.error("Application startup failed. Exiting.") at uvicorn's level prefix
    (["ERROR:    Traceback (most recent call last):", "ERROR:    Application startup failed. Exiting."],
     "ASGI startup failed", None),
])
def test_each_runtime_s_fatal_line_from_its_source(lines, signature, rank):
    fatal, _ = judge(lines)
    assert [f.signature for f in fatal] == [signature], fatal
    named = [logformat.rank_of(r) for r in (fatal[0].rec, *fatal[0].record) if logformat.rank_of(r) is not None]
    assert (named[0] if named else None) == rank

"""The root cause of an engine that failed to start (rackgate/atom/rootcause.py), on lines in the
sources' own formats: aiter's failed JIT build (aiter/jit/core.py: the red tag, ten arrows, the
`-->` history, the compiler's output inside; a real one quoted in ROCm/aiter's issue tracker),
clang's driver diagnostic (`err_drv_offload_bad_gpu_arch`, "unsupported %0 gpu architecture: %1"),
rocBLAS's Tensile host (`rocBLAS error: Cannot read ...TensileLibrary.dat: ... for GPU arch : gfx...`,
ROCm/ROCm#4625), vLLM V1's `WorkerProc hit an exception.` / `EngineCore failed to start.` records
under the `Engine core initialization failed. See root cause above.` wrapper -- mutated as logs
reach the suite (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.atom import rootcause, signatures
from rackgate.gates import boot as boot_gate
from rackgate.probes.boot import Boot

from ..properties.mutate import SETTINGS

pytestmark = pytest.mark.unit

AITER = "/usr/local/lib/python3.12/dist-packages/aiter"
JIT = [
    f"[aiter] [pid=4242 pname=MainProcess] start build [module_aiter_core] under {AITER}/jit/build/module_aiter_core",
    "[aiter] Current hipcc not support: -mllvm -amdgpu-coerce-illegal-types=1, skip it.",
    "[aiter] \x1b[31mfailed jit build [module_aiter_core]\x1b[0m" + "↓" * 10,
    "-->[History]: Traceback (most recent call last):",
    f'-->  File "{AITER}/jit/core.py", line 1431, in wrapper',
    "    module = get_module(md)",
    "-->ModuleNotFound\x1b[31merror:\x1b[0m No module named 'aiter.jit.module_aiter_core'",
    "-->Runtime\x1b[31merror:\x1b[0m Error building extension 'module_aiter_core': [1/2] /opt/rocm/bin/hipcc -fPIC "
    "--offload-arch=gfx1250 -c aiter_core_pybind.cu -o aiter_core_pybind.cuda.o",
    "FAILED: [code=1] aiter_core_pybind.cuda.o",
    "clang++: \x1b[31merror:\x1b[0m unsupported HIP gpu architecture: gfx1250",
    "ninja: build stopped: subcommand failed.",
    "",
    "\x1b[31mfailed jit build [module_aiter_core]\x1b[0m" + "↑" * 10,
    "Traceback (most recent call last):",
    f'  File "{AITER}/jit/core.py", line 907, in MainFunc',
    "RuntimeError: Error building extension 'module_aiter_core'",
]
# the same failure as the issue tracker quotes it: a missing header (a source diagnostic, not the driver's)
JIT_HEADER = [JIT[2], JIT[3],
              f"{AITER}_meta/csrc/include/aiter_hip_common.h:12:10: fatal \x1b[31merror:\x1b[0m 'ck_tile/core.hpp' "
              "file not found", "1 error generated when compiling for gfx1250.", JIT[12]]
ROCBLAS = ["rocBLAS error: Cannot read /opt/rocm-6.4.0/lib/rocblas/library/TensileLibrary.dat: No such file or "
           "directory for GPU arch : gfx1250",
           " List of available TensileLibrary Files : ",
           '"/opt/rocm-6.4.0/lib/rocblas/library/TensileLibrary_lazy_gfx942.dat"',
           "Aborted (core dumped)"]
P = "(EngineCore_DP0 pid=3709) ERROR 09-18 21:38:02 [core.py:1374] "
W = "(VllmWorker rank=0 pid=281) ERROR 07-15 08:54:44 [multiproc_executor.py:522] "
VLLM = [
    "(EngineCore_DP0 pid=3709) INFO 09-18 21:37:50 [gpu_worker.py:276] Available KV cache memory: 1.2 GiB",
    W + "WorkerProc hit an exception.",
    W + "Traceback (most recent call last):",
    W + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 517, in worker_busy_loop',
    W + "    output = func(*args, **kwargs)",
    W + "RuntimeError: shape '[2048, 2048]' is invalid for input of size 16777216",
    P + "EngineCore failed to start.",
    P + "Traceback (most recent call last):",
    P + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1361, in run_engine_core',
    P + "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace "
        "for root cause.",
    "(APIServer pid=3653) Traceback (most recent call last):",
    '(APIServer pid=3653)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/utils.py", line 1010, in '
    "wait_for_engine_startup",
    "(APIServer pid=3653)     raise RuntimeError(",
    "(APIServer pid=3653) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


def test_a_failed_jit_build_names_its_first_compiler_error():
    c = rootcause.find(JIT)
    assert c is not None and c.kind == "kernel build" and c.lineno == 10
    assert c.text == "clang++: error: unsupported HIP gpu architecture: gfx1250"
    c = rootcause.find(JIT_HEADER)
    assert c is not None and c.text.endswith("fatal error: 'ck_tile/core.hpp' file not found")


def test_a_failed_jit_build_without_a_compiler_line_names_its_head():
    c = rootcause.find([JIT[2], JIT[3], JIT[12]])
    assert c is not None and c.lineno == 1 and c.text.startswith("failed jit build [module_aiter_core]")


def test_rocblas_without_the_archs_kernels_and_a_bare_compiler_line():
    c = rootcause.find(ROCBLAS)
    assert c is not None and c.kind == "kernel load" and "for GPU arch : gfx1250" in c.text
    c = rootcause.find(["clang: error: unsupported HIP gpu architecture: gfx1250"])
    assert c is not None and c.kind == "compiler"


def test_vllms_wrapper_is_never_the_cause_the_workers_exception_is():
    c = rootcause.find(VLLM)
    assert c is not None and c.kind == "engine start" and c.lineno == 6
    assert c.text == "RuntimeError: shape '[2048, 2048]' is invalid for input of size 16777216"
    # the fatal-line judge alone finds nothing fatal by its words here (every traceback line is in a
    # prefixed record): without the root cause the exit would say "no fatal line seen"
    fatal, _ = signatures.judge(VLLM)
    assert not any("shape '[2048, 2048]'" in (f.rec.text if f.rec else "") for f in fatal)


def test_a_kernel_library_cause_outranks_the_exception_it_led_to():
    c = rootcause.find(JIT + VLLM)
    assert c is not None and c.kind == "kernel build"


def test_a_healthy_boot_has_no_root_cause():
    assert rootcause.find(["[aiter] start build [module_aiter_core] under /x",
                           "[aiter] [pid=1 pname=MainProcess] finish build [module_aiter_core], cost 6.4s",
                           VLLM[0], "(APIServer pid=1) INFO 03-09 12:56:57 [api_server.py:1] Starting vLLM API server"]) is None


def test_srv_boot_names_the_root_cause_before_the_line_that_decided():
    cause = rootcause.find(JIT)
    assert cause is not None
    b = Boot("fatal", 42.0, "node3", "node3/dp9", "RuntimeError: Error building extension 'module_aiter_core'", 16,
             "/tmp/atom-node3.log", signature="Python exception: RuntimeError", root_cause=f"node3 {cause.said()}")
    found = boot_gate.booted(b, None, "rack")  # type: ignore[arg-type]
    assert str(found[0]).startswith("root cause: node3 line 10: clang++: error: unsupported HIP gpu architecture: gfx1250")


# --- real lines, mutated as logs reach the suite -----------------------------------------------
PREFIXES = {
    "none": "",
    "compose": "atom-node3  | ",          # docker compose's service prefix
    "rank": "[rank3]:",                     # torch.distributed's per-rank tee
    "journal": "Dec 07 19:00:01 node3 atom[4242]: ",
}


@given(sample=st.sampled_from(["jit", "jit_header", "rocblas", "vllm"]), prefix=st.sampled_from(sorted(PREFIXES)),
       crlf=st.booleans(), ansi=st.booleans(), noise=st.integers(0, 3))
@SETTINGS
def test_the_cause_reads_the_same_whatever_the_prefix_colour_and_line_ends(sample, prefix, crlf, ansi, noise):
    lines = {"jit": JIT, "jit_header": JIT_HEADER, "rocblas": ROCBLAS, "vllm": VLLM}[sample]
    want = rootcause.find(lines)
    assert want is not None
    got_lines = [PREFIXES[prefix] + (f"\x1b[2m{x}\x1b[0m" if ansi and x else x) for x in lines]
    got_lines = ["INFO 12-07 19:00:00 [loader.py:1] loading weights"] * noise + got_lines
    got = rootcause.find([("\r\n" if crlf else "\n").join(got_lines)])  # the log read whole
    assert got is not None and (got.kind, got.text) == (want.kind, want.text)
    assert got.lineno == want.lineno + noise

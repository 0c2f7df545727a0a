"""BENCH faults: the benchmark client. The sim's benchmark is a stand-in that really sends the
requests and reports in benchmark_serving's format; these faults change how it is invoked
(edits to its command and the launch command, rackgate/sim/launch.py)."""
from ..launch import Drop, Env, Set
from . import Fault, declare

declare(
    Fault("bench-model-path", "BENCH-PREFLIGHT", "benchmark_serving without --served-model-name: every request "
          "names /models/Kimi-K3, the server refuses them all, the run 'completes' with exit 0",
          bench=(Drop("--served-model-name"),)),
    Fault("bench-over-context", "BENCH-RESULT", "prompts longer than the server accepts (--max-model-len 1024 and "
          "--random-input-len 2048): every request is refused, 'Successful requests: 0', exit 0",
          launch=(Set("--max-model-len", "1024", before="--max-num-seqs"),),
          bench=(Set("--random-input-len", "2048"),)),
    Fault("bench-old-partial", "BENCH-RESULT", "an older benchmark_serving (no FAILED row, no result file) with "
          "prompts of 128..256 words against --max-model-len 250: the longest prompts are refused, the table says "
          "'Successful requests:' short of --num-prompts and nothing else, exit 0",
          launch=(Set("--max-model-len", "250", before="--max-num-seqs"),),
          bench=(Set("--random-range-ratio", "0.5"), Drop("--save-result"), Env(SIM_OLD_CLIENT="1"))),
    Fault("bench-per-gpu", "BENCH-AGGREGATE", "the result carries ATOM's tput_per_gpu, divided by tp x pp x pcp = 1 "
          "instead of the 16 GPUs", bench=(Env(SIM_PER_GPU="1"),)),
)

"""BENCH faults: the benchmark client. The sim's benchmark is a stand-in that really sends the
requests and reports in benchmark_serving's format; these faults change how it is invoked
(edits to its command and the launch command, rackgate/sim/launch.py)."""
from ..launch import SIM_BENCH_RESULT, Drop, Env, Set
from . import Fault, RankFault, declare

# SGLang's bench_serving in place of ATOM's benchmark_serving (the sim's stand-in module, whose name
# carries `sglang.bench_serving` as the real `-m sglang.bench_serving` does): its flags, its --output-file
# of JSON lines it appends to, its per-request detail.
SGLANG_CLIENT = (Set("-m", "rackgate.sim.sglang.bench_serving"), Set("--backend", "sglang-oai"),
                 Drop("--save-result"), Drop("--result-dir"), Drop("--result-filename"), Drop("--percentile-metrics"),
                 Drop("--ignore-eos"), Set("--output-file", SIM_BENCH_RESULT), Set("--output-details"))

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
    Fault("bench-sglang-client", "BENCH-RESULT", "the benchmark is SGLang's bench_serving (its table, its "
          "--output-file of appended JSON lines, --output-details) against a healthy server: must pass",
          bench=SGLANG_CLIENT),
    Fault("bench-sglang-empty", "BENCH-RESULT", "SGLang's bench_serving while one node's ranks answer HTTP 200 with "
          "no text: it counts those requests successful (generated_texts empty, retokenized 0)",
          target="node", default="node4", rank=RankFault("empty-ranks"), bench=SGLANG_CLIENT),
    Fault("bench-empty-answers", "BENCH-RESULT", "every answer is HTTP 200 with no text: benchmark_serving counts "
          "every request successful, 'Total generated tokens: 0', exit 0", behaviours=("empty-content",)),
    Fault("bench-per-gpu", "BENCH-AGGREGATE", "the result carries ATOM's tput_per_gpu, divided by tp x pp x pcp = 1 "
          "instead of the 16 GPUs", bench=(Env(SIM_PER_GPU="1"),)),
)

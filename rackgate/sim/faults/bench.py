"""BENCH faults: the benchmark client. The sim's benchmark is a stand-in that really sends the
requests and reports in benchmark_serving's format; these faults change how it is invoked."""
from . import fault


def _bench(state, command: str) -> None:
    state.setdefault("rack_overrides", {})["bench.command"] = command


@fault("bench-model-path", "BENCH-PREFLIGHT", "benchmark_serving without --served-model-name: every request names "
       "/models/Kimi-K3, the server refuses them all, the run 'completes' with exit 0")
def _path(state):
    from ..rack import SIM_BENCH
    _bench(state, SIM_BENCH.replace(" --served-model-name {served_model}", ""))


@fault("bench-over-context", "BENCH-RESULT", "prompts longer than the server accepts (--max-model-len 1024 and "
       "--random-input-len 2048): every request is refused, 'Successful requests: 0', exit 0")
def _ctx(state):
    from ..rack import SIM_BENCH, SIM_LAUNCH
    o = state.setdefault("rack_overrides", {})
    o["launch.command"] = SIM_LAUNCH.replace(" --max-num-seqs 8", " --max-model-len 1024 --max-num-seqs 8")
    _bench(state, SIM_BENCH.replace("--random-input-len 256", "--random-input-len 2048"))


@fault("bench-per-gpu", "BENCH-AGGREGATE", "the result carries ATOM's tput_per_gpu, divided by tp x pp x pcp = 1 "
       "instead of the 16 GPUs")
def _per_gpu(state):
    from ..rack import SIM_BENCH
    _bench(state, "SIM_PER_GPU=1 " + SIM_BENCH)

"""ACC faults: accuracy."""
from . import fault


@fault("reasoning-budget", "ACC-BUDGET",
       "the gate's max_tokens is smaller than K3's reasoning (512 < ~1500): content empty, finish_reason length")
def _budget(state):
    # The real failure is configuration: a max_tokens that a reasoning model spends on thinking.
    state.setdefault("rack_overrides", {})["accuracy.max_tokens"] = 512

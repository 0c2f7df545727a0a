"""The simulated rack's GSM8K (ACC rows): the data its model answers from, which is also the
data the rack's quick gate and lm-eval run read.

state["server"]["gsm8k_dir"]  the shared GSM8K copy beside the repository when there is one,
                              else the sim's generated set (rackgate/sim/gsm8k.py)
rack_overrides accuracy.gsm8k_dir  the same directory: the sim has no hub, it serves its data
                              to the suite the way a rack without hub access does
(state["server"]["accuracy"], the model's accuracy, comes from the rack file's [sim] accuracy.)
"""
from ..gsm8k import data_dir


def healthy(state, gpus: int) -> None:
    d = str(data_dir())
    state.server.gsm8k_dir = d
    state.rack_overrides["accuracy.gsm8k_dir"] = d

"""ACC faults: accuracy. Each reproduces what the real failure looks like from outside."""
from . import fault


@fault("reasoning-budget", "ACC-BUDGET",
       "the gate's max_tokens is smaller than K3's reasoning (512 < ~1500): content empty, finish_reason length")
def _budget(state):
    # The real failure is configuration: a max_tokens that a reasoning model spends on thinking.
    state.setdefault("rack_overrides", {})["accuracy.max_tokens"] = 512


@fault("accuracy-drop", "ACC-QUICK",
       "coherent answers, but only 80% of GSM8K right (a numerics regression after an image change)")
def _accuracy_drop(state):
    # Nothing looks wrong in a single answer: the working reads well, the final number is off.
    state["server"]["accuracy"] = 0.80


@fault("answer-format", "ACC-GSM8K",
       "most answers end 'The answer is N.' without the '#### N' line: lm-eval's strict-match "
       "extracts [invalid], flexible-extract still finds the number")
def _answer_format(state):
    # The model still computes the right numbers; its answers no longer follow the shots' format
    # (a changed chat template or system prompt does this), so the reportable number collapses.
    state["server"]["faults"].append("answer-format")


@fault("fake-eplb", "ACC-FAKE-EPLB",
       "the server was launched with --fake-eplb (the throughput recipe): uniform routing, output not the model's")
def _fake_eplb(state):
    from ..rack import SIM_LAUNCH  # the runbook's launch as the sim runs it
    state.setdefault("rack_overrides", {})["launch.command"] = SIM_LAUNCH + " --fake-eplb"
    # What the flag does to the answers (ATOM: "such a run's output is garbage anyway").
    state["server"]["faults"].append("fake-eplb")

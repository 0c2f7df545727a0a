"""ACC faults: accuracy. Each reproduces what the real failure looks like from outside."""
from ..launch import Set
from . import Fault, RankFault, declare

declare(
    # The real failure is configuration: a max_tokens that a reasoning model spends on thinking.
    Fault("reasoning-budget", "ACC-BUDGET", "the gate's max_tokens is smaller than K3's reasoning (512 < ~1500): "
          "content empty, finish_reason length", overrides={"accuracy.max_tokens": 512}),
    # One rank of many whose chat answers are all reasoning (its chat template opens a reasoning
    # block it never closes, or its reasoning parser takes the answer): its completions are fine.
    Fault("rank-reasoning-length", "ACC-BUDGET", "a single DP rank's chat answers are all reasoning: the budget "
          "runs out inside it (content empty, finish_reason length); its completions are coherent",
          target="node", default="node3", rank=RankFault("reasoning-length-ranks", (1, 2))),
    Fault("rank-reasoning-stop", "ACC-BUDGET", "a single DP rank's chat answers land in reasoning_content "
          "(content empty, finish_reason stop: that rank's chat template); its completions are coherent",
          target="node", default="node4", rank=RankFault("reasoning-stop-ranks", (0, 1))),
    # Nothing looks wrong in a single answer: the working reads well, the final number is off.
    Fault("accuracy-drop", "ACC-QUICK", "coherent answers, but only 80% of GSM8K right (a numerics regression "
          "after an image change)", server={"accuracy": 0.80}),
    # The model still computes the right numbers; its answers no longer follow the shots' format
    # (a changed chat template or system prompt does this), so the reportable number collapses.
    Fault("answer-format", "ACC-GSM8K", "most answers end 'The answer is N.' without the '#### N' line: lm-eval's "
          "strict-match extracts [invalid], flexible-extract still finds the number", behaviours=("answer-format",)),
    # Numerics that depend on batch size: right at the quick gate's concurrency, wrong when full.
    Fault("batch-numerics", "ACC-UNDER-LOAD", "with every DP rank's batch busy (at least as many requests being "
          "answered as DP ranks) GSM8K answers' final number comes out one off; below that every answer is as "
          "right as before (ACC-QUICK passes)", behaviours=("batch-numerics",)),
    # The flag, and what it does to the answers (ATOM: "such a run's output is garbage anyway").
    Fault("fake-eplb", "ACC-FAKE-EPLB", "the server was launched with --fake-eplb (the throughput recipe): uniform "
          "routing, output not the model's", launch=(Set("--fake-eplb"),), behaviours=("fake-eplb",)),
)

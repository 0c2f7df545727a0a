"""GSM8K, the way lm-evaluation-harness runs it: the task definition comes from the installed
lm-eval (never retyped), the quick gate asks its questions with early stopping, and the full run
is lm_eval itself.

    task.py        lm-eval's gsm8k task (prompt, few-shot sampling, stop strings, filters, metric)
    data.py        the questions: a local directory of the hub's rows, or the hub
    scoring.py     one response -> per-filter outcome (correct / wrong / unparsed / empty)
    sequential.py  the sequential probability ratio test behind the quick gate
    quick.py       the quick gate: questions asked concurrently against any OpenAI-compatible URL
    lmeval.py      the full run: lm_eval as a tracked subprocess, its results and samples parsed
    under_load.py  ACC-UNDER-LOAD's fillers and fixed pace
    session.py     the session's runs as the ACC probes read them (probes/runs.py Runs): the quick gate
                   once, the questions under load, lm_eval under its Stall watch

ACC-FAKE-EPLB's judgment (is the run void: --fake-eplb) is rackgate/gates/void.py.
"""

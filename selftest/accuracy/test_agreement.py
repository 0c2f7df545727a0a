"""The quick gate agrees with lm-eval item by item: the same requests, the same extractions, the
same scores. The oracle is lm_eval itself (a subprocess, --log_samples) against a scripted
server on loopback that answers each question with a hard case; the quick gate then asks the
same server the same questions."""
from __future__ import annotations

import pytest

from rackgate.atom.client import Client
from rackgate.config.accuracy import AccuracyExpect
from rackgate.gsm8k import lmeval, quick
from rackgate.gsm8k.data import read_split
from rackgate.gsm8k.scoring import Outcome, judge
from rackgate.gsm8k.task import FLEXIBLE, STRICT, Gsm8kTask
from rackgate.sim.gsm8k import data_dir

from .stub import Stub

pytestmark = [pytest.mark.suite, pytest.mark.timeout(900)]

# (content, finish_reason) for test document i, from its reference answer's number
HARD = [
    lambda g: (f"Adding it up step by step.\n#### {g}", "stop"),              # right, plain
    lambda g: ("So the total is 1,234.\n#### 1,234", "stop"),                 # thousands separator
    lambda g: ("The change is negative.\n#### -5.", "stop"),                  # sign, trailing period
    lambda g: (f"#### {g}\n\nSo the answer is {g}. Happy to help!", "stop"),  # text after the answer
    lambda g: ("!" * 48, "stop"),                                             # A0 without translation
    lambda g: ("", "stop"),                                                   # empty content
    lambda g: (None, "length"),                                               # null content: budget ran out
    lambda g: (f"The answer is {g}.", "stop"),                                # no "####" line
    lambda g: (f"#### {g}.00", "stop"),                                       # decimals
    lambda g: (f"#### ${g}", "stop"),                                         # a dollar sign first
    lambda g: (f"#### {g}\n#### 7", "stop"),                                  # two final lines
    lambda g: (f"#### {int(g.replace(',', '')) + 1}", "stop"),                # wrong by one
    lambda g: (f"{g} is what I get.\nQuestion: and then?", "stop"),           # a stop string in content
]
CONCURRENCY = 4


@pytest.fixture(scope="module")
def data():
    d = str(data_dir())
    test = read_split(d, "test")[:len(HARD)]
    by_q = {row["question"].strip(): i for i, row in enumerate(test)}
    gold = [row["answer"].split("####")[-1].strip() for row in test]

    def script(question: str):
        i = by_q.get(question)
        return HARD[i](gold[i]) if i is not None else ("#### 0", "stop")
    return d, script, gold


@pytest.fixture(scope="module")
def oracle(data, tmp_path_factory):
    """lm_eval's own run against the scripted server: its samples, and the bodies it posted."""
    d, script, _ = data
    cfg = AccuracyExpect(gsm8k_dir=d, num_concurrent=CONCURRENCY, request_timeout_s=60)
    out = tmp_path_factory.mktemp("lm-eval")
    with Stub(script) as stub:
        plan = lmeval.plan(cfg, stub.url, stub.model, out, limit=len(HARD))
        run = lmeval.execute(plan, timeout_s=600)
        assert run.rc == 0, run.tail(30)
        bodies = stub.bodies("/v1/chat/completions")
    res_path, samples_path = lmeval.find_outputs(out, plan.task)
    with open(samples_path) as f:
        samples = lmeval.parse_samples(f)
    return cfg, {(s.doc_id, s.filter): s for s in samples}, bodies, lmeval.read_outputs(out, plan.task)


@pytest.fixture(scope="module")
def task(data):
    return Gsm8kTask(data[0], num_fewshot=5, fewshot_seed=1234, api="chat",
                     gen_kwargs={"max_tokens": 12288, "temperature": 0, "top_p": 1})


def test_lm_eval_scored_every_hard_case(oracle):
    _, samples, _, results = oracle
    assert {doc for doc, _ in samples} == set(range(len(HARD)))
    assert results.n_samples == len(HARD)


def test_same_requests_as_lm_eval(oracle, task, data):
    """What the quick gate would post for each document is what lm_eval posted."""
    _, _, bodies, _ = oracle
    test = read_split(data[0], "test")
    for i in range(len(HARD)):
        theirs = dict(bodies[test[i]["question"].strip()])
        ours = {"model": theirs["model"], **task.request(i).body}
        assert ours == theirs, f"document {i}: the quick gate's request differs from lm_eval's"


def test_same_verdict_per_item_as_lm_eval(oracle, task, data):
    """The quick gate's scorer on lm_eval's own responses: same extraction and score, every filter."""
    _, samples, _, _ = oracle
    for i in range(len(HARD)):
        resp = samples[(i, STRICT)].response
        mine = judge(task, i, resp)
        for f in (STRICT, FLEXIBLE):
            s = samples[(i, f)]
            assert (mine.filters[f].extracted, mine.filters[f].exact_match) == (s.extracted, s.exact_match), \
                f"document {i} ({resp!r}), {f}"


def test_quick_gate_end_to_end_agrees(oracle, task, data):
    """Asked over HTTP by the quick gate itself, the same server gives the same verdicts."""
    _, samples, _, _ = oracle
    _, script, _ = data
    with Stub(script) as stub:
        items = list(quick.ask(task, lambda: Client(stub.url, stub.model, 30), range(len(HARD)), CONCURRENCY, 60))
    assert [it.doc for it in items] == list(range(len(HARD)))
    for it in items:
        for f in (STRICT, FLEXIBLE):
            s = samples[(it.doc, f)]
            assert (it.filters[f].extracted, it.filters[f].exact_match) == (s.extracted, s.exact_match), \
                f"document {it.doc} ({it.response!r}), {f}"


def test_could_not_parse_is_its_own_outcome(oracle, task):
    """lm-eval scores [invalid] as wrong; the gate scores it the same and names it differently."""
    _, samples, _, _ = oracle
    got = {i: judge(task, i, samples[(i, STRICT)].response) for i in range(len(HARD))}
    assert got[0].strict.outcome is Outcome.CORRECT
    assert got[1].strict.outcome is Outcome.WRONG and got[1].strict.extracted == "1,234"
    assert got[2].strict.outcome is Outcome.WRONG and got[2].strict.extracted == "-5."
    assert got[3].strict.outcome is Outcome.CORRECT
    assert got[4].strict.outcome is Outcome.UNPARSED and samples[(4, STRICT)].extracted == "[invalid]"
    assert got[5].strict.outcome is Outcome.EMPTY and got[6].strict.outcome is Outcome.EMPTY
    assert got[7].strict.outcome is Outcome.UNPARSED and got[7].flexible.outcome is Outcome.CORRECT
    assert got[9].strict.outcome is Outcome.UNPARSED and got[9].flexible.outcome is Outcome.CORRECT
    for it in got.values():  # the score is lm-eval's whatever the name
        assert it.strict.exact_match == samples[(it.doc, STRICT)].exact_match

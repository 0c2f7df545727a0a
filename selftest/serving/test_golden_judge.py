"""SRV-GOLDEN's parser, distances, band, reading and golden-set storage (no server)."""
import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate import baseline as bl
from rackgate.baseline import golden as store
from rackgate.errors import UnrecognisedOutput
from rackgate.gates import golden
from rackgate.probes.golden import Completion, parse, pieces

pytestmark = pytest.mark.unit

# A vLLM /v1/completions choice with `logprobs: 2` (CompletionLogProbs: text_offset,
# token_logprobs, tokens, top_logprobs; the chosen token is in its top dict).
VLLM_CHOICE = {
    "index": 0, "text": " Paris. It is",
    "logprobs": {"text_offset": [24, 30, 31, 34], "token_logprobs": [-0.0123, -0.4011, -1.2093, -0.0871],
                 "tokens": [" Paris", ".", " It", " is"],
                 "top_logprobs": [{" Paris": -0.0123, " a": -4.9}, {".": -0.4011, ",": -1.3},
                                  {" It": -1.2093, " The": -0.9}, {" is": -0.0871, " has": -2.6}]},
    "finish_reason": "length", "stop_reason": None, "prompt_logprobs": None}
# transformers serve on /v1/completions: logprobs null.
TRANSFORMERS_CHOICE = {"index": 0, "text": " Paris, the city of lights.", "logprobs": None, "finish_reason": "length"}


def comp(tokens, lps=None, tops=None, prompt="p", rank=None):
    lps = tuple(lps if lps is not None else [-0.02] * len(tokens))
    tops = tuple(tops if tops is not None else [{t: lp, " the": -5.0} for t, lp in zip(tokens, lps)])
    return Completion(prompt, "".join(tokens), tuple(tokens), lps, tops, rank)


def test_parses_the_openai_completion_logprobs_as_vllm_returns_them():
    c = parse("capital", VLLM_CHOICE, rank=3)
    assert c.tokens == (" Paris", ".", " It", " is") and c.rank == 3 and c.has_logprobs
    assert c.logprobs[1] == -0.4011 and c.top[2] == {" It": -1.2093, " The": -0.9}


def test_without_logprobs_the_text_is_compared_in_word_pieces():
    c = parse("capital", TRANSFORMERS_CHOICE)
    assert not c.has_logprobs and c.tokens == pieces(TRANSFORMERS_CHOICE["text"])
    assert "".join(c.tokens) == TRANSFORMERS_CHOICE["text"]


@pytest.mark.parametrize("mutate", [
    lambda lp: lp.pop("tokens"),
    lambda lp: lp["token_logprobs"].pop(),
    lambda lp: lp["token_logprobs"].__setitem__(0, "x"),
    lambda lp: lp["token_logprobs"].__setitem__(2, None),
    lambda lp: lp["tokens"].__setitem__(1, 7),
    lambda lp: lp["top_logprobs"].__setitem__(0, [" Paris", -0.1]),
    lambda lp: lp["top_logprobs"][1].__setitem__(",", "high"),
])
def test_logprobs_it_does_not_recognise_whole_are_never_read(mutate):
    choice = copy.deepcopy(VLLM_CHOICE)
    mutate(choice["logprobs"])
    with pytest.raises(UnrecognisedOutput):
        parse("capital", choice)


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.text(max_size=4),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=4), kids, max_size=4),
                    max_leaves=12),
       st.sampled_from(["tokens", "token_logprobs", "top_logprobs", "text", "logprobs"]))
def test_any_mutated_answer_is_read_whole_or_refused(junk, field):
    choice = copy.deepcopy(VLLM_CHOICE)
    if field in ("text", "logprobs"):
        choice[field] = junk
    else:
        choice["logprobs"][field] = junk
    try:
        c = parse("capital", choice)
    except UnrecognisedOutput:
        return
    assert len(c.tokens) == len(c.logprobs) or not c.has_logprobs
    assert all(isinstance(x, float) and not math.isnan(x) for x in c.logprobs)


def test_distance_names_the_first_divergent_token_and_the_logprob_moves():
    ref = comp([" a", " b", " c", " d"], [-0.1, -0.2, -0.3, -0.4])
    assert golden.distance(ref, ref) == golden.Distance(None, 0.0, 0.0, 0)
    now = comp([" a", " b", " x", " d"], [-0.1, -0.5, -0.3, -0.4])
    d = golden.distance(ref, now)
    assert d.diverge_at == 2 and d.dlogprob == pytest.approx(0.3) and d.worst_at == 1 and d.kl > 0
    assert golden.distance(ref, comp([" a", " b"])).diverge_at == 2  # stopped early: diverges where it stopped


def test_kl_takes_the_new_top_k_floor_for_a_token_that_left_it():
    ref = comp([" a"], [-0.1], [{" a": -0.1, " b": -2.5}])
    now = comp([" a"], [-0.1], [{" a": -0.1, " c": -3.0}])
    assert golden.distance(ref, now).kl == pytest.approx(math.exp(-2.5) * (-2.5 + 3.0))


def test_without_logprobs_only_tokens_are_compared():
    ref, now = Completion("p", " a b", (" a", " b")), Completion("p", " a c", (" a", " c"))
    d = golden.distance(ref, now)
    assert d.diverge_at == 1 and d.dlogprob is None and d.kl is None
    assert golden.Distance(None, None, None).within(golden.Band(0, 0))


def test_band_is_the_floor_or_noise_times_what_healthy_recordings_moved():
    a, b = comp([" x", " y"], [-0.1, -0.2]), comp([" x", " y"], [-0.15, -0.2])
    floor = golden.Band(0.1, 0.01)
    assert golden.band({"p": [a]}, floor, 3.0) == floor  # one recording: nothing learned
    wide = golden.band({"p": [a, b]}, golden.Band(0.01, 0.0), 3.0)
    assert wide.logprob == pytest.approx(0.15) and wide.kl > 0
    flipped = comp([" x", " z"], [-0.1, -0.2])  # another healthy answer: accepted, not learned as noise
    assert golden.band({"p": [a, flipped]}, floor, 3.0) == floor


def test_an_answer_passes_when_one_golden_answer_has_its_tokens_within_the_band():
    tol = golden.Band(0.1, 0.05)
    g1, g2 = comp([" x", " y"]), comp([" x", " z"])
    assert golden.drift([g1, g2], comp([" x", " z"]), tol) is None
    moved = golden.drift([g1, g2], comp([" x", " y"], [-0.02, -0.5]), tol)
    assert moved is not None and moved.golden is g1 and moved.position() == 1
    assert "golden" in moved.side_by_side() and "this" in moved.side_by_side()
    with pytest.raises(ValueError):
        golden.drift([], g1, tol)  # nothing to compare with: no verdict


TABLE = {r: f"node{r // 4 + 1}" for r in range(16)}


def _answers(bad_ranks):
    good = comp([" x", " y"])
    out, drifts = [], []
    for r in range(16):
        a = comp([" x", " q"] if r in bad_ranks else [" x", " y"], rank=r)
        out.append(a)
        if r in bad_ranks:
            drifts.append(golden.drift([good], a, golden.Band(0.1, 0.01)))
    return drifts, out


def test_one_rank_reads_as_hardware_and_names_rank_node_prompt_position():
    drifts, answers = _answers({9})
    r = golden.read(drifts, answers, TABLE, "http://x", True)
    assert r.where == "node3/dp9"
    assert "1 of 16 ranks drift (dp9)" in r.text and "hardware" in r.text
    assert "node3/dp9 'p' at position 1" in r.text and "golden ' x y'" in r.text and "this ' x q'" in r.text


def test_one_nodes_ranks_read_as_that_node_and_every_rank_as_an_image_change():
    drifts, answers = _answers({4, 5, 6, 7})
    r = golden.read(drifts, answers, TABLE, "http://x", True)
    assert r.where == "node2" and "every rank of node2 and no other" in r.text
    drifts, answers = _answers(set(range(16)))
    r = golden.read(drifts, answers, TABLE, "http://x", False)
    assert r.where == "http://x" and "an image change" in r.text and "tokens alone compared" in r.text


def test_without_the_rank_hint_the_share_is_said():
    good = comp([" x", " y"])
    answers = [comp([" x", " y"]), comp([" x", " q"]), comp([" x", " y"])]
    drifts = [d for a in answers if (d := golden.drift([good], a, golden.Band(0.1, 0.01)))]
    r = golden.read(drifts, answers, {}, "http://lb", False)
    assert r.where == "http://lb" and "1 of 3 answers (33%) drift" in r.text and "not known" in r.text


def test_recording_twice_merges_and_another_prompt_set_shape_replaces():
    a = comp([" x", " y"], rank=0, prompt="capital")
    b = comp([" x", " y"], [-0.03, -0.02], rank=1, prompt="capital")
    one = store.recording([a, a], 32, 5, 16)
    assert one["answers"]["capital"][0]["seen"] == 2 and one["runs"] == 1
    two = store.merge(one, store.recording([a, b], 32, 5, 16))
    assert two["runs"] == 2 and [x["seen"] for x in two["answers"]["capital"]] == [3, 1]
    assert two["answers"]["capital"][1]["ranks"] == [1]
    gs = store.load(json.loads(json.dumps(two)))
    assert gs is not None and len(gs.answers["capital"]) == 2 and gs.logprobs
    assert store.merge(two, store.recording([a], 64, 5, 16))["runs"] == 1  # other max_tokens: replaced
    with pytest.raises(store.GoldenError):
        store.load({"answers": {"capital": [{"text": 1}]}})


def test_the_prompt_set_is_versioned_package_data():
    ps = store.prompt_set()
    assert ps.version and len(ps.prompts) >= 8 and len(set(ps.prompts.values())) == len(ps.prompts)


def test_the_baseline_file_keeps_the_golden_set_beside_the_facts(tmp_path):
    p = tmp_path / "b.json"
    prov = {"rack": "r", "image": "i1", "image_id": "x"}
    rec = store.recording([comp([" x"], prompt="capital")], 32, 5, 16)
    bl.write(p, [bl.Fact("a.b", 1.0)], prov, merge=True, sets={store.KEY: rec})
    bl.write(p, [bl.Fact("a.b", 2.0)], prov, merge=True, sets={store.KEY: rec})
    got = bl.load(p)
    assert got is not None and got.sets[store.KEY]["runs"] == 2
    bl.write(p, [bl.Fact("a.b", 3.0)], prov, merge=True)  # a run that recorded no golden set keeps it
    assert bl.load(p).sets[store.KEY]["runs"] == 2
    bl.write(p, [bl.Fact("a.b", 3.0)], {**prov, "image": "i2"}, merge=True)  # another image: replaced
    assert store.KEY not in bl.load(p).sets


def test_the_prompts_are_asked_prompt_by_prompt_so_each_batch_keeps_every_rank_busy():
    ps = store.PromptSet("t", {f"p{i}": f"prompt {i}" for i in range(8)})
    ranks = list(range(16))
    asks = store.asks(ps, ranks)
    assert sorted((a.prompt, a.rank) for a in asks) == sorted((t, r) for t in ps.prompts.values() for r in ranks)
    for i in range(0, len(asks), 16):  # golden_concurrency's batches: 16 ranks each, not two
        assert {a.rank for a in asks[i:i + 16]} == set(ranks)
    attached = store.asks(ps, [None] * 4)  # spread by the server: one prompt's repeats together
    assert [a.prompt for a in attached[:4]] == ["prompt 0"] * 4 and {a.rank for a in attached} == {None}

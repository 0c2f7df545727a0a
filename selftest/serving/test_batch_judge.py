"""SRV-BATCH without a server: the launch command's graph-capture sizes (ATOM's and vLLM's forms,
and mutated real lines), the buckets, and the judge (rackgate/gates/batch.py `rank_batch`): a rank
whose answers move under one condition FAILS naming the condition, the prompt, the position and
both continuations; the others pass; logprob moves inside the floors pass, outside fail; a hang is
SRV-DEADLOCK's; errors while others answered are the rank's FAILED; nothing back refuses to judge.
The sim runs: the matrix cases batch-mixed-topk, batch-bucket, batch-cache (catalogue/matrix/srv.toml)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate.config.serving import ServingExpect
from rackgate.errors import CouldNotObserve
from rackgate.gates import batch
from rackgate.gates.declare import UNRANKED, Finding, Ranked
from rackgate.probes import batch as probe
from rackgate.probes.batch import ALONE, Batched, Run, Said
from rackgate.probes.golden import Completion
from rackgate.probes.served import Hang

pytestmark = pytest.mark.unit

TABLE = {r: "node1" if r < 2 else "node2" for r in range(4)}
RACK = SimpleNamespace(serving=ServingExpect())
GOOD = (" 6", ",", " 7", ",", " 8", ",")
FLIP = (" 6", ",", " 7", ",", " 9", ",")
CONDS = (ALONE, "bucket 2", "bucket 4", probe.mixed(tuple(k for k, _ in probe.KINDS)), "cache hit (the same prompt again)")

# The runbook's launch (racks/example-gfx1250.toml) and ATOM's own default, as written on a command line.
ATOM_LAUNCH = ("python3 -m atom.entrypoints.openai_server --model /models/Kimi-K3 -tp 1 --kv_cache_dtype fp8 "
               "--cudagraph-capture-sizes \"[1,2,4,8,16,32,48,64,128,256]\" --max-num-seqs 8 "
               "--no-enable_prefix_caching --server-port 8000")
VLLM_LAUNCH = "vllm serve /models/m --max-num-seqs 64 --cudagraph-capture-sizes 1 2 4 8 12 24 --port 8000"


def _c(toks, rank, lps=None, prompt="p1") -> Completion:
    lp = tuple(lps) if lps else ()
    return Completion(prompt, "".join(toks), tuple(toks), lp, tuple({t: x} for t, x in zip(toks, lp)), rank)


def _said(moved: dict[int, set[str]] | None = None, table=TABLE, lps=None, moved_lps=None) -> tuple[Said, ...]:
    moved = moved or {}
    ranks = list(table) if table else [None]
    out = []
    for cond in CONDS:
        for r in ranks:
            bad = cond in moved.get(r, set()) if r is not None else cond in moved.get(UNRANKED, set())
            out.append(Said(cond, "p1", r, _c(FLIP if bad else GOOD, r, moved_lps if bad and moved_lps else lps)))
    return tuple(out)


def _items(said, table=TABLE, **kw) -> dict[int, Batched]:
    run = Run("http://head:8000", dict(table), {"p1": "(x) 1, 2, 3, 4, 5,"}, (2, 4), (0.1, 0.01), said,
              asked=len(said), **kw)
    if not table:
        return {UNRANKED: Batched(UNRANKED, "", run)}
    return {r: Batched(r, n, run) for r, n in table.items()}


def _judge(items, r):
    where = f"{TABLE[r]}/dp{r}" if r != UNRANKED else "http://head:8000"
    return batch.rank_batch(Ranked(r, TABLE.get(r, ""), items), RACK, where)


def test_capture_sizes_in_atoms_and_vllms_forms():
    assert probe.capture_sizes(ATOM_LAUNCH) == (1, 2, 4, 8, 16, 32, 48, 64, 128, 256)
    assert probe.capture_sizes(VLLM_LAUNCH) == (1, 2, 4, 8, 12, 24)
    assert probe.capture_sizes("atom --cudagraph_capture_sizes=[3,6] --x") == (3, 6)
    assert probe.capture_sizes("atom \\\n  --cudagraph-capture-sizes [1, 2, 24] \\\n  --y 1") == (1, 2, 24)
    assert probe.capture_sizes("atom --cudagraph-mode FULL --max-num-seqs 8") == ()
    assert probe.max_seqs(ATOM_LAUNCH) == 8 and probe.max_seqs(VLLM_LAUNCH) == 64 and probe.max_seqs("x") is None


def test_buckets_are_powers_of_two_and_the_captured_sizes_up_to_the_concurrency():
    assert probe.buckets(16, (1, 2, 4, 8, 12, 24)) == (2, 4, 8, 12, 16)
    assert probe.buckets(4) == (2, 4)
    assert probe.buckets(8, (), (3,)) == (2, 3, 4, 8)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 512), min_size=1, max_size=12), st.sampled_from(["atom", "vllm", "eq"]),
       st.sampled_from(["", " --port 8000", " /models/m", " \\\n --max-num-seqs 8"]),
       st.sampled_from([" ", "  ", " \\\n  "]))
def test_capture_sizes_read_back_from_mutated_real_lines(sizes, form, tail, sep):
    """The runbook's launch with its capture sizes written each way, any list, any spacing: the same
    sizes read back, and nothing read from the words after them."""
    head = ATOM_LAUNCH.split(" --cudagraph-capture-sizes")[0]
    if form == "atom":
        flag = f"--cudagraph-capture-sizes \"[{','.join(map(str, sizes))}]\""
    elif form == "vllm":
        flag = "--cudagraph-capture-sizes " + " ".join(map(str, sizes))
    else:
        flag = f"--cudagraph_capture_sizes=[{','.join(map(str, sizes))}]"
    assert probe.capture_sizes(head + sep + flag + tail) == tuple(sorted(set(sizes)))


def test_healthy_every_rank_passes():
    items = _items(_said())
    assert all(_judge(items, r) == [] for r in TABLE)


def test_one_bucket_fails_its_rank_naming_the_condition_and_both_continuations():
    items = _items(_said({3: {"bucket 4"}}))
    assert all(_judge(items, r) == [] for r in (0, 1, 2))
    said = _judge(items, 3)[0]
    assert said.startswith("1 of 4 greedy answers on node2/dp3 differ from its own answers alone")
    assert "moved under bucket 4; held under bucket 2" in said and "only at bucket 4" in said
    assert "1 of 4 ranks moved (dp3)" in said
    assert "node2/dp3 bucket 4, prompt p1 at position 4: tokens diverge at position 4" in said
    assert "alone ...', 7, 8,' | bucket 4 ...', 7, 9,'" in said
    assert said.endswith("; prompts: p1 = '(x) 1, 2, 3, 4, 5,'")


def test_mixed_on_a_node_names_the_node_and_the_sampler():
    items = _items(_said({2: {CONDS[3]}, 3: {CONDS[3]}}))
    said = _judge(items, 2)[0]
    assert "only when sampled requests share the batch" in said
    assert "2 of 4 ranks moved (dp2, dp3): every rank of node2 and no other" in said


def test_every_repeat_moved_reads_as_the_cache():
    said = _judge(_items(_said({1: set(CONDS[1:])})), 1)[0]
    assert "every repeat of a prompt moved, alone too: a prefix-cache hit" in said


def test_logprobs_within_the_floors_pass_and_beyond_them_fail():
    lps = [-0.02] * len(GOOD)
    near = _items(_said({1: {"bucket 2"}}, lps=lps, moved_lps=[-0.05] * len(GOOD)))
    # the same tokens needed: a moved answer with other tokens fails whatever its logprobs
    assert _judge(near, 1)
    same = tuple(Said(s.condition, s.prompt, s.rank, _c(GOOD, s.rank, [-0.025] * len(GOOD) if s.condition == "bucket 2"
                                                              and s.rank == 1 else lps)) for s in _said(lps=lps))
    assert _judge(_items(same), 1) == [], "a move of 0.005 (KL 0.005) is inside the floors (0.1, 0.01)"
    far = tuple(Said(s.condition, s.prompt, s.rank, _c(GOOD, s.rank, [-0.5] * len(GOOD) if s.condition == "bucket 2"
                                                             and s.rank == 1 else lps)) for s in _said(lps=lps))
    out = _judge(_items(far), 1)[0]
    assert "the same tokens, max |delta logprob| 0.48" in out and "bucket 2" in out


def test_without_logprobs_tokens_alone_are_compared_and_said():
    said = _judge(_items(_said({0: {"bucket 2"}})), 0)[0]
    assert "tokens alone compared" in said


def test_a_hang_is_srv_deadlocks_on_the_hung_rank():
    hang = Hang("1 of 8 requests still in flight after 30.0s", "node2/dp3", (), (3,))
    items = _items(_said(), hang=hang, hang_in="bucket 4")
    f = _judge(items, 3)[0]
    assert isinstance(f, Finding) and f.row == "SRV-DEADLOCK" and "bucket 4: 1 of 8" in f
    with pytest.raises(CouldNotObserve, match="dp0 was not judged"):
        _judge(items, 0)


def test_errors_while_others_answered_fail_the_rank_and_nothing_back_refuses():
    said = tuple(Said(s.condition, s.prompt, s.rank, None, "HTTP 500") if s.rank == 2 and s.condition == "bucket 4"
                 else s for s in _said())
    assert "answered with an error while the others were answered" in _judge(_items(said), 2)[0]
    assert _judge(_items(said), 1) == []
    none = tuple(Said(s.condition, s.prompt, s.rank, None, "HTTP 500") for s in _said())
    with pytest.raises(CouldNotObserve, match="none of SRV-BATCH's"):
        _judge(_items(none), 0)
    with pytest.raises(CouldNotObserve, match="nothing"):
        _judge(_items((), blind="nothing"), 0)


def test_ranks_not_known_is_one_item_on_the_server():
    items = _items(_said({UNRANKED: {"bucket 2"}}, table={}), table={})
    said = _judge(items, UNRANKED)[0]
    assert "on the server differ" in said and "bucket 2" in said
    assert _judge(_items(_said(table={}), table={}), UNRANKED) == []

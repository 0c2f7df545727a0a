"""The sim rank's batch and prefix cache (rackgate/sim/engine/ranks.py `Batch`, `PrefixCache`;
routes.py `sampling`, `blocks`): what SRV-BATCH's sim faults are decided from -- the requests a rank
really runs at once and the blocks it really cached, never a marker in the request. The sim runs:
the matrix cases batch-mixed-topk, batch-bucket, batch-cache."""
from __future__ import annotations

import pytest

from rackgate.sim.engine import routes
from rackgate.sim.engine.ranks import Batch, PrefixCache

pytestmark = pytest.mark.unit


def test_a_request_sees_the_most_that_ran_beside_it_and_their_sampling():
    b = Batch()
    greedy = b.join([])
    topk = b.join(routes.sampling({"temperature": 0.8, "top_k": 20}))
    assert greedy.most == topk.most == 2 and "top_k" in greedy.others and not topk.others
    b.leave(topk)
    late = b.join([])
    assert late.most == 2 and not late.others, "what left before it came is not its batch"
    assert greedy.most == 2 and "top_k" in greedy.others


def test_sampling_fields_as_the_sampler_sees_them():
    assert routes.sampling({"temperature": 0.0, "logprobs": 5}) == ["logprobs"]
    assert routes.sampling({"temperature": 0.0}) == []
    assert routes.sampling({}) == ["temperature"], "OpenAI's default temperature is 1: sampled"
    assert routes.sampling({"temperature": 1.0, "top_p": 0.9, "stop": "."}) == ["top_p", "temperature", "stop"]
    assert routes.sampling({"temperature": 0, "top_k": -1, "top_p": 1}) == []


def test_the_prefix_cache_hits_whole_leading_blocks_only_when_on():
    p = " word" * 40  # 40 tokens: two full blocks of 16
    on, off = PrefixCache(True), PrefixCache(False)
    assert len(routes.blocks(p)) == 2 and routes.blocks(" word" * 15) == []
    assert on.hit(routes.blocks(p)) == 0 and on.hit(routes.blocks(p)) == 2
    assert on.hit(routes.blocks(" other" + p)) == 0, "a block matches only with the whole prefix before it"
    assert off.hit(routes.blocks(p)) == 0 and off.hit(routes.blocks(p)) == 0

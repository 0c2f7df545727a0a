"""SRV-CONSISTENCY, SRV-KV, SRV-ENGINE-ARGS, SRV-DEADLOCK, SRV-TRANSLATION judgments; finish_reason
mapping; the boot signatures agree with the catalogue."""
import pytest

from rackgate.atom import finish, logfacts, signatures
from rackgate.catalogue import row
from rackgate.gates import consistency, serverlogs

pytestmark = pytest.mark.unit

TEXT = " Paris. It is the largest city in France"


def prefill(truth: str):
    """A model whose greedy continuation of prompt+prefix is the rest of `truth`, one word."""
    def complete(prompt: str, max_tokens: int) -> str:
        done = prompt[len("The capital of France is"):]
        rest = truth[len(done):]
        word = rest.split(" ")[1] if rest.startswith(" ") else rest.split(" ")[0]
        return (" " if rest.startswith(" ") else "") + word
    return complete


def test_decode_and_prefill_agree_without_logprobs():
    assert consistency.judge("The capital of France is", consistency.Decoded(TEXT), prefill(TEXT), 4) == []


def test_decode_that_picked_another_word():
    decoded = TEXT.replace("It is", "It was")
    found = consistency.judge("The capital of France is", consistency.Decoded(decoded), prefill(TEXT), 4)
    assert found and "after ' Paris. It' decode continued ' was the largest', prefill continues ' is'" in found[0]


def test_cuts_on_word_ends_and_on_tokens():
    assert consistency.cuts(consistency.Decoded(" a bc d"), 5) == [2, 5]
    # never inside a multi-character token such as '.\n' (nor before a newline or after punctuation)
    assert consistency.cuts(consistency.Decoded(" Paris.\n\nThe answer is: 20"), 5) == [12, 19, 23]
    assert consistency.cuts(consistency.Decoded(" 6, 7, 8,"), 5) == [3, 6]
    assert consistency.cuts(consistency.Decoded("!!!!\n!!"), 5) == []


def test_a_healthy_server_whose_tokenizer_merges_punctuation_and_newline_agrees():
    """A real BPE tokenizer: '.\n' is one token, so prefill of a prompt cut after '.' sees another
    token than decode did and continues differently -- the tokenizer, not the kernels."""
    truth = " Paris.\n\nThe answer is: 2018"

    def complete(prompt: str, max_tokens: int) -> str:
        done = prompt[len("The capital of France is"):]
        if done.endswith((".", "\n")):
            return " It"  # continues from half a token
        return prefill(truth)(prompt, max_tokens)
    assert consistency.judge("The capital of France is", consistency.Decoded(truth), complete, 4) == []
    assert consistency.cuts(consistency.Decoded(" Paris.", (" Paris", ".")), 5) == [6]


def test_decode_against_its_own_logprobs():
    d = consistency.Decoded(" Paris", (" Paris",), ({" Paris": -3.0, " Lyon": -0.1},))
    assert "top logprob is ' Lyon'" in consistency.judge("p", d, lambda p, n: "", 0)[0]


def test_kv_judgment():
    good = logfacts.memory_budget("Memory budget: total_gpu=432.00GB, utilization=0.9, budget=388.80GB, "
                                  "peak_torch=194.67GB, cudagraph_est=1.18GB, available_for_kv=159.37GB")
    bad = logfacts.memory_budget("Memory budget: total_gpu=288.00GB, utilization=0.9, budget=259.20GB, "
                                 "peak_torch=236.08GB, cudagraph_est=9.40GB, available_for_kv=-16.98GB")
    want = serverlogs.expert_counts(896, 16)
    assert want == (896, 56)
    assert serverlogs.kv([good], [56], 0.0, want) == []
    assert serverlogs.kv([good], [896], 0.0, want) == []  # current ATOM logs the global count
    assert "available_for_kv=-16.98GB" in serverlogs.kv([bad], [56], 0.0, want)[0]
    assert "experts=112" in serverlogs.kv([good], [112], 0.0, want)[0]
    assert "no `Memory budget:` line" in serverlogs.kv([], [], 0.0, want)[0]


def test_engine_args_judgment():
    assert serverlogs.engine_args({"max_model_len": None, "torch_profiler_dir": "/data/p"}, "/data/p") == []
    assert "4096" in serverlogs.engine_args({"max_model_len": 4096}, "")[0]
    assert "'torch_profiler_dir': None" in serverlogs.engine_args({"max_model_len": None, "torch_profiler_dir": None},
                                                                  "/data/p")[0]


def test_deadlock_names_the_rank_that_did_not_time_out():
    out = serverlogs.deadlock({r: "Engine Core: _sync_dp_state failed: Timed out waiting 1800000ms"
                               for r in range(16) if r != 11}, list(range(16)))
    assert "15 of 16 ranks" in out[0] and out[0].endswith("the rank(s) that did not: dp11")
    assert serverlogs.deadlock({}, list(range(16))) == []


def test_translation_b0_zero_is_healthy_a0_zero_is_not():
    zero = {"installed": 4, "translated": 0, "reused": 0, "bad_status": 0}
    assert serverlogs.translation("B0", {"node1": zero}, 4, 300, 100) == []
    assert "outcome=translated 0" in serverlogs.translation("A0", {"node1": zero}, 4, 300, 100)[0]
    good = {"installed": 4, "translated": 484, "reused": 108, "bad_status": 0}
    assert serverlogs.translation("A0", {"node1": good}, 4, 300, 100) == []
    assert "translation_status" in serverlogs.translation("B0", {"node1": zero | {"bad_status": 2}}, 4, 300, 100)[0]


def test_finish_reasons_of_both_api_versions():
    assert [finish.normalize(r) for r in ("max_tokens", "length", "eos", "stop_163586", "stop_sequence", "stop")] == \
        ["length", "length", "stop", "stop", "stop", "stop"]
    assert finish.normalize(None) is None
    assert not finish.trustworthy("/v1/chat/completions", streamed=True)
    assert finish.trustworthy("/v1/completions", streamed=True)


def test_boot_signatures_are_the_catalogues():
    assert set(signatures.HINTS) == set(row("SRV-BOOT").signatures)
    assert set(signatures.PATTERN_HINTS) == {p.name for p in row("SRV-BOOT").patterns}
    assert set(signatures.PATTERN_KEYS) == {p.name for p in row("SRV-BOOT").patterns}
    for p in row("SRV-BOOT").patterns:  # the words that let a line through to the regexes
        for line in p.examples:
            assert any(k in line for k in signatures.PATTERN_KEYS[p.name]), (p.name, line)
            assert signatures.match(line) is not None, line
    f = signatures.match("RuntimeError: Per-request cache tensor (3.35GB for 8 slots) exceeds available KV budget "
                         "(-17.63GB) at --gpu-memory-utilization 0.94.")
    assert f.signature == "exceeds available KV budget" and "someone else's weights" in f.hint
    assert signatures.match("Server started successfully and ready to accept requests") is None


def test_bench_result_says_the_http_status_of_failed_requests():
    from rackgate.gates import bench
    from rackgate.probes import bench as probe
    data = {"num_prompts": 32, "completed": 0, "duration": 0.4, "total_token_throughput": 0.0,
            "output_lens": [0] * 32, "errors": ["HTTP 422: Unprocessable Entity"] * 32}
    import json
    f = probe.serving_result("", json.dumps(data))
    text = " ".join(bench.result(f, 0, True, 1.0))
    assert "32 of 32 requests failed (32 x HTTP 422: Unprocessable Entity)" in text, text
    # a console that prints the statuses (and a result without them)
    f2 = probe.serving_result("", json.dumps({k: v for k, v in data.items() if k != "errors"}))
    console = "\n".join(["request failed: HTTP 422 Unprocessable Entity"] * 32)
    assert "32 x HTTP 422: Unprocessable Entity" in " ".join(bench.result(f2, 0, True, 1.0, console))


def test_bench_aggregate_refuses_a_run_that_completed_nothing():
    from rackgate.gates import bench
    from rackgate.probes.bench import BenchFacts
    f = BenchFacts("benchmark_serving", sent=256, completed=0, failed=256, total_token_throughput=0.0)
    ours, why = bench.aggregate(f, 16, 0.05)
    assert ours is None and "completed 0 requests" in why[0]


def test_profiler_asked_in_the_env_is_judged_without_profile_dir():
    kwargs = {"max_model_len": None, "torch_profiler_dir": None}
    found = serverlogs.engine_args(kwargs, "", {"ATOM_TORCH_PROFILER_DIR": "/tmp/prof"})
    assert found and "profiling is not in effect" in found[0]
    assert serverlogs.engine_args(kwargs, "", {}) == []

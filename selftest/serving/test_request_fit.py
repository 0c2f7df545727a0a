"""Requests sized to what the server serves, and a server refusing rackgate's own request (issue 52),
as functions: the refusal texts are the engines' own (vLLM's context-length errors, pydantic's 422
for an extra field, OpenAI's unrecognised argument), mutated; a refusal that does not say the request
was wrong (a model name the server does not serve) stays what it was."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.atom.mismatch import KINDS, line, mismatch
from rackgate.probes.fit import FILL, fitting_words, published_max_model_len

pytestmark = pytest.mark.unit

TOO_LONG = [
    "This model's maximum context length is 32768 tokens. However, you requested 49160 tokens (49152 in the "
    "messages, 8 in the completion). Please reduce the length of the messages or completion.",
    "The prompt (total length 49160) is too long to fit into the model (context length 32768). Make sure that "
    "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
    "The prompt has 49160 tokens, but the model takes at most 32768 (`--max-model-len`)",
]
UNKNOWN = ["Unrecognized request argument supplied: data_parallel_rank",
           '[{"type":"extra_forbidden","loc":["body","data_parallel_rank"],"msg":"Extra inputs are not permitted"}]']
NOT_OURS = ["The model `moonshotai/Kimi-K3` does not exist.", "Requested model 'x' does not match server model 'y'",
            "Not Found", "internal engine error"]


@pytest.mark.parametrize("said", TOO_LONG)
def test_too_long_is_named_with_the_key_to_set(said):
    assert mismatch(400, f"HTTP 400: {said}") == "too long for the model"
    text = line("too long for the model", said, "http://h:8000")
    assert "serving.max_model_len" in text and "not a fault of the rack" in text and "\n" not in text


@pytest.mark.parametrize("said", UNKNOWN)
def test_an_unknown_field_is_a_mismatch(said):
    assert mismatch(422, said) == "a field the server does not know"


@pytest.mark.parametrize("said", NOT_OURS)
def test_a_refusal_that_does_not_blame_the_request_is_not_a_mismatch(said):
    assert mismatch(400, said) is None and mismatch(404, said) is None


@given(st.sampled_from(TOO_LONG + UNKNOWN), st.sampled_from([200, 500, 502, 503, 404]))
def test_only_a_4xx_of_ours_is_a_mismatch(said, status):
    assert mismatch(status, said) is None


@given(st.sampled_from(TOO_LONG), st.text(max_size=40), st.text(max_size=40))
def test_mutated_real_lines_are_still_read(said, before, after):
    assert mismatch(400, before + said + after) is not None


def test_every_kind_names_a_key():
    assert all(key for _, key in KINDS.values())


@given(st.integers(1, 200_000), st.integers(0, 64), st.integers(128, 262_144))
def test_a_long_prompt_fits_the_model(words, answer, max_len):
    got, cut = fitting_words(words, answer, max_len)
    assert got <= words and (got <= (max_len - answer) * FILL or got == 1) and cut is (got < words)


def test_no_length_known_leaves_the_prompt_as_it_was():
    assert fitting_words(49152, 8, None) == (49152, False)


def test_the_published_length_is_read_from_vllms_card_and_not_from_atoms():
    vllm = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "vllm", "max_model_len": 32768}]}
    atom = {"object": "list", "data": [{"id": "m", "object": "model", "created": 1, "owned_by": "atom"}]}
    assert published_max_model_len(vllm, "m") == 32768
    assert published_max_model_len(vllm, "other") is None
    assert published_max_model_len(atom, "m") is None
    assert published_max_model_len({"data": "x"}, "m") is None

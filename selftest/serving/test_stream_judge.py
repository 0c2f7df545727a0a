"""SRV-STREAM-CONSISTENCY's judgment (rackgate/gates/stream.py), the sim tokenizer it counts with,
and the client reading ATOM's stream ending (a "stop" chunk after the reason, usage with no choices)."""

import pytest

from rackgate.atom import tokens
from rackgate.errors import CouldNotObserve
from rackgate.gates import stream
from rackgate.sim import model

pytestmark = pytest.mark.unit

TEXT = " Paris. It is the largest city in France."


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "tokenizer.json"
    model.write_tokenizer(path)
    return tokens.load(str(path.parent))


def _judge(tok, plain_text=TEXT, pieces=None, usage=None, finish="stop", max_tokens=16, stream_finish=None):
    n = tok.count(TEXT) if usage is None else usage
    pieces = tuple(model.tokenize(TEXT)) if pieces is None else pieces
    plain = stream.Answer("not streamed", plain_text, finish, n)
    streamed = stream.Answer("streamed", "".join(pieces), stream_finish or finish, n, pieces)
    return stream.judge(plain, streamed, max_tokens, tok.count, tok.specials_in)


def test_sim_tokenizer_counts_as_the_sim_model(tok):
    for text in (TEXT, model.GENERIC, " 6, 7,  8\n\n9"):
        assert tok.count(text) == len(model.tokenize(text))


def test_agreeing_answers_pass(tok):
    assert _judge(tok) == []
    assert _judge(tok, usage=tok.count(TEXT) + 1) == []  # the end-of-sequence token counted


def test_dropped_and_repeated_first_token_fail(tok):
    toks = model.tokenize(TEXT)
    dropped = _judge(tok, pieces=tuple(toks[1:]))
    assert any("first token '.' is not the answer's first" in f for f in dropped), dropped
    repeated = _judge(tok, pieces=tuple(toks[:1] + toks))
    assert any("streamed text differs" in f for f in repeated), repeated


def test_usage_off_fails(tok):
    found = _judge(tok, usage=tok.count(TEXT) + 3)
    assert any("usage.completion_tokens" in f and "the text has" in f for f in found), found


def test_finish_reason_against_max_tokens(tok):
    n = tok.count(TEXT)
    assert any("not max_tokens" in f for f in _judge(tok, finish="length", max_tokens=n + 4))
    assert _judge(tok, finish="length", max_tokens=n) == []
    assert any("beyond max_tokens" in f for f in _judge(tok, max_tokens=n - 1))
    assert any("neither a stop nor a length" in f for f in _judge(tok, finish=None))
    assert any("not streamed, 'length' streamed" in f for f in _judge(tok, max_tokens=n, stream_finish="length"))


def test_more_than_one_eos_fails(tok):
    text = TEXT + model.EOS + " More." + model.EOS
    plain = stream.Answer("not streamed", text, "stop", None)
    found = stream.reported(plain, tok.count(text), tok.specials_in(text), 32)
    assert any("2 end-of-sequence" in f for f in found), found


def test_tokenizer_not_set_or_unreadable_is_could_not_observe(tmp_path):
    with pytest.raises(CouldNotObserve, match="serving.tokenizer is not set"):
        tokens.load("")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(CouldNotObserve, match="cannot be loaded"):
        tokens.load(str(tmp_path))



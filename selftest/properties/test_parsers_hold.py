"""Property: every parser in rackgate/probes and rackgate/atom, fed real output mutated the ways real
output breaks (and plain garbage), returns typed facts or raises the could-not-observe error
(rackgate.errors.CouldNotObserve); never another exception; never a healthy fact from garbage.

500 examples per parser by default, fixed seed (derandomize), no deadline; the benchmark
mode (RACKGATE_PROPERTY_EXAMPLES=50000, benchmarks/properties.py) runs 50,000."""
import pytest
from hypothesis import given

from rackgate.errors import CouldNotObserve

from .mutate import SETTINGS, cases
from .parsers import PARSERS

pytestmark = pytest.mark.unit


def _run(p, text):
    try:
        return p.fn(text), None
    except CouldNotObserve as e:
        assert "\n" not in str(e).strip() or len(str(e)) < 2000, f"{p.name}: a multi-line error"
        return None, e


def _marked(ps):
    return [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=p.known_bug)) if p.known_bug else p
            for p in ps]


@pytest.mark.parametrize("p", _marked(PARSERS), ids=lambda p: p.name)
def test_facts_or_could_not_observe_never_healthy_from_garbage(p):
    """Mutated real output (7 in 8) and garbage (1 in 8): facts or CouldNotObserve, nothing else
    (any other exception fails here with the input that caused it); garbage is never healthy."""
    @SETTINGS
    @given(cases(list(p.samples)))
    def prop(case):
        text, is_garbage = case
        out, err = _run(p, text)
        if is_garbage and p.healthy is not None:
            assert err is not None or not p.healthy(out), f"{p.name}: healthy from garbage {text!r} -> {out!r}"
    prop()


@pytest.mark.parametrize("p", PARSERS, ids=lambda p: p.name)
def test_the_real_samples_parse(p):
    """The strategies start from lines the parser reads: each sample gives facts, not an error
    (the serving_result+json case reads its JSON with the table it belongs to)."""
    for s in p.samples:
        out, err = _run(p, s)
        assert err is None, f"{p.name}: {err}"

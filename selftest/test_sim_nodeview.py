"""The sim's node side reads state.json through json's own C scanner (rackgate/sim/nodeview.py):
the same values as json.loads, the same refusals, on the healthy state and on mutated JSON."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackgate.sim import nodeview, state

pytestmark = pytest.mark.unit

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=20)


def test_the_healthy_state_reads_as_json_loads_reads_it():
    text = json.dumps(state.healthy(4, 4, 0.96).to_json(), indent=1)
    assert nodeview.loads(text) == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(_JSON, st.sampled_from(["", " ", "\n", " \t\r\n"]))
def test_any_json_value_reads_as_json_loads_reads_it(value, pad):
    text = pad + json.dumps(value, indent=1) + pad
    assert nodeview.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "   ", "{", '{"a": 1', '{"a": 1} x', "[1,]", "{'a': 1}", '{"a": 1}{}'])
def test_what_json_loads_refuses_is_refused(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        nodeview.loads(text)


def test_constants_as_json_loads_reads_them():
    got = nodeview.loads('[NaN, Infinity, -Infinity, 1e400, 12, "\\u00e9\\/"]')
    assert got[0] != got[0] and got[1:] == [float("inf"), float("-inf"), float("inf"), 12, "é/"]

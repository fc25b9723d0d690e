"""The graph file's header is read without importing json (issue 20): the same value as json.loads, and
ValueError (so map_container's None: the file is rebuilt) for anything but one JSON object."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from thinkingdb.store.graphfile import _json_object

VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), st.booleans(), st.sampled_from(["", " ", "\n\t "]))
def test_the_same_value_as_json_loads(header, ascii_only, space):
    text = space + json.dumps(header, ensure_ascii=ascii_only, separators=(",", ":")) + space
    assert _json_object(text) == json.loads(text)


def test_constants_as_json_loads_reads_them():
    got = _json_object('{"a": NaN, "b": Infinity, "c": -Infinity}')
    assert math.isnan(got["a"]) and got["b"] == math.inf and got["c"] == -math.inf


@pytest.mark.parametrize("text", ["", " ", "[1, 2]", '"x"', "3", "null", '{"a": 1} x', '{"a": 1}{}', '{"a": }',
                                  '{"a": 1', "{'a': 1}", '{"a": "\x01"}', "\ufeff{}", '{"a": 1,}'])
def test_anything_else_is_a_value_error(text):
    with pytest.raises(ValueError):
        _json_object(text)
    try:   # json agrees that none of them is one JSON object
        assert not isinstance(json.loads(text), dict)
    except ValueError:
        pass

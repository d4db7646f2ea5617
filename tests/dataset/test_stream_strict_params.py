"""A streamed sample's ``params`` as strict JSON gives them back (glrec.dataset.streaming.producer._strict_params):
plain values copied as they are, the same as the round trip through JSON, which the rest still takes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from glrec.dataset.streaming.producer import _strict_params
from glrec.errors import SceneError

_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


def _same(a, b) -> bool:
    """Equal, and of the same types all the way down (a bool is not an int, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


@given(st.dictionaries(st.text(), _VALUES, max_size=6))
def test_plain_params_come_back_as_the_json_round_trip_gives_them(params) -> None:
    got = _strict_params({"key": "000001", "params": params})["params"]
    assert _same(got, json.loads(json.dumps(params, allow_nan=False)))


def test_the_copy_is_fresh_and_what_json_would_change_still_goes_through_json() -> None:
    inner = [1, 2.5, -0.0]
    params = {"a": inner, "b": (1, "x"), "c": {"d": None}}
    got = _strict_params({"key": "k", "params": params})["params"]
    assert got == {"a": [1, 2.5, -0.0], "b": [1, "x"], "c": {"d": None}} and got["a"] is not inner
    keyed = _strict_params({"key": "k", "params": {"m": {1: "one"}}})["params"]
    assert keyed == {"m": {"1": "one"}}  # a key that is not str: as JSON writes it
    with pytest.raises(TypeError):  # a numpy value: what json itself says, as before
        _strict_params({"key": "k", "params": {"x": np.float32(1.5)}})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_infinity_is_refused_naming_the_sample(bad) -> None:
    with pytest.raises(SceneError, match=r"Sample 000042: meta.json would hold NaN or infinity"):
        _strict_params({"key": "000042", "params": {"x": [1.0, bad]}})

"""JS value semantics: JSON.stringify, String() and truthiness, pinned on outputs Node prints."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.js_json import js_number, js_string, js_stringify, js_truthy


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (0.000123, "0.000123"),
        (123.456, "123.456"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_number_to_string(value: float, expected: str) -> None:
    assert js_number(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        ("a\u00e9\U0001f600", '"a\u00e9\U0001f600"'),
        ('q"\\/\n\t\b\f\r\x01\x7f', '"q\\"\\\\/\\n\\t\\b\\f\\r\\u0001\x7f"'),
        ("\ud800", '"\\ud800"'),
        ("\u2028", '"\u2028"'),
        (7, "7"),
        (2**53 + 1, "9007199254740992"),
        (10**400, "null"),
        (1.0, "1"),
        (math.nan, "null"),
        ([1, None, object()], "[1,null,null]"),
        ({"b": 1, "2": 2, "1": 3, "01": 4, "a": object()}, '{"1":3,"2":2,"b":1,"01":4}'),
        ({"type": "text", "text": "hello"}, '{"type":"text","text":"hello"}'),
        ({}, "{}"),
        ([], "[]"),
    ],
)
def test_stringify(value: object, expected: str) -> None:
    assert js_stringify(value) == expected


def test_stringify_undefined_at_the_top_level() -> None:
    assert js_stringify(object()) is None
    assert js_stringify(b"bytes") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (False, "false"),
        (5, "5"),
        (2.0, "2"),
        ("s", "s"),
        (["image", None, [1, 2]], "image,,1,2"),
        ({"a": 1}, "[object Object]"),
    ],
)
def test_string(value: object, expected: str) -> None:
    assert js_string(value) == expected


@pytest.mark.parametrize("value", [None, False, 0, 0.0, -0.0, math.nan, ""])
def test_falsy(value: object) -> None:
    assert not js_truthy(value)


@pytest.mark.parametrize("value", [True, 1, -1, 0.5, "0", " ", [], {}, [0], {"a": None}])
def test_truthy(value: object) -> None:
    assert js_truthy(value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_stringify_is_valid_json_that_parses_back(value: object) -> None:
    text = js_stringify(value)
    assert text is not None
    assert json.loads(text) == json.loads(json.dumps(value))

"""JS semantics (engine.js), pinned on outputs Node prints."""

from __future__ import annotations

import json
import math
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.js import (
    JS_LINE_TERMINATORS,
    JS_SPACE_CLASS,
    JS_WHITESPACE,
    js_get,
    js_json_parse,
    js_json_text,
    js_number,
    js_or,
    js_parse_int,
    js_string,
    js_stringify,
    js_to_fixed,
    js_to_number,
    js_trim,
    js_truthy,
    js_utf8,
    json_number,
    stable_stringify,
    utf16_len,
    utf16_sort_key,
    well_formed_json,
)


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
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)  # JSON has neither; stringify prints null
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


def _parsed(text: str) -> object:
    # every number as a double, as JS reads it: JS prints a large double as its shortest digits
    # (4.546141450673902e16 as 45461414506739020), which Python would read back as a different int
    return json.loads(text, parse_int=float)


@given(_json)
def test_stringify_is_valid_json_that_parses_back(value: object) -> None:
    text = js_stringify(value)
    assert text is not None
    assert _parsed(text) == _parsed(json.dumps(value))


# ------------------------------------------------------------------------------------ whitespace and trim

# What ECMAScript calls WhiteSpace and LineTerminator, derived from the definition rather than copied.
_SPEC_WHITESPACE = {"\t", "\v", "\f", "\ufeff", "\n", "\r", "\u2028", "\u2029"} | {
    chr(code) for code in range(0x10000) if unicodedata.category(chr(code)) == "Zs"
}
# Characters other tables (Python's str.strip, older Unicode) call whitespace, which JS does not.
_NOT_JS_WHITESPACE = ["\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\x85", "\x1c", "\x1d", "\x1e", "\x1f", "a"]


def test_the_whitespace_table_is_the_ecmascript_set() -> None:
    assert set(JS_WHITESPACE) == _SPEC_WHITESPACE
    assert len(JS_WHITESPACE) == len(_SPEC_WHITESPACE) == 25


@pytest.mark.parametrize("ch", sorted(_SPEC_WHITESPACE))
def test_trim_strips_every_js_whitespace_character(ch: str) -> None:
    assert js_trim(f"{ch}{ch}a{ch}b{ch}") == f"a{ch}b"


@pytest.mark.parametrize("ch", _NOT_JS_WHITESPACE)
def test_trim_keeps_characters_js_does_not_call_whitespace(ch: str) -> None:
    assert js_trim(f"{ch} x {ch}") == f"{ch} x {ch}"


def test_the_space_class_matches_exactly_the_whitespace_table() -> None:
    space = re.compile(JS_SPACE_CLASS)
    assert {chr(code) for code in range(0x10000) if space.fullmatch(chr(code))} == set(JS_WHITESPACE)
    assert set(JS_LINE_TERMINATORS) == {"\n", "\r", "\u2028", "\u2029"}


# ------------------------------------------------------------------------------------ parseInt


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("  42", 42),
        ("\u3000\ufeff\u2029-7", -7),
        ("+5", 5),
        ("-0", 0),
        ("007", 7),
        ("12abc", 12),
        ("12.9", 12),
        ("1e3", 1),
        ("0x1A", 0),
        ("9" * 400, None),  # Infinity is not finite
        ("", None),
        ("   ", None),
        ("-", None),
        ("+-1", None),
        ("abc", None),
        ("\u180e5", None),  # U+180E is not whitespace, so no digit starts the text
        ("\u200b5", None),
        ("\u0661", None),  # an Arabic-Indic digit is not a digit to parseInt
    ],
)
def test_parse_int(text: str, expected: int | None) -> None:
    assert js_parse_int(text) == expected


# ------------------------------------------------------------------------------------ Number()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0.0),
        (True, 1.0),
        (False, 0.0),
        (5, 5.0),
        (-2.5, -2.5),
        ("", 0.0),
        (" \u3000\n", 0.0),
        (" 12 ", 12.0),
        ("\u00a01.5\u2029", 1.5),
        ("-3", -3.0),
        ("+3", 3.0),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        (".5", 0.5),
        ("5.", 5.0),
        ("0x1F", 31.0),
        ("0X1f", 31.0),
        ("0b101", 5.0),
        ("0o17", 15.0),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("1e400", math.inf),
        ([], 0.0),
        (["7"], 7.0),
        ([[" 8 "]], 8.0),
    ],
)
def test_to_number(value: object, expected: float) -> None:
    assert js_to_number(value) == expected


@pytest.mark.parametrize(
    "value",
    [".", "1e", "e3", "12px", "1_000", "0b2", "0x", "-0x10", "infinity", "NaN", "\u180e1", "1 2", [1, 2], {}, {"a": 1}],
)
def test_to_number_is_nan_for_what_js_cannot_convert(value: object) -> None:
    assert math.isnan(js_to_number(value))


# ------------------------------------------------------------------------------------ toFixed and JSON numbers


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (0.25, 1, "0.3"),  # an exact tie rounds up; Python's format would give 0.2
        (0.35, 1, "0.3"),  # 0.35 is 0.34999... as a double
        (1 / 3 * 100, 1, "33.3"),
        (100.0, 1, "100.0"),
        (0.0, 1, "0.0"),
        (-0.0, 1, "0.0"),
        (-0.01, 1, "-0.0"),
        (-1.25, 1, "-1.3"),
        (2.5, 0, "3"),
        (1.005, 2, "1.00"),
        (1e-7, 3, "0.000"),
    ],
)
def test_to_fixed(value: float, digits: int, expected: str) -> None:
    assert js_to_fixed(value, digits) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (-(2**64), "-18446744073709552000"),
        (10**400, "null"),
        (math.nan, "null"),
        (-math.inf, "null"),
    ],
)
def test_json_number(value: int | float, expected: str) -> None:
    assert json_number(value) == expected


# ------------------------------------------------------------------------------------ || and ?.[]


def test_or_returns_the_first_truthy_value_else_the_last() -> None:
    assert js_or(0, "", "a", "b") == "a"
    assert js_or(0, "", None) is None
    assert js_or([], "x") == []
    assert js_or() is None


def test_get_reads_only_objects() -> None:
    assert js_get({"a": 1}, "a") == 1
    assert js_get({"a": 1}, "b") is None
    assert js_get(["a"], "a") is None
    assert js_get(None, "a") is None
    assert js_get("a", "a") is None


# ------------------------------------------------------------------------------------ strings


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("", 0),
        ("a", 1),
        ("\u00e9", 1),
        ("\uffff", 1),
        ("\U0001f600", 2),
        ("a\U0001f600b", 4),
        ("\U00010000\U0010ffff", 4),
        ("\ud800", 1),  # a lone surrogate is one unit
        ("\ud83d\ude00", 2),  # a pair held as two code points is the same two units
    ],
)
def test_utf16_length(text: str, length: int) -> None:
    assert utf16_len(text) == length


def test_strings_sort_by_utf16_code_units() -> None:
    # U+1F600 is D83D DE00 in UTF-16, below U+E000; Python's code-point order puts it last
    assert sorted(["\ue000", "\U0001f600", "b", "B", "10", "2"], key=utf16_sort_key) == [
        "10",
        "2",
        "B",
        "b",
        "\U0001f600",
        "\ue000",
    ]


def test_utf8_of_a_js_string_replaces_lone_surrogates() -> None:
    assert js_utf8("a\udc00") == b"a\xef\xbf\xbd"
    assert js_utf8("\ud83d\ude00") == "\U0001f600".encode()
    assert js_utf8("\U0001f600") == "\U0001f600".encode()


# ------------------------------------------------------------------------------------ JSON.stringify and JSON.parse


def test_stable_stringify_differs_from_stringify_only_in_key_order_and_strictness() -> None:
    value = {"b": 1, "a": {"d": [2, None], "c": "x"}, "1": True}
    assert js_stringify(value) == '{"1":true,"b":1,"a":{"d":[2,null],"c":"x"}}'
    assert stable_stringify(value) == '{"1":true,"a":{"c":"x","d":[2,null]},"b":1}'
    assert js_stringify({"a": object(), "b": [object()]}) == '{"b":[null]}'
    with pytest.raises(TypeError):
        stable_stringify({"a": object()})


@given(_json)
def test_stable_stringify_parses_back_to_the_same_value(value: object) -> None:
    assert _parsed(stable_stringify(value)) == _parsed(json.dumps(value))


def test_json_parse_rejects_what_json_parse_rejects() -> None:
    assert js_json_parse('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
        with pytest.raises(ValueError, match=r"JSON\.parse rejects"):
            js_json_parse(text)
    for text in ("{'a': 1}", "", "[1,]"):
        with pytest.raises(json.JSONDecodeError):
            js_json_parse(text)


# ------------------------------------------------------------------------------------ edges pinned on Node


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (10**400, "Infinity"),  # a JSON number too large for a double is Infinity in JS
        (-(10**400), "-Infinity"),
        (2**53, "9007199254740992"),
        (-(2**53), "-9007199254740992"),
    ],
)
def test_string_of_an_integer_beyond_the_double_range(value: int, expected: str) -> None:
    assert js_string(value) == expected


def test_json_number_of_a_negative_integer_beyond_the_double_range_is_null() -> None:
    assert json_number(-(10**400)) == "null"


def test_object_keys_follow_js_own_property_order() -> None:
    # Node: JSON.stringify({b:1, "0":2, "10":3, "9":4, a:5}) -> {"0":2,"9":4,"10":3,"b":1,"a":5}
    # ("0" is an array index; "10" after "9" numerically, not as text)
    assert js_stringify({"b": 1, "0": 2, "10": 3, "9": 4, "a": 5}) == '{"0":2,"9":4,"10":3,"b":1,"a":5}'


def test_non_string_keys_are_written_as_their_js_string() -> None:
    # Node: JSON.stringify({2:"a", 1:"b"}) -> {"1":"b","2":"a"}
    assert js_stringify({2: "a", 1: "b"}) == '{"1":"b","2":"a"}'
    assert stable_stringify({2: "a", 1: "b", None: 0}) == '{"1":"b","2":"a","null":0}'


def test_every_lone_surrogate_is_escaped_up_to_udfff() -> None:
    # Node: JSON.stringify(["\udfff","\ud800x","\ud83d\ude00"]) -> ["\udfff","\ud800x","😀"]
    assert js_stringify(["\udfff", "\ud800x", "\ud83d\ude00"]) == '["\\udfff","\\ud800x","\U0001f600"]'


def test_stable_stringify_rejects_a_non_json_value_inside_an_array() -> None:
    with pytest.raises(TypeError, match=r"^stable_stringify: object is not a JSON value$"):
        stable_stringify({"a": [1, object()]})
    with pytest.raises(TypeError, match=r"^stable_stringify: bytes is not a JSON value$"):
        stable_stringify([b"x"])


def test_lone_surrogates_sort_by_their_code_unit() -> None:
    # Node: ["\uffff","\ud800","\ue000","a","\udc00"].sort() -> a, d800, dc00, e000, ffff
    texts = ["\uffff", "\ud800", "\ue000", "a", "\udc00"]
    assert sorted(texts, key=utf16_sort_key) == ["a", "\ud800", "\udc00", "\ue000", "\uffff"]


def test_json_text_escapes_lone_surrogates_and_joins_pairs() -> None:
    # Node: JSON.stringify({x:"a\ud800", "\udc00k":["\ud83d\ude00"]}) -> {"x":"a\ud800","\udc00k":["😀"]}
    value = {"x": "a\ud800", "\udc00k": ["\ud83d\ude00"]}
    text = js_json_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    assert text == '{"x":"a\\ud800","\\udc00k":["\U0001f600"]}'
    assert text == js_stringify(value)
    assert js_json_text('{"a":"é"}') == '{"a":"é"}'


def test_well_formed_json_replaces_lone_surrogates_everywhere_in_place() -> None:
    document: object = json.loads('{"k\\udc00": ["x\\ud800y", {"deep": ["\\udfff"]}, 1, null], "ok": "\\ud83d\\ude00"}')
    result = well_formed_json(document)
    assert result is document
    assert result == {"k\ufffd": ["x\ufffdy", {"deep": ["\ufffd"]}, 1, None], "ok": "\U0001f600"}
    assert isinstance(result, dict)
    assert list(result) == ["k\ufffd", "ok"]  # key order kept
    assert well_formed_json("a\ud800") == "a\ufffd"
    assert well_formed_json([["\udc00"], "b"]) == [["\ufffd"], "b"]

"""The STORE model's judgement of stored strings and shapes (conformance/models/store.py): which
rewrites are allowed (STORE-1/2/3, seed 003: a JSON-document ``arguments`` replaced whole, any other
string cut to a prefix plus the marker, never growing), what it reports otherwise, and its helpers
(JSON document detection, ``arguments`` slots, first texts)."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest

from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    PAIRING_KEYS,
    TRUNCATION_MARKER,
    Problem,
    Rewrite,
    Traced,
    arguments_slots,
    looks_like_json_document,
    parses,
    text_of,
    token,
    trace,
)
from tests.conformance.models.model_store_support import call_item, chat_call, user, with_extra

MARKER = TRUNCATION_MARKER
WHERE = "stored message 0 (submitted 0)"


def _judge_extra(stored: Any, original: Any) -> Traced:
    """Trace one user message whose ``extra`` field went from ``original`` to ``stored``."""
    return trace([with_extra(user(0), stored)], [with_extra(user(0), original)])


def _judge_text(stored: str, original: str) -> Traced:
    return _judge_extra({"body": stored}, {"body": original})


def _cut(kind: str | None, original_json: bool = False) -> list[Rewrite]:
    return [] if kind is None else [Rewrite(f"{WHERE}/extra/body", "body", kind, original_json)]


# ----------------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    ("stored", "original", "pair"),
    [
        (2, 1, "stored 2, submitted 1"),
        (True, 1, "stored true, submitted 1"),
        (1.0, 1, "stored 1.0, submitted 1"),
        (None, "", "stored null, submitted ''"),
        ("1", 1, "stored '1', submitted 1"),
        (1, "1", "stored 1, submitted '1'"),
        ("x", {"a": 1}, "stored 'x', submitted {\"a\": 1}"),
        ({"a": 1}, "x", "stored {\"a\": 1}, submitted 'x'"),
        ("ab", ["a", "b"], 'stored \'ab\', submitted ["a", "b"]'),
        (["a", "b"], "ab", 'stored ["a", "b"], submitted \'ab\''),
        ({"t": "é"}, ["é"], 'stored {"t": "é"}, submitted ["é"]'),
    ],
)
def test_a_changed_value_or_type_is_a_problem_showing_both(stored: Any, original: Any, pair: str) -> None:
    traced = _judge_extra(stored, original)
    assert traced.problems == [Problem(f"{WHERE}/extra", "extra", f"{WHERE}/extra: {pair}")]
    assert traced.rewrites == []


@pytest.mark.parametrize("value", [1, True, 2.5, None, "", [], {}, [1, None, {"a": False}]])
def test_an_unchanged_value_of_any_type_is_no_problem(value: Any) -> None:
    traced = _judge_extra(value, value)
    assert traced.problems == []
    assert traced.rewrites == []


def test_added_or_removed_keys_are_one_problem_listing_both_key_sets() -> None:
    traced = _judge_extra({"b": 1, "z": {"c": "changed"}}, {"a": 1, "z": {"c": "kept"}})
    text = f"{WHERE}/extra: keys ['b', 'z'] differ from the submitted ['a', 'z']"
    assert traced.problems == [Problem(f"{WHERE}/extra", "extra", text)]


def test_a_list_of_another_length_is_one_problem_with_both_lengths() -> None:
    traced = _judge_extra(["a", "changed"], ["a", "b", "c"])
    assert traced.problems == [Problem(f"{WHERE}/extra", "extra", f"{WHERE}/extra: 2 items, submitted 3")]


def test_problems_name_the_path_inside_lists_and_objects() -> None:
    original = chat_call("c1", arguments="{}", name="write")
    stored = chat_call("c1", arguments="{}", name="renamed")
    traced = trace([user(0), stored], [user(0), original])
    path = "stored message 1 (submitted 1)/tool_calls/0/function/name"
    text = f"{path}: rewritten in a way no rule allows: stored 'renamed', submitted 'write'"
    assert traced.problems == [Problem(path, "name", text)]


def test_strings_directly_in_a_list_are_judged_under_the_list_key() -> None:
    long = "y" * 120
    cut = long[:20] + MARKER
    traced = _judge_extra({"tags": ["kept", cut]}, {"tags": ["kept", long]})
    assert traced.rewrites == [Rewrite(f"{WHERE}/extra/tags/1", "tags", "cut", False)]
    pinned = _judge_extra({"id": ["kept", cut]}, {"id": ["kept", long]})
    path = f"{WHERE}/extra/id/1"
    text = f"{path}: rewritten in a way no rule allows: stored {cut!r}, submitted {long!r}"
    assert pinned.problems == [Problem(path, "id", text)]


@pytest.mark.parametrize(("size", "shown"), [(158, None), (159, 120)])
def test_long_values_in_problems_are_shortened_past_160_characters(size: int, shown: int | None) -> None:
    value = "a" * size
    traced = _judge_extra(value, 0)
    quoted = repr(value)
    expected = quoted if shown is None else f"{quoted[:shown]}... ({len(quoted)} characters)"
    assert traced.problems[0].text == f"{WHERE}/extra: stored {expected}, submitted 0"


# ----------------------------------------------------------------------------------- pairing keys


@pytest.mark.parametrize("key", sorted(PAIRING_KEYS))
def test_ids_names_and_shape_keys_are_never_rewritten(key: str) -> None:
    original = "k" * 120
    cut = original[:20] + MARKER
    traced = _judge_extra({key: cut}, {key: original})
    path = f"{WHERE}/extra/{key}"
    text = f"{path}: rewritten in a way no rule allows: stored {cut!r}, submitted {original!r}"
    assert traced.problems == [Problem(path, key, text)]
    assert traced.rewrites == []


# ----------------------------------------------------------------------------------- JSON arguments


def _json_of_length(size: int) -> str:
    document = '{"k":"' + "x" * (size - 8) + '"}'
    assert len(document) == size
    return document


@pytest.mark.parametrize(
    ("size", "allowed"), [(len(ARGUMENTS_TRUNCATION_JSON) + 1, True), (len(ARGUMENTS_TRUNCATION_JSON), False)]
)
def test_json_arguments_may_be_replaced_whole_only_by_a_shorter_document(size: int, allowed: bool) -> None:
    original = _json_of_length(size)
    traced = trace([call_item("c1", ARGUMENTS_TRUNCATION_JSON)], [call_item("c1", original)])
    path = "stored message 0 (submitted 0)/arguments"
    if allowed:
        assert traced.rewrites == [Rewrite(path, "arguments", "compacted", True)]
        assert traced.problems == []
    else:
        assert traced.rewrites == []
        assert [(p.path, p.key, p.json_arguments) for p in traced.problems] == [(path, "arguments", True)]


def test_json_arguments_cut_with_the_marker_are_a_spliced_document() -> None:
    original = "\n " + json.dumps({"path": "/tmp/a", "content": "x" * 300})
    stored = original[:120] + MARKER
    traced = trace([chat_call("c1", stored)], [chat_call("c1", original)])
    path = "stored message 0 (submitted 0)/tool_calls/0/function/arguments"
    text = f"{path}: rewritten in a way no rule allows: stored "
    assert [(p.path, p.key, p.json_arguments) for p in traced.problems] == [(path, "arguments", True)]
    assert traced.problems[0].text.startswith(text)
    assert traced.json_argument_problems() == [traced.problems[0].text]
    assert traced.other_string_problems() == []


def test_plain_arguments_are_cut_never_replaced_by_the_document() -> None:
    original = "path=/tmp/a\n" + "y" * 300
    cut = trace([call_item("c1", original[:100] + MARKER)], [call_item("c1", original)])
    path = "stored message 0 (submitted 0)/arguments"
    assert cut.rewrites == [Rewrite(path, "arguments", "cut", False)]
    replaced = trace([call_item("c1", ARGUMENTS_TRUNCATION_JSON)], [call_item("c1", original)])
    assert [(p.path, p.key, p.json_arguments) for p in replaced.problems] == [(path, "arguments", False)]
    assert replaced.other_string_problems() == [replaced.problems[0].text]


def test_a_json_document_outside_arguments_is_cut_like_any_string() -> None:
    original = json.dumps({"note": "z" * 300})
    traced = _judge_text(original[:100] + MARKER, original)
    assert traced.rewrites == _cut("cut", original_json=True)
    assert traced.problems == []


# ----------------------------------------------------------------------------------- prefix cuts

_ORIGINAL = f"{token(0)} " + "abcdefghij" * 40


@pytest.mark.parametrize(
    ("stored", "kind"),
    [
        (_ORIGINAL[:1] + MARKER, "cut"),
        (_ORIGINAL[:200] + MARKER, "cut"),
        (_ORIGINAL[: len(_ORIGINAL) - len(MARKER) - 1] + MARKER, "cut"),
        (_ORIGINAL[: len(_ORIGINAL) - len(MARKER)] + MARKER, None),
        (_ORIGINAL + MARKER, None),
        (MARKER, None),
        (_ORIGINAL[:100] + "X" + MARKER, None),
        (_ORIGINAL[:100] + "junk!" + MARKER, None),
        (_ORIGINAL[:100] + "(kept)" + _ORIGINAL[200:250] + MARKER, None),
        (_ORIGINAL[:200], None),
        (_ORIGINAL[:100] + MARKER[:40], None),
        (_ORIGINAL[:50] + MARKER[:20] + MARKER, "cut"),
        (_ORIGINAL[:50] + MARKER + MARKER, "cut"),
        (_ORIGINAL[:50] + MARKER + MARKER[:30] + MARKER, "cut"),
        (_ORIGINAL[:50] + MARKER * 2 + MARKER[:3] + MARKER, None),
        (_ORIGINAL[:50] + MARKER[1:20] + MARKER, None),
    ],
)
def test_a_string_may_only_become_a_shorter_prefix_with_the_marker(stored: str, kind: str | None) -> None:
    """A prefix of the original plus the marker, shorter than the original; a value cut twice keeps
    a prefix of its first cut (the original's prefix, then part of the first marker)."""
    traced = _judge_text(stored, _ORIGINAL)
    assert traced.rewrites == _cut(kind)
    if kind is None:
        path = f"{WHERE}/extra/body"
        assert [(p.path, p.key) for p in traced.problems] == [(path, "body")]
        assert traced.problems[0].text.startswith(f"{path}: rewritten in a way no rule allows: stored ")
    else:
        assert traced.problems == []


def test_a_cut_twice_where_the_text_went_on_like_the_marker_is_still_a_cut() -> None:
    """The first cut may end just before a blank line: the marker's opening ``\\n\\n`` then also
    continues the original, and the second cut's kept part is still the first cut's prefix."""
    original = f"{token(0)} first paragraph\n\nsecond paragraph " + "w" * 300
    first_cut = original.index("\n\n")
    first = original[:first_cut] + MARKER
    second = first[: first_cut + 30] + MARKER
    traced = trace([{"role": "user", "content": second}], [{"role": "user", "content": original}])
    assert traced.rewrites == [Rewrite("stored message 0 (submitted 0)/content", "content", "cut", False)]
    assert traced.problems == []


# ----------------------------------------------------------------------------------- helpers

# ECMAScript WhiteSpace and LineTerminator: what JS ``\s`` skips before a document's first character.
_JS_SPACE = {"\t", "\v", "\f", "\ufeff", "\n", "\r", "\u2028", "\u2029"} | {
    chr(c) for c in range(0x10000) if unicodedata.category(chr(c)) == "Zs"
}


def test_a_json_document_is_recognised_after_exactly_the_javascript_whitespace() -> None:
    misjudged = [
        f"U+{c:04X}"
        for c in range(0x10000)
        if looks_like_json_document(chr(c) + "{") is not (chr(c) in _JS_SPACE or chr(c) in "{[")
    ]
    assert misjudged == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a":1}', True),
        ("[1]", True),
        (" \t\n\r[", True),
        ("\u3000{", True),
        ("", False),
        ("   ", False),
        ("X{", False),
        ("]", False),
        ("}", False),
        ('"a"', False),
        ("\u200b{", False),
    ],
)
def test_json_documents_are_recognised_by_their_first_non_space_character(text: str, expected: bool) -> None:
    assert looks_like_json_document(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": 1}', True), ("[1, 2]", True), (ARGUMENTS_TRUNCATION_JSON, True), ('{"a": ', False), ("", False)],
)
def test_parses_says_whether_a_stored_string_is_json(text: str, expected: bool) -> None:
    assert parses(text) is expected


def test_arguments_slots_are_every_string_under_an_arguments_key_with_its_path() -> None:
    stored: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "not arguments"}]},
        chat_call("c1", '{"a": 1}'),
        call_item("c2", "plain"),
        {"nested": {"arguments": {"arguments": "deep"}}, "arguments": 5},
    ]
    assert list(arguments_slots(stored)) == [
        ("/1/tool_calls/0/function/arguments", '{"a": 1}'),
        ("/2/arguments", "plain"),
        ("/3/nested/arguments/arguments", "deep"),
    ]
    assert list(arguments_slots({"arguments": "top"})) == [("/arguments", "top")]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"content": "s"}, "s"),
        ({"content": [{"type": "image_url"}, {"type": "text", "text": "t"}]}, "t"),
        ({"content": ["bare", {"text": 5}, {"type": "input_text", "text": "t"}]}, "t"),
        ({"output": "o"}, "o"),
        ({"output": [{"type": "output_text", "text": "o"}]}, "o"),
        ({"content": None, "output": "o"}, "o"),
        ({"content": [{"type": "image_url"}], "output": "o"}, "o"),
        ({"content": "c", "output": "o"}, "c"),
        ({"content": 5}, None),
        ({}, None),
    ],
)
def test_the_first_text_of_a_message(message: dict[str, Any], expected: str | None) -> None:
    assert text_of(message) == expected

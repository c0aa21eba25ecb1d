"""The kit's model of a stored entry (conformance/models/store.py): what it accepts as an allowed
rewrite, what it reports, where it finds notices and seams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    TRUNCATION_MARKER,
    looks_like_json_document,
    notices_in,
    token,
    trace,
)

_NOTICE = "[... 2 earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_MESSAGES ...]\n\n"


def _user(i: int, text: str = "hello") -> dict[str, Any]:
    return {"role": "user", "content": f"{token(i)} {text}"}


def _call(i: int, arguments: str) -> dict[str, Any]:
    function = {"name": "write", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": function}],
    }


def test_an_unchanged_conversation_traces_one_to_one() -> None:
    submitted = [_user(0), _call(1, '{"a": 1}'), {"role": "tool", "tool_call_id": "c1", "content": f"{token(2)} ok"}]
    traced = trace(submitted, submitted)
    assert traced.origins == [0, 1, 2]
    assert not traced.problems
    assert not traced.rewrites
    assert not traced.notices
    assert traced.seams() == []


def test_whole_replacement_of_json_arguments_is_allowed_and_a_splice_is_not() -> None:
    original = json.dumps({"content": "x" * 500})
    whole = trace([_call(0, ARGUMENTS_TRUNCATION_JSON)], [_call(0, original)])
    assert [r.kind for r in whole.rewrites] == ["compacted"]
    assert not whole.problems
    spliced = trace([_call(0, original[:200] + TRUNCATION_MARKER)], [_call(0, original)])
    assert spliced.json_argument_problems()
    assert not spliced.other_string_problems()


def test_plain_arguments_may_be_cut_but_never_replaced_by_a_document_or_grown() -> None:
    original = "path=/tmp/a\n" + "y" * 500
    cut = trace([_call(0, original[:100] + TRUNCATION_MARKER)], [_call(0, original)])
    assert [r.kind for r in cut.rewrites] == ["cut"]
    assert not cut.problems
    as_document = trace([_call(0, ARGUMENTS_TRUNCATION_JSON)], [_call(0, original)])
    assert as_document.other_string_problems()
    grown = trace([_call(0, original + TRUNCATION_MARKER)], [_call(0, original)])
    assert grown.other_string_problems()


def test_a_string_cut_twice_is_still_a_prefix_cut() -> None:
    original = f"{token(0)} " + "z" * 300
    first = original[:150] + TRUNCATION_MARKER
    second = first[:180] + TRUNCATION_MARKER  # keeps part of the first marker
    traced = trace([{"role": "user", "content": second}], [{"role": "user", "content": original}])
    assert [r.kind for r in traced.rewrites] == ["cut"]
    assert not traced.problems


def test_changed_ids_and_names_are_problems_at_pairing_keys() -> None:
    stored = _call(0, '{"a": 1}')
    stored["tool_calls"][0]["function"]["name"] = "renamed"
    traced = trace([stored], [_call(0, '{"a": 1}')])
    assert traced.problems_at("name")


@pytest.mark.parametrize("as_block", [False, True])
def test_notices_are_found_as_prefixes_and_as_leading_blocks(as_block: bool) -> None:
    submitted = [_user(0), _user(1), _user(2), _user(3)]
    seam = dict(submitted[3])
    if as_block:
        seam["content"] = [{"type": "text", "text": _NOTICE}, {"type": "text", "text": f"{token(3)} hello"}]
        submitted[3] = {"role": "user", "content": [{"type": "text", "text": f"{token(3)} hello"}]}
    else:
        seam["content"] = _NOTICE + str(seam["content"])
    traced = trace([submitted[0], seam], submitted)
    assert traced.origins == [0, 3]
    assert traced.seams() == [1]
    assert [(n.position, n.count, n.as_block) for n in traced.notices] == [(1, 2, as_block)]
    assert not traced.problems
    assert len(notices_in([submitted[0], seam])) == 1


def test_a_notice_given_as_the_content_of_a_function_call_item() -> None:
    item = {"type": "function_call", "call_id": "c0", "name": "f", "arguments": "{}"}
    traced = trace([{**item, "content": _NOTICE}], [item])
    assert traced.notices
    assert not traced.problems


def test_messages_from_nowhere_and_out_of_order_are_problems() -> None:
    submitted = [_user(0), _user(1)]
    assert trace([{"role": "user", "content": "no token"}], submitted).problems
    assert trace([submitted[1], submitted[0]], submitted).problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a":1}', True), ("  [1]", True), ("\u00a0\ufeff{", True), ("x{", False), ("", False), ("\u200b{", False)],
)
def test_json_documents_are_recognised_by_their_first_non_space_character(text: str, expected: bool) -> None:
    assert looks_like_json_document(text) is expected

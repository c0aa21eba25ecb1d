"""The STORE model's tracing (conformance/models/store.py): which submitted message each stored one
comes from (token or call id), where the seams are, which notices it finds, and the problems it
reports about whole messages, with the rewrites it allows of a string (a whole JSON replacement, a prefix
cut) in a whole entry. Expected answers come from the catalogue (STORE-4/6) and seed 003."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    TRUNCATION_MARKER,
    Notice,
    Problem,
    Traced,
    looks_like_json_document,
    notices_in,
    token,
    trace,
)
from tests.conformance.models.model_store_support import (
    Message,
    call_item,
    chat_call,
    chat_result,
    notice,
    output_item,
    parts_user,
    user,
)


def test_the_token_of_a_message_names_its_index() -> None:
    assert token(7) == "⟦m7⟧"
    assert token(12) == "⟦m12⟧"


# ----------------------------------------------------------------------------------- origins


def test_stored_messages_trace_to_the_submitted_messages_their_tokens_name() -> None:
    submitted = [user(0), user(1), user(2), user(3)]
    traced = trace([submitted[1], submitted[3]], submitted)
    assert traced.origins == [1, 3]
    assert traced.problems == []


def test_a_token_must_open_the_text_and_name_a_submitted_message() -> None:
    submitted = [user(0), user(1)]
    quoted = {"role": "user", "content": f"see {token(0)}"}
    beyond = {"role": "user", "content": f"{token(2)} hello"}
    traced = trace([quoted, beyond, submitted[1]], submitted)
    assert traced.origins == [1]
    assert traced.problems == [
        Problem(
            "stored message 0",
            "",
            'stored message 0 comes from no submitted message: {"role": "user", "content": "see ⟦m0⟧"}',
        ),
        Problem(
            "stored message 1",
            "",
            'stored message 1 comes from no submitted message: {"role": "user", "content": "⟦m2⟧ hello"}',
        ),
    ]


def test_a_stored_value_that_is_not_an_object_is_reported_and_the_rest_still_traced() -> None:
    submitted = [user(0), user(1)]
    traced = trace(["just text", 5, submitted[1]], submitted)
    assert traced.origins == [1]
    assert traced.problems == [
        Problem("stored message 0", "", "stored message 0 is not an object: 'just text'"),
        Problem("stored message 1", "", "stored message 1 is not an object: 5"),
    ]


def test_a_chat_call_and_its_result_trace_by_call_id_before_any_quoted_token() -> None:
    submitted = [user(0), chat_call("c1"), chat_result("c1", f"{token(0)} quoted by the tool")]
    traced = trace(submitted, submitted)
    assert traced.origins == [0, 1, 2]
    assert traced.problems == []


def test_a_responses_call_and_its_output_trace_by_call_id_before_any_quoted_token() -> None:
    submitted = [
        {"type": "message", "id": "msg_0", "role": "user", "content": [{"type": "input_text", "text": token(0)}]},
        call_item("c1"),
        output_item("c1", f"{token(0)} quoted by the tool"),
    ]
    traced = trace(submitted, submitted)
    assert traced.origins == [0, 1, 2]
    assert traced.problems == []
    assert traced.notices == []


@pytest.mark.parametrize(
    ("call", "result"),
    [
        (chat_call("c1"), chat_result("c1", "done")),
        (call_item("c1"), output_item("c1", "done")),
    ],
)
def test_a_store_that_changes_the_shape_still_has_its_calls_traced_by_call_id(call: Message, result: Message) -> None:
    """A call and a result pair by call id whichever shape carries them: a gateway that stored a Chat
    call as a Responses item is judged for the rewrite, not for a message from nowhere."""
    chat = [user(0), chat_call("c1"), chat_result("c1", "done")]
    responses = [user(0), call_item("c1"), output_item("c1", "done")]
    submitted = responses if "tool_calls" in call else chat
    traced = trace([call, result], submitted)
    assert traced.origins == [1, 2]
    assert [p.path for p in traced.problems] == ["stored message 0 (submitted 1)", "stored message 1 (submitted 2)"]
    assert all(": keys [" in p.text for p in traced.problems)


def _with_token(message: Message, index: int) -> Message:
    return {**message, "content": f"{token(index)} text"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: {"role": "assistant", "tool_calls": [{"id": None, "type": "function"}]},
        lambda: {"role": "assistant", "tool_calls": ["not a call", 7]},
        lambda: {"role": "assistant", "tool_calls": None},
        lambda: {"type": "function_call", "call_id": None},
        lambda: {"type": "function_call_output", "call_id": None},
        lambda: {"role": "tool", "tool_call_id": None},
        lambda: {"role": "user", "tool_call_id": "c1"},
        lambda: {"type": "message", "call_id": "c1"},
    ],
)
def test_messages_without_a_usable_call_id_trace_by_their_token(make: Any) -> None:
    submitted = [_with_token(make(), 0), _with_token(make(), 1)]
    traced = trace([submitted[1]], submitted)
    assert traced.origins == [1]
    assert traced.problems == []


def test_a_call_and_its_result_with_the_same_id_are_told_apart() -> None:
    submitted = [user(0), call_item("c1"), output_item("c1", "done"), user(3)]
    traced = trace([submitted[2], submitted[3]], submitted)
    assert traced.origins == [2, 3]
    assert traced.problems == []


@pytest.mark.parametrize(
    ("order", "origins"),
    [([1, 0], "[1, 0]"), ([0, 0], "[0, 0]"), ([0, 2, 1], "[0, 2, 1]")],
)
def test_messages_out_of_order_or_repeated_are_one_problem_naming_the_origins(order: list[int], origins: str) -> None:
    submitted = [user(0), user(1), user(2)]
    traced = trace([submitted[i] for i in order], submitted)
    assert traced.origins == order
    text = f"stored messages are out of order or repeated: origins {origins}"
    assert traced.problems == [Problem("", "", text)]
    assert traced.problems_at("") == [text]


# ----------------------------------------------------------------------------------- seams


@pytest.mark.parametrize(
    ("origins", "seams"),
    [
        ([], []),
        ([0, 1, 2], []),
        ([1, 2], [0]),
        ([3], [0]),
        ([0, 2], [1]),
        ([2, 4, 5], [0, 1]),
        ([0, 1, 3, 4, 6], [2, 4]),
    ],
)
def test_a_seam_is_where_earlier_submitted_messages_are_missing(origins: list[int], seams: list[int]) -> None:
    assert Traced(origins=origins).seams() == seams


# ----------------------------------------------------------------------------------- notices


def test_a_notice_prefixed_to_string_content_is_found_and_taken_off() -> None:
    submitted = [user(0), user(1), user(2), user(3)]
    seam = {**submitted[3], "content": notice(2) + str(submitted[3]["content"])}
    traced = trace([submitted[0], seam], submitted)
    assert traced.origins == [0, 3]
    assert traced.seams() == [1]
    assert traced.notices == [Notice(1, 2, False)]
    assert traced.problems == []


@pytest.mark.parametrize("block", ["text", "input_text", "output_text"])
def test_a_notice_given_as_a_leading_text_block_is_found_and_taken_off(block: str) -> None:
    submitted = [parts_user(i, block) for i in range(14)]
    seam = {**submitted[13], "content": [{"type": block, "text": notice(12)}, *submitted[13]["content"]]}
    traced = trace([seam], submitted)
    assert traced.origins == [13]
    assert traced.notices == [Notice(0, 12, True)]
    assert traced.problems == []


def test_a_notice_merged_into_the_first_text_block_is_not_a_notice_but_a_rewrite() -> None:
    submitted = [parts_user(0), parts_user(1)]
    merged = {"role": "user", "content": [{"type": "text", "text": notice(1) + f"{token(1)} hello"}]}
    assert notices_in([merged]) == []
    traced = trace([merged], submitted)
    assert traced.notices == []
    assert traced.origins == []  # its text no longer opens with the token
    assert len(traced.problems_at("")) == 1


@pytest.mark.parametrize(
    "content",
    [
        [],
        [{"type": "summary_text", "text": notice(2)}],
        [{"type": "text", "text": None}],
        [{"type": "text", "text": "plain words"}],
        ["bare string", {"type": "text", "text": notice(2)}],
        [{"type": "image_url", "image_url": {"url": "data:"}}, {"type": "text", "text": notice(2)}],
        f"see {notice(2)}",
        "[... 2 earlier message(s) dropped by the response store ...]\nno blank line",
        "[... two earlier message(s) dropped by the response store ...]\n\n",
        None,
        {"text": notice(2)},
    ],
)
def test_what_is_not_a_leading_notice_is_not_found(content: Any) -> None:
    assert notices_in([{"role": "user", "content": content}]) == []


def test_notices_are_listed_by_position_count_and_form() -> None:
    stored: list[Any] = [
        "not an object",
        user(1),
        {"role": "user", "content": notice(3, "RESPONSE_STORE_MAX_BYTES") + "rest"},
        {"role": "user", "content": [{"type": "input_text", "text": notice(12)}, {"type": "input_text", "text": "x"}]},
    ]
    assert notices_in(stored) == [Notice(2, 3, False), Notice(3, 12, True)]


def test_a_notice_that_became_the_content_of_an_item_without_content_is_allowed() -> None:
    submitted = [user(0), call_item("c1"), output_item("c1", "done")]
    traced = trace([{**submitted[1], "content": notice(1)}, submitted[2]], submitted)
    assert traced.origins == [1, 2]
    assert traced.notices == [Notice(0, 1, False)]
    assert traced.problems == []


def test_a_notice_that_became_the_content_of_a_chat_call_with_null_content_is_allowed() -> None:
    """engine.md §3.C: on content that is neither a string nor an array, the content becomes the
    notice. A Chat tool call carries ``content: null``, so a seam there stores the notice as content."""
    submitted = [user(0), user(1), chat_call("c2"), chat_result("c2", "done")]
    traced = trace([{**submitted[2], "content": notice(2)}, submitted[3]], submitted)
    assert traced.origins == [2, 3]
    assert traced.notices == [Notice(0, 2, False)]
    assert traced.problems == []


def test_a_notice_on_empty_string_content_is_a_prefix_like_any_other() -> None:
    submitted = [user(0), {**chat_call("c1"), "content": ""}]
    traced = trace([{**submitted[1], "content": notice(1)}], submitted)
    assert traced.notices == [Notice(0, 1, False)]
    assert traced.problems == []


def test_a_notice_with_more_text_where_there_was_no_content_is_a_problem() -> None:
    submitted = [user(0), call_item("c1")]
    traced = trace([{**submitted[1], "content": notice(1) + "extra"}], submitted)
    where = "stored message 0 (submitted 1)"
    text = (
        f"{where}: keys ['arguments', 'call_id', 'content', 'id', 'name', 'type'] differ from the submitted "
        "['arguments', 'call_id', 'id', 'name', 'type']"
    )
    assert traced.problems == [Problem(where, "", text)]


def test_emptied_content_without_a_notice_is_a_rewrite_no_rule_allows() -> None:
    submitted = [user(0), chat_call("c1"), chat_result("c1", f"{token(2)} ok")]
    traced = trace([{**submitted[2], "content": ""}], submitted)
    where = "stored message 0 (submitted 2)/content"
    text = f"{where}: rewritten in a way no rule allows: stored '', submitted '⟦m2⟧ ok'"
    assert traced.problems == [Problem(where, "content", text)]


# ----------------------------------------------------------------------------------- problem filters


def test_problems_are_sorted_by_what_they_concern() -> None:
    whole = Problem("stored message 0", "", "from nowhere")
    call_id = Problem("p/id", "id", "id changed")
    name = Problem("p/name", "name", "name changed")
    spliced = Problem("p/arguments", "arguments", "spliced", json_arguments=True)
    plain = Problem("p/arguments", "arguments", "plain arguments grown")
    content = Problem("p/content", "content", "content changed")
    traced = Traced(problems=[whole, call_id, name, spliced, plain, content])
    assert traced.problems_at("") == ["from nowhere"]
    assert traced.problems_at("id", "name") == ["id changed", "name changed"]
    assert traced.json_argument_problems() == ["spliced"]
    assert traced.other_string_problems() == ["plain arguments grown", "content changed"]


# ----------------------------------------------------------------------------------- whole entries

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

"""Trimming a conversation to the response store's limits (engine.md section 3, seed 003): the exact strings,
sizing, notices, the count stage and the byte stage, each at its exact boundaries."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from engine.js import utf16_len
from engine.store import trim as store_trim
from engine.store.trim import (
    ARGUMENTS_TRUNCATION_JSON,
    MAX_PASSES,
    NOTICE_PATTERN,
    TRUNCATION_MARKER,
    UNSHRINKABLE_KEYS,
    approx_bytes,
    cap_entry_bytes,
    dropped_turns_notice,
    looks_like_json_document,
    prepend_notice,
    strip_notice,
    truncate_messages,
)
from tests.engine.store.store_trim_support import system, user

EXAMPLES = 40
M = TRUNCATION_MARKER
ATJ = ARGUMENTS_TRUNCATION_JSON


# ------------------------------------------------------------------------------------ constants and notices


def test_the_exact_strings_and_their_lengths() -> None:
    assert M == "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"
    assert len(M) == 83
    assert ATJ == (
        '{"__truncated__":"[... tool call arguments truncated by the response store to stay within '
        'RESPONSE_STORE_MAX_BYTES ...]"}'
    )
    assert len(ATJ) == 121
    assert "\n" not in ATJ
    assert json.loads(ATJ)
    assert frozenset({"type", "role", "id", "tool_call_id", "name", "call_id"}) == UNSHRINKABLE_KEYS
    assert MAX_PASSES == 64


@pytest.mark.invariant("STORE-4")
def test_dropped_turns_notice_names_the_count_and_the_limit() -> None:
    assert dropped_turns_notice(3, "messages") == (
        "[... 3 earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_MESSAGES ...]\n\n"
    )
    assert dropped_turns_notice(101, "bytes") == (
        "[... 101 earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]\n\n"
    )
    for stage in ("messages", "bytes"):
        assert NOTICE_PATTERN.fullmatch(dropped_turns_notice(7, stage))


def test_dropped_turns_notice_rejects_an_unknown_stage() -> None:
    with pytest.raises(ValueError, match="stage must be 'messages' or 'bytes'"):
        dropped_turns_notice(1, "tokens")  # type: ignore[arg-type]


@pytest.mark.invariant("STORE-7")
def test_strip_notice_removes_exactly_one_leading_notice() -> None:
    one, two = dropped_turns_notice(1, "bytes"), dropped_turns_notice(2, "messages")
    assert strip_notice(one + "answer") == "answer"
    assert strip_notice(one + two + "answer") == two + "answer"
    assert strip_notice("answer " + one) == "answer " + one, "only a leading notice is stripped"
    assert strip_notice("answer") == "answer"
    assert strip_notice(one.rstrip("\n") + "answer") == one.rstrip("\n") + "answer", "the two newlines are required"
    # JS \d is ASCII: an Arabic-Indic digit does not make a notice.
    arabic = one.replace("1", "\u0661")
    assert strip_notice(arabic + "answer") == arabic + "answer"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", True),
        ("[1]", True),
        ('  \t\n{"a": 1}', True),
        ("\ufeff{", True),
        ("\u00a0[", True),
        ("\u2028\u2029\u3000\u205f\u1680\v\f{", True),
        ("\u180e{", False),  # not JS whitespace since Unicode 6.3
        ("\u200b[", False),
        ("", False),
        ("   ", False),
        ('"{}"', False),
        ("x{", False),
        ("path={", False),
    ],
)
def test_looks_like_json_document_reads_only_the_first_non_js_whitespace_character(text: str, expected: bool) -> None:
    assert looks_like_json_document(text) is expected


def test_looks_like_json_document_does_not_parse() -> None:
    assert looks_like_json_document("{not json at all")
    assert looks_like_json_document(" " * 1_000_000 + "[")


# ------------------------------------------------------------------------------------ approx_bytes


def test_approx_bytes_charges_64_per_message_and_two_per_utf16_unit() -> None:
    assert approx_bytes([]) == 0
    assert approx_bytes([{}]) == 64
    assert approx_bytes([user("hi")]) == 64 + 2 * 4 + 2 * 2  # role "user" is charged too (departure)
    assert approx_bytes([{"content": "é"}]) == 64 + 2
    assert approx_bytes([{"content": "😀"}]) == 64 + 4, "an astral character is two UTF-16 units"
    assert approx_bytes([{"content": "\ud83d\ude00"}]) == 64 + 4, "a surrogate pair held as two code points"


def test_approx_bytes_mirrors_str_bytes_for_values() -> None:
    assert approx_bytes([{"content": None}]) == 64
    assert approx_bytes([{"content": 12.5}]) == 64 + 8
    assert approx_bytes([{"content": True}]) == 64 + 8
    assert approx_bytes([{"content": ["ab", 1, None]}]) == 64 + (32 + 4) + (32 + 8) + 32
    assert approx_bytes([{"content": {"a": "ab", "b": {"c": 1}}}]) == 64 + 4 + 8
    assert approx_bytes([{"content": ("ab",)}]) == 64 + 32 + 4, "a tuple is an array"


def test_approx_bytes_charges_a_container_past_depth_4_a_flat_32() -> None:
    def nest(levels: int) -> Any:
        node: Any = {"leaf": "x" * 100}
        for _ in range(levels):
            node = {"k": node}
        return node

    # content is depth 0; nest(4) puts the leaf's dict at depth 4 (walked), nest(5) at depth 5 (flat)
    assert approx_bytes([{"content": nest(4)}]) == 64 + 200
    assert approx_bytes([{"content": nest(5)}]) == 64 + 32


def test_approx_bytes_charges_tool_calls_like_the_mirror() -> None:
    call = {"id": "ab", "type": "function", "function": {"name": "fn", "arguments": "{}", "extra": "x" * 50}}
    # 96 + id + function.name + function.arguments; the call's other keys are not charged
    assert approx_bytes([{"tool_calls": [call]}]) == 64 + 96 + 4 + 4 + 4
    assert approx_bytes([{"tool_calls": ["not a call", 7]}]) == 64 + 96 + 96
    assert approx_bytes([{"tool_calls": [{"function": "f"}]}]) == 64 + 96
    assert approx_bytes([{"tool_calls": [{"function": {"arguments": {"a": "xy"}}}]}]) == 64 + 96 + 4
    assert approx_bytes([{"tool_call_id": "abc"}]) == 64 + 6


def test_approx_bytes_charges_every_other_key_unlike_the_mirror() -> None:
    # Q3.6 departure: a top-level Responses item's payload is charged.
    item = {"type": "function_call", "call_id": "c", "name": "n", "arguments": "x" * 1000}
    assert approx_bytes([item]) == 64 + 2 * len("function_call") + 2 + 2 + 2000
    output = {"type": "function_call_output", "call_id": "c", "output": "y" * 500}
    assert approx_bytes([output]) == 64 + 2 * len("function_call_output") + 2 + 1000
    assert approx_bytes([{"tool_calls": {"not": "a list"}}]) == 64 + 2 * len("a list")


def test_approx_bytes_of_a_non_mapping_message_is_the_overhead() -> None:
    assert approx_bytes(["text"]) == 64  # type: ignore[list-item]


def test_utf16_lengths_of_huge_strings_are_counted_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_trim, "_CHUNK", 3)
    text = "a😀b\ud83d\ude00é😀😀x" * 5
    assert approx_bytes([{"content": text}]) == 64 + 2 * utf16_len(text)


# ------------------------------------------------------------------------------------ prepend_notice


@pytest.mark.invariant("STORE-6")
def test_prepend_notice_prefixes_string_content_on_a_copy() -> None:
    message = {"role": "user", "content": "hello", "name": "bob"}
    noticed = prepend_notice(message, "N\n\n")
    assert noticed == {"role": "user", "content": "N\n\nhello", "name": "bob"}
    assert message == {"role": "user", "content": "hello", "name": "bob"}
    assert noticed is not message


@pytest.mark.invariant("STORE-6")
def test_prepend_notice_adds_a_leading_text_block_to_parts_content() -> None:
    parts = [{"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "hi"}]
    message = {"role": "user", "content": parts}
    noticed = prepend_notice(message, "N")
    assert noticed["content"] == [{"type": "text", "text": "N"}, *parts]
    assert noticed["content"] is not parts
    assert message["content"] is parts
    assert parts == [{"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "hi"}]
    assert noticed["content"][1] is parts[0], "the blocks themselves are shared, not copied"
    assert prepend_notice({"content": ("a",)}, "N")["content"] == [{"type": "text", "text": "N"}, "a"]


@pytest.mark.parametrize("content", [None, 7, {"a": 1}])
def test_prepend_notice_replaces_any_other_content(content: Any) -> None:
    assert prepend_notice({"role": "user", "content": content}, "N") == {"role": "user", "content": "N"}


def test_prepend_notice_adds_content_when_absent() -> None:
    item = {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}
    assert prepend_notice(item, "N") == {**item, "content": "N"}
    assert "content" not in item


# ------------------------------------------------------------------------------------ truncate_messages


def _numbered(count: int, lead: int = 0) -> list[dict[str, Any]]:
    return [system(f"s{i}") for i in range(lead)] + [user(f"u{i}") for i in range(count - lead)]


@pytest.mark.invariant("STORE-4")
@pytest.mark.parametrize("count", [4, 5])
def test_truncate_messages_at_or_under_the_cap_is_a_no_op(count: int, caplog: pytest.LogCaptureFixture) -> None:
    messages = _numbered(count, lead=1)
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        kept, dropped = truncate_messages(messages, 5)
    assert dropped == 0
    assert kept == messages
    assert kept is not messages
    assert all(a is b for a, b in zip(kept, messages, strict=True))
    assert not caplog.records


@pytest.mark.invariant("STORE-4")
def test_truncate_messages_one_over_the_cap_drops_one_with_a_notice_at_the_seam(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = _numbered(6, lead=1)  # s0 u0 u1 u2 u3 u4
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        kept, dropped = truncate_messages(messages, 5)
    assert dropped == 1
    assert [m["content"] for m in kept] == ["s0", dropped_turns_notice(1, "messages") + "u1", "u2", "u3", "u4"]
    assert kept[0] is messages[0]
    assert kept[-1] is messages[-1]
    assert [r.getMessage() for r in caplog.records] == [
        "[response-store] dropped 1 message(s) to fit RESPONSE_STORE_MAX_MESSAGES"
    ]


@pytest.mark.invariant("STORE-4")
def test_truncate_messages_without_a_system_head_puts_the_notice_on_the_first_kept_message() -> None:
    kept, dropped = truncate_messages(_numbered(10), 3)
    assert dropped == 7
    assert [m["content"] for m in kept] == [dropped_turns_notice(7, "messages") + "u7", "u8", "u9"]


def test_truncate_messages_keeps_the_leading_system_block_only() -> None:
    messages = [system("a"), system("b"), user("u0"), system("mid"), user("u1"), user("u2")]
    kept, dropped = truncate_messages(messages, 4)
    assert dropped == 2
    assert [m["content"] for m in kept] == ["a", "b", dropped_turns_notice(2, "messages") + "u1", "u2"]


def test_truncate_messages_does_not_count_developer_messages_as_the_head() -> None:
    messages = [{"role": "developer", "content": "d"}, user("u0"), user("u1"), user("u2")]
    kept, _ = truncate_messages(messages, 2)
    assert [m["content"] for m in kept] == [dropped_turns_notice(2, "messages") + "u1", "u2"]


@pytest.mark.invariant("STORE-5")
def test_truncate_messages_puts_the_notice_on_the_last_head_message_when_the_seam_is_the_newest() -> None:
    messages = _numbered(8, lead=6)  # s0..s5 u0 u1
    kept, dropped = truncate_messages(messages, 4)
    assert dropped == 4  # head s0 s1 s2, tail u1
    assert [m["content"] for m in kept] == ["s0", "s1", dropped_turns_notice(4, "messages") + "s2", "u1"]
    assert kept[-1] is messages[-1]


@pytest.mark.invariant("STORE-4")
def test_truncate_messages_with_a_cap_of_one_prepends_to_the_only_message_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = [system("s"), user("u0"), user("u1")]
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        kept, dropped = truncate_messages(messages, 1)
    assert dropped == 2
    assert kept == [user(dropped_turns_notice(2, "messages") + "u1")]
    assert messages[-1] == user("u1")
    assert [r.getMessage() for r in caplog.records] == [
        "[response-store] dropped 2 message(s) to fit RESPONSE_STORE_MAX_MESSAGES",
        "[response-store] the drop notice went on the newest message: no earlier message was kept",
    ]


def test_truncate_messages_joins_a_parts_array_seam_as_a_block() -> None:
    messages = [user([{"type": "text", "text": f"u{i}"}]) for i in range(3)]
    kept, _ = truncate_messages(messages, 2)
    assert kept[0]["content"] == [
        {"type": "text", "text": dropped_turns_notice(1, "messages")},
        {"type": "text", "text": "u1"},
    ]
    assert messages[1]["content"] == [{"type": "text", "text": "u1"}]


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "3", None])
def test_truncate_messages_rejects_a_bad_cap(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_messages must be an integer of at least 1"):
        truncate_messages([user("a")], bad)


# ------------------------------------------------------------------------------------ cap_entry_bytes


def test_cap_entry_bytes_at_the_limit_is_a_no_op_and_one_under_drops() -> None:
    messages = [user("a" * 100), user("b" * 10)]
    total = approx_bytes(messages)
    for limit in (total, total + 1):
        kept, dropped = cap_entry_bytes(messages, limit)
        assert dropped == 0
        assert all(a is b for a, b in zip(kept, messages, strict=True))
    kept, dropped = cap_entry_bytes(messages, total - 1)
    # The byte stage behaves as the mirror: its notice goes on trimmed[0], here the newest message.
    assert dropped == 1
    assert kept == [user(dropped_turns_notice(1, "bytes") + "b" * 10)]


def test_cap_entry_bytes_keeps_at_most_eight_leading_system_messages(caplog: pytest.LogCaptureFixture) -> None:
    messages = [system(f"s{i}") for i in range(10)] + [user("x" * 1000), user("last")]
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        kept, dropped = cap_entry_bytes(messages, approx_bytes(messages) - 1)
    assert dropped == 1, "past the first eight, system messages are walked back over like any other"
    assert [m["content"] for m in kept] == [
        dropped_turns_notice(1, "bytes") + "s0",
        *[f"s{i}" for i in range(1, 8)],
        "s9",
        "x" * 1000,
        "last",
    ]
    assert [r.getMessage() for r in caplog.records] == [
        "[response-store] dropped 1 message(s) to fit RESPONSE_STORE_MAX_BYTES"
    ]


def test_cap_entry_bytes_keeps_the_message_that_overshoots_and_stops() -> None:
    big, small = user("B" * 5000), user("s")
    kept, dropped = cap_entry_bytes([small, big], 1000)
    assert dropped == 1
    assert kept == [user(dropped_turns_notice(1, "bytes") + "B" * 5000)]
    kept, dropped = cap_entry_bytes([user("first"), big, small], 1000)
    assert dropped == 2
    assert kept == [user(dropped_turns_notice(2, "bytes") + "s")]
    kept, dropped = cap_entry_bytes([big], 1000)
    assert (dropped, kept) == (0, [big]), "the newest message is always kept"


def test_cap_entry_bytes_walks_back_while_messages_fit() -> None:
    messages = [system("S")] + [user(f"{i:03d}" + "x" * 97) for i in range(10)]
    per = approx_bytes([messages[1]])
    kept, dropped = cap_entry_bytes(messages, approx_bytes([messages[0]]) + 3 * per)
    assert dropped == 7
    assert [m["content"][:3] for m in kept[1:]] == ["007", "008", "009"]
    assert kept[0]["content"] == dropped_turns_notice(7, "bytes") + "S"


@pytest.mark.invariant("STORE-5")
def test_cap_entry_bytes_of_an_all_system_conversation_keeps_the_first_eight_and_the_newest() -> None:
    messages = [system(f"{i}" + "x" * 100) for i in range(10)]
    kept, dropped = cap_entry_bytes(messages, 100)
    assert dropped == 1
    assert len(kept) == 9
    assert kept[-1] == messages[-1], "the newest message is always kept"


def test_cap_entry_bytes_does_not_mutate_the_callers_messages() -> None:
    messages = [system("S"), user([{"type": "text", "text": "x" * 1000}]), user("y")]
    snapshot = copy.deepcopy(messages)
    cap_entry_bytes(messages, 200)
    assert messages == snapshot


def test_cap_entry_bytes_rejects_a_bad_limit() -> None:
    with pytest.raises(ValueError, match="max_entry_bytes must be an integer of at least 1"):
        cap_entry_bytes([user("a")], 0)

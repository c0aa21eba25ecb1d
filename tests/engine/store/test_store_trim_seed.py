"""Seed 003 (V-23): the ten red-first tests of ``test/response-store-argument-integrity.test.js``, one each.

Setup as in the seed: ``RESPONSE_STORE_MAX_BYTES=400k``, so ``MAX_ENTRY_BYTES`` is 102 400, and
``RESPONSE_STORE_MAX_MESSAGES`` is 400. Five of these were red on the seed's base: the two JSON-integrity
tests and the three notice tests (records what was dropped, never rewrites the newest turn, parts array).
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from engine.store.trim import (
    ARGUMENTS_TRUNCATION_JSON,
    NOTICE_PATTERN,
    TRUNCATION_MARKER,
    approx_bytes,
    dropped_turns_notice,
    strip_notice,
    trim_for_store,
)

MAX_BYTES = 400 * 1024
MAX_ENTRY_BYTES = max(64 * 1024, MAX_BYTES // 4)
MAX_MESSAGES = 400
LIMITS: dict[str, int] = {"max_messages": MAX_MESSAGES, "max_entry_bytes": MAX_ENTRY_BYTES}


def _big_json_arguments() -> str:
    """200 KB of valid JSON tool-call arguments (a file write)."""
    return json.dumps({"path": "/tmp/a", "content": "x" * 200_000})


def _turns(count: int, parts: bool = False) -> list[dict[str, Any]]:
    """``INSTRUCTIONS`` then ``count`` alternating user/assistant turns ``m1`` .. ``m<count>``."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "INSTRUCTIONS"}]
    for i in range(1, count + 1):
        text = f"m{i}"
        content: Any = [{"type": "text", "text": text}] if parts else text
        messages.append({"role": "user" if i % 2 else "assistant", "content": content})
    return messages


def _count_notice(dropped: int) -> str:
    return dropped_turns_notice(dropped, "messages")


# ------------------------------------------------------------------------------------ V-23 arguments


@pytest.mark.invariant("STORE-1")
@pytest.mark.invariant("STORE-2")
def test_byte_trimming_replaces_the_whole_arguments_value_with_valid_json_never_a_prefix() -> None:
    original = _big_json_arguments()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "write /tmp/a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": original}}
            ],
        },
    ]
    outcome = trim_for_store(messages, **LIMITS)
    call = outcome.messages[-1]["tool_calls"][0]
    stored = call["function"]["arguments"]
    assert stored == ARGUMENTS_TRUNCATION_JSON, f"stored a {len(stored)}-char value starting {stored[:40]!r}"
    assert not stored.startswith(original[:20]), "a prefix of the original document was kept"
    assert TRUNCATION_MARKER not in stored, "the plain-text marker was spliced into the JSON"
    assert json.loads(stored) == {
        "__truncated__": "[... tool call arguments truncated by the response store to stay within "
        "RESPONSE_STORE_MAX_BYTES ...]"
    }
    assert (call["id"], call["function"]["name"]) == ("call_1", "write_file"), "the call no longer pairs"
    assert approx_bytes(outcome.messages) <= MAX_ENTRY_BYTES


@pytest.mark.invariant("STORE-1")
@pytest.mark.invariant("STORE-2")
def test_a_responses_shaped_function_call_item_is_compacted_the_same_way() -> None:
    original = _big_json_arguments()
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You write files."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write /tmp/a"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "write_file", "arguments": original},
    ]
    outcome = trim_for_store(items, **LIMITS)
    item = outcome.messages[-1]
    assert item["arguments"] == ARGUMENTS_TRUNCATION_JSON, f"stored {item['arguments'][:40]!r}..."
    assert "__truncated__" in json.loads(item["arguments"])
    assert (item["type"], item["id"], item["call_id"], item["name"]) == (
        "function_call",
        "fc_1",
        "call_9",
        "write_file",
    )
    assert approx_bytes(outcome.messages) <= MAX_ENTRY_BYTES, "a top-level Responses item escaped the byte cap"


@pytest.mark.invariant("STORE-1")
def test_small_valid_json_arguments_are_stored_byte_identical_control() -> None:
    # Non-canonical spacing and key order: only a byte-for-byte copy keeps them.
    small = '{ "path" : "/tmp/a",  "content": "h\\u00e9llo" }'
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "write /tmp/a"},
        {
            "role": "assistant",
            "content": "Writing the file now. " + "y" * 200_000,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": small}}
            ],
        },
    ]
    outcome = trim_for_store(messages, **LIMITS)
    assistant = outcome.messages[-1]
    assert assistant["content"].endswith(TRUNCATION_MARKER), "the control needs content trimming to have run"
    assert assistant["tool_calls"][0]["function"]["arguments"] == small


@pytest.mark.invariant("STORE-3")
def test_a_non_json_arguments_payload_is_still_prefix_truncated_with_the_marker_control() -> None:
    original = "path=/tmp/a content=" + "x" * 200_000
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "write /tmp/a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": original}}
            ],
        },
    ]
    outcome = trim_for_store(messages, **LIMITS)
    stored = outcome.messages[-1]["tool_calls"][0]["function"]["arguments"]
    assert stored != ARGUMENTS_TRUNCATION_JSON
    assert stored.endswith(TRUNCATION_MARKER)
    prefix = stored[: -len(TRUNCATION_MARKER)]
    assert prefix, "nothing of the payload was kept"
    assert original.startswith(prefix), "the kept part is not a prefix of the payload"
    assert len(stored) < len(original)
    assert approx_bytes(outcome.messages) <= MAX_ENTRY_BYTES


# ------------------------------------------------------------------------------------ V-23 notices


@pytest.mark.invariant("STORE-4")
def test_a_conversation_over_response_store_max_messages_records_what_was_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = _turns(500)  # 501 messages
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        outcome = trim_for_store(messages, **LIMITS)
    kept = outcome.messages
    assert len(kept) == MAX_MESSAGES
    assert outcome.dropped_by_count == 101
    assert kept[0] == {"role": "system", "content": "INSTRUCTIONS"}
    assert kept[1]["content"] == _count_notice(101) + "m102", f"the seam holds {kept[1]['content'][:60]!r}"
    assert strip_notice(kept[1]["content"]) == "m102"
    notices = [m for m in kept if isinstance(m["content"], str) and NOTICE_PATTERN.match(m["content"])]
    assert len(notices) == 1, "exactly one notice, at the seam"
    line = "[response-store] dropped 101 message(s) to fit RESPONSE_STORE_MAX_MESSAGES"
    assert outcome.warnings == (line,)
    assert [r.getMessage() for r in caplog.records if r.name == "engine.response_store"] == [line]


@pytest.mark.invariant("STORE-5")
def test_never_rewrites_the_newest_turn_to_make_room_for_the_notice() -> None:
    # A huge system block: the head takes MAX - 1 slots and leaves one turn of tail, so the seam is the newest.
    messages: list[dict[str, Any]] = [{"role": "system", "content": "INSTRUCTIONS"}]
    messages += [{"role": "system", "content": f"context {i}"} for i in range(1, 450)]
    messages.append({"role": "user", "content": "the newest question"})
    newest = copy.deepcopy(messages[-1])
    outcome = trim_for_store(messages, **LIMITS)
    kept = outcome.messages
    assert len(kept) == MAX_MESSAGES
    assert outcome.dropped_by_count == 51
    assert kept[-1] == newest, f"the newest turn became {kept[-1]!r}"
    assert kept[-1] is messages[-1]
    assert kept[-2]["content"] == _count_notice(51) + "context 398", "the notice is not on the last head message"
    assert kept[0]["content"] == "INSTRUCTIONS"


@pytest.mark.invariant("STORE-6")
def test_joins_parts_array_content_as_a_text_block_instead_of_flattening_it() -> None:
    messages = _turns(500, parts=True)
    outcome = trim_for_store(messages, **LIMITS)
    seam = outcome.messages[1]["content"]
    assert isinstance(seam, list), f"the parts array was flattened to {seam!r}"
    assert seam == [{"type": "text", "text": _count_notice(101)}, {"type": "text", "text": "m102"}]


@pytest.mark.invariant("STORE-6")
def test_does_not_mutate_the_callers_conversation() -> None:
    # Every stage writes: the count notice (on a parts array), the byte notice (on the system message)
    # and content trimming (the newest call's arguments).
    messages = _turns(498, parts=True)
    messages.append({"role": "user", "content": [{"type": "text", "text": "write it"}]})
    messages.append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Writing."}],
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": _big_json_arguments()},
                }
            ],
        }
    )
    snapshot = copy.deepcopy(messages)
    identities = [id(m) for m in messages]
    outcome = trim_for_store(messages, **LIMITS)
    assert min(outcome.dropped_by_count, outcome.dropped_by_bytes, outcome.rewritten_slots) > 0, outcome
    assert [id(m) for m in messages] == identities
    assert messages == snapshot, "the caller's conversation was rewritten"
    assert outcome.messages[-1] is not messages[-1]
    assert outcome.messages[-1]["tool_calls"] is not messages[-1]["tool_calls"]


@pytest.mark.invariant("STORE-4")
def test_a_conversation_at_the_cap_is_stored_without_a_notice_control(caplog: pytest.LogCaptureFixture) -> None:
    messages = _turns(399)  # exactly 400 messages
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        outcome = trim_for_store(messages, **LIMITS)
    assert outcome.messages == messages
    assert all(kept is given for kept, given in zip(outcome.messages, messages, strict=True))
    assert (outcome.dropped_by_count, outcome.dropped_by_bytes, outcome.warnings) == (0, 0, ())
    assert not [r for r in caplog.records if r.name == "engine.response_store"]


@pytest.mark.invariant("STORE-7")
def test_when_the_byte_ceiling_also_binds_the_stored_conversation_still_carries_a_notice() -> None:
    messages = _turns(500)
    for message in messages[1:]:
        message["content"] += " " + "z" * 1000  # 400 such turns are ~830 KB: the byte stage drops most of them
    outcome = trim_for_store(messages, **LIMITS)
    kept = outcome.messages
    assert outcome.dropped_by_count == 101
    assert outcome.dropped_by_bytes > 0
    assert len(kept) + outcome.dropped_by_count + outcome.dropped_by_bytes == len(messages)
    assert kept[0]["content"] == dropped_turns_notice(outcome.dropped_by_bytes, "bytes") + "INSTRUCTIONS"
    assert strip_notice(kept[0]["content"]) == "INSTRUCTIONS", "the notice would be served as model output"
    carrying = [m for m in kept if NOTICE_PATTERN.match(m["content"])]
    assert carrying == [kept[0]], "the count stage's notice left with the turns the byte stage dropped"
    assert approx_bytes(kept) <= MAX_ENTRY_BYTES

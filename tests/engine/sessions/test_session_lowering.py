"""Durable tool-result images lowered to OpenAI Responses and Chat (seed 002, yoi.md §3, §9 invariants 6-13, 17, 18).

Examples pin the exact shapes; the Hypothesis tests check the same invariants over generated sessions
(parallel tool batches in shuffled result order, 0-3 images per result, unicode text, errors, pruned
subsets) and the prefix property across consecutive requests of one session.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.sessions.items import ImageAttachment, Item, Message, ToolCall, ToolResult, image_data_url, result_text
from engine.sessions.lowering import OMITTED_NOTE, lower_cascade_messages, lower_chat, lower_responses
from tests.engine.session_support import Session, sessions

ROOT = Path(__file__).resolve().parents[3]
WIRE_KEYS = frozenset(
    {"type", "role", "content", "text", "call_id", "name", "arguments", "output", "image_url", "url"}
    | {"tool_calls", "id", "function", "tool_call_id"}
)


def img(tag: str, mime: str = "image/png") -> ImageAttachment:
    return ImageAttachment(mime, b"\x89PNG\r\n\x1a\n" + tag.encode())


def url(att: ImageAttachment) -> str:
    return f"data:{att.mime_type};base64,{base64.b64encode(att.data).decode('ascii')}"


def note(n: int) -> str:
    return OMITTED_NOTE.format(n=n)


def dumps(wire: object) -> bytes:
    return json.dumps(wire, ensure_ascii=False).encode("utf-8")


def outputs(wire: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {w["call_id"]: w["output"] for w in wire if w["type"] == "function_call_output"}


A, B, C, D = img("a"), img("b", "image/jpeg"), img("c", "image/gif"), img("d", "image/webp")
VIEW = ToolCall("call_image", "ViewImage", '{"path":"a.png"}')
READ = ToolCall("call_text", "Read", "{}")
IMAGE_RESULT = ToolResult("call_image", "Attached image a.png (image/png, 12 bytes)", attachments=(A,))
TEXT_RESULT = ToolResult("call_text", "Read text", content="body")


def parallel_batch() -> list[Item]:
    return [Message("user", "look"), VIEW, READ, IMAGE_RESULT, TEXT_RESULT]


# --- OpenAI Responses (yoi.md 3.1) -------------------------------------------------------------


@pytest.mark.invariant("ATT-3")
def test_responses_puts_the_image_inside_function_call_output_and_emits_no_image_message() -> None:
    wire = lower_responses([VIEW, IMAGE_RESULT], vision=True)
    assert wire == [
        {"type": "function_call", "call_id": "call_image", "name": "ViewImage", "arguments": '{"path":"a.png"}'},
        {
            "type": "function_call_output",
            "call_id": "call_image",
            "output": [
                {"type": "input_text", "text": "Attached image a.png (image/png, 12 bytes)"},
                {"type": "input_image", "image_url": url(A)},
            ],
        },
    ]
    assert wire[1]["output"][1]["image_url"].startswith("data:image/png;base64,")
    assert image_data_url(A) == url(A)
    assert b"detail" not in dumps(wire)


@pytest.mark.invariant("ATT-3")
def test_responses_keeps_attachment_order_and_duplicates_in_one_output() -> None:
    result = ToolResult("c1", "three", content="detail", attachments=(B, A, B))
    (wire,) = lower_responses([result], vision=True)
    assert wire["output"] == [
        {"type": "input_text", "text": "three\ndetail"},
        {"type": "input_image", "image_url": url(B)},
        {"type": "input_image", "image_url": url(A)},
        {"type": "input_image", "image_url": url(B)},
    ]


@pytest.mark.invariant("ATT-3")
def test_responses_image_only_result_still_starts_with_its_summary_text() -> None:
    (wire,) = lower_responses([ToolResult("c1", "just an image", attachments=(C,))], vision=True)
    assert wire["output"] == [
        {"type": "input_text", "text": "just an image"},
        {"type": "input_image", "image_url": url(C)},
    ]


@pytest.mark.invariant("ATT-3")
def test_responses_plain_results_are_strings_and_errors_lower_the_same() -> None:
    wire = lower_responses(
        [ToolResult("c1", "s"), ToolResult("c2", "s", content="x\ny"), ToolResult("c3", "boom", is_error=True)],
        vision=True,
    )
    assert [w["output"] for w in wire] == ["s", "s\nx\ny", "boom"]


@pytest.mark.invariant("ATT-3")
def test_responses_parallel_batch_gives_each_output_its_own_images_and_one_item_per_history_item() -> None:
    items = [*parallel_batch(), ToolResult("call_x", "two", attachments=(B, C))]
    wire = lower_responses(items, vision=True)
    assert len(wire) == len(items)
    assert [w["type"] for w in wire] == ["message", "function_call", "function_call", *["function_call_output"] * 3]
    assert [w.get("call_id") for w in wire[3:]] == ["call_image", "call_text", "call_x"]  # history order
    out = outputs(wire)
    assert [part["type"] for part in out["call_image"]] == ["input_text", "input_image"]
    assert out["call_text"] == "Read text\nbody"
    assert [part.get("image_url") for part in out["call_x"]] == [None, url(B), url(C)]


def test_responses_message_roles_and_argument_normalisation() -> None:
    items: list[Item] = [
        Message("system", "sys"),
        Message("user", "hi \u00e9\U0001f600"),
        Message("assistant", "hello"),
        ToolCall("c1", "f", "null"),
        ToolCall("c2", "f", "[1, 2]"),
        ToolCall("c3", "f", "not json"),
        ToolCall("c4", "f", '{"b": 1,  "a": 2}'),
    ]
    wire = lower_responses(items, vision=True)
    assert wire[:3] == [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sys"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi \u00e9\U0001f600"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
    ]
    assert [w["arguments"] for w in wire[3:]] == ["{}", "{}", "{}", '{"b": 1,  "a": 2}']  # objects kept verbatim


# --- OpenAI Chat Completions (yoi.md 3.2) ------------------------------------------------------


@pytest.mark.invariant("ATT-4")
def test_chat_parallel_batch_is_tool_text_then_one_user_image_message() -> None:
    assert lower_chat(parallel_batch(), vision=True) == [
        {"role": "user", "content": "look"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_image",
                    "type": "function",
                    "function": {"name": "ViewImage", "arguments": '{"path":"a.png"}'},
                },
                {"id": "call_text", "type": "function", "function": {"name": "Read", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "content": "Attached image a.png (image/png, 12 bytes)", "tool_call_id": "call_image"},
        {"role": "tool", "content": "Read text\nbody", "tool_call_id": "call_text"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url(A)}}]},
    ]
    assert b'"content": null' in dumps(lower_chat(parallel_batch(), vision=True))


@pytest.mark.invariant("ATT-4")
def test_chat_gathers_a_runs_images_in_item_then_attachment_order_including_image_only_results() -> None:
    calls = [ToolCall(f"c{i}", "ViewImage", "{}") for i in range(3)]
    results = [
        ToolResult("c2", "two images", attachments=(C, D)),  # history order differs from call order
        ToolResult("c0", "text only", content="t"),
        ToolResult("c1", "one image", attachments=(A,)),
    ]
    wire = lower_chat([*calls, *results], vision=True)
    assert [m["role"] for m in wire] == ["assistant", "tool", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in wire[1:4]] == ["c2", "c0", "c1"]  # not re-sorted
    assert all(isinstance(m["content"], str) for m in wire[1:4])
    assert wire[4]["content"] == [{"type": "image_url", "image_url": {"url": url(att)}} for att in (C, D, A)]


@pytest.mark.invariant("ATT-4")
def test_chat_a_run_broken_by_a_message_flushes_its_images_before_it() -> None:
    items: list[Item] = [
        ToolCall("c1", "ViewImage", "{}"),
        ToolResult("c1", "first", attachments=(A,)),
        Message("assistant", "and another"),
        ToolCall("c2", "ViewImage", "{}"),
        ToolResult("c2", "second", attachments=(B,)),
        Message("user", "thanks"),
    ]
    wire = lower_chat(items, vision=True)
    assert [m["role"] for m in wire] == ["assistant", "tool", "user", "assistant", "assistant", "tool", "user", "user"]
    assert wire[2]["content"] == [{"type": "image_url", "image_url": {"url": url(A)}}]
    assert wire[3] == {"role": "assistant", "content": "and another"}  # its own message, not merged into the calls
    assert wire[6]["content"] == [{"type": "image_url", "image_url": {"url": url(B)}}]
    assert wire[7] == {"role": "user", "content": "thanks"}


@pytest.mark.invariant("ATT-4")
def test_chat_a_run_without_images_has_no_user_message_and_roles_map_one_to_one() -> None:
    items: list[Item] = [
        Message("system", "s"),
        ToolCall("c1", "Read", "null"),
        ToolResult("c1", "Read text", content="body"),
        Message("assistant", "ok"),
    ]
    call = {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    assert lower_chat(items, vision=True) == [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "Read text\nbody", "tool_call_id": "c1"},
        {"role": "assistant", "content": "ok"},
    ]


@pytest.mark.invariant("ATT-3")
@pytest.mark.invariant("ATT-4")
def test_without_vision_no_data_url_anywhere_and_the_text_counts_the_omitted_images() -> None:
    items = [*parallel_batch(), ToolResult("call_x", "two", content="c", attachments=(B, C))]
    responses = lower_responses(items, vision=False)
    chat = lower_chat(items, vision=False)
    cascade = lower_cascade_messages(items, vision=False)
    for wire in (responses, chat, cascade):
        assert b"data:image" not in dumps(wire)
    assert outputs(responses) == {
        "call_image": IMAGE_RESULT.summary + note(1),
        "call_text": "Read text\nbody",  # no images, no note
        "call_x": "two\nc" + note(2),
    }
    assert note(2) == "\n[2 image attachment(s) omitted: model does not support images]"
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "tool", "tool"]  # no user image message
    assert [m["content"] for m in chat[2:]] == [IMAGE_RESULT.summary + note(1), "Read text\nbody", "two\nc" + note(2)]
    assert cascade == chat


@pytest.mark.invariant("ATT-5")
def test_pruned_results_lower_as_summary_only() -> None:
    items: list[Item] = [
        ToolCall("c1", "ViewImage", "{}"),
        ToolCall("c2", "ViewImage", "{}"),
        ToolCall("c3", "Read", "{}"),
        ToolResult("c1", "img one", content="extra", attachments=(A,)),
        ToolResult("c2", "img two", attachments=(B, C)),
        ToolResult("c3", "text", content="long detail", is_error=True),
    ]
    some = frozenset({"c1", "c3"})
    assert outputs(lower_responses(items, vision=True, pruned=some)) == {
        "c1": "img one",
        "c2": [
            {"type": "input_text", "text": "img two"},
            *({"type": "input_image", "image_url": url(x)} for x in (B, C)),
        ],
        "c3": "text",
    }
    chat = lower_chat(items, vision=True, pruned=some)
    assert [m["content"] for m in chat[1:4]] == ["img one", "img two", "text"]
    assert chat[4]["content"] == [{"type": "image_url", "image_url": {"url": url(x)}} for x in (B, C)]
    everything = frozenset({"c1", "c2", "c3"})
    assert [m["role"] for m in lower_chat(items, vision=True, pruned=everything)] == ["assistant", *["tool"] * 3]
    assert outputs(lower_responses(items, vision=False, pruned=everything)) == {
        "c1": "img one",
        "c2": "img two",
        "c3": "text",
    }
    assert b"data:image" not in dumps(lower_responses(items, vision=True, pruned=everything))


# --- determinism and the prefix property (invariants 6, 18) -----------------------------------


def sample_history() -> list[Item]:
    return [
        Message("system", "be brief \u2014 \u00fc"),
        Message("user", "look \U0001f600"),
        *parallel_batch()[1:],
        ToolResult("call_z", "z", content="\u65e5\u672c", is_error=True, attachments=(D, B)),
        Message("assistant", "done"),
    ]


def wire_bytes() -> bytes:
    """Every lowering of :func:`sample_history` under several prune sets, as JSON bytes (run in a subprocess)."""
    items, out = sample_history(), {}
    for n, pruned in enumerate((frozenset(), frozenset({"call_image", "call_z", "call_text", "nope"}))):
        for vision in (True, False):
            key = f"{n}-{vision}"
            out[key] = [
                lower(items, vision=vision, pruned=pruned)
                for lower in (lower_responses, lower_chat, lower_cascade_messages)
            ]
    return dumps(out)


@pytest.mark.invariant("ATT-3")
@pytest.mark.invariant("ATT-4")
def test_lowering_is_byte_identical_across_calls_and_processes() -> None:
    local = wire_bytes()
    assert wire_bytes() == local
    code = (
        "import sys; from tests.engine.sessions.test_session_lowering import wire_bytes; "
        "sys.stdout.buffer.write(wire_bytes())"
    )
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, check=True, timeout=60
        )
        assert done.stdout == local


@pytest.mark.invariant("ATT-6")
def test_each_request_is_a_prefix_of_the_next_until_a_new_prune() -> None:
    first = parallel_batch()
    second = [*first, Message("assistant", "a cat"), Message("user", "again?"), ToolCall("c9", "ViewImage", "{}")]
    second.append(ToolResult("c9", "again", attachments=(B,)))
    for lower in (lower_responses, lower_chat, lower_cascade_messages):
        before, after = lower(first, vision=True), lower(second, vision=True)
        assert dumps(after[: len(before)]) == dumps(before)
        # A new prune decision is a boundary: the prefix changes exactly at the pruned result.
        pruned = lower(second, vision=True, pruned=frozenset({"call_image"}))
        assert pruned != after
        assert dumps(pruned[:3]) == dumps(after[:3])


# --- generated sessions ------------------------------------------------------------------------


def _sent(result: ToolResult, pruned: frozenset[str]) -> tuple[str, tuple[ImageAttachment, ...]]:
    if result.call_id in pruned:
        return result.summary, ()
    return result_text(result), result.attachments


def check_responses(items: Sequence[Item], wire: list[dict[str, Any]], vision: bool, pruned: frozenset[str]) -> None:
    assert len(wire) == len(items)  # one input item per history item: no separate image message
    for item, entry in zip(items, wire, strict=True):
        if isinstance(item, Message):
            assert entry["type"] == "message"
            assert all(part["type"] in ("input_text", "output_text") for part in entry["content"])
        elif isinstance(item, ToolCall):
            assert (entry["type"], entry["call_id"], entry["name"]) == ("function_call", item.call_id, item.name)
        else:
            assert (entry["type"], entry["call_id"]) == ("function_call_output", item.call_id)
            text, images = _sent(item, pruned)
            if not images:
                assert entry["output"] == text
            elif vision:
                parts = [{"type": "input_image", "image_url": url(att)} for att in images]
                assert entry["output"] == [{"type": "input_text", "text": text}, *parts]
            else:
                assert entry["output"] == text + note(len(images))


def check_chat(items: Sequence[Item], wire: list[dict[str, Any]], vision: bool, pruned: frozenset[str]) -> None:
    position = 0
    for kind, group in itertools.groupby(items, key=type):
        run = list(group)
        if kind is Message:
            for message in run:
                assert isinstance(message, Message)
                assert wire[position] == {"role": message.role, "content": message.text}
                position += 1
        elif kind is ToolCall:
            assert wire[position]["role"] == "assistant"
            assert wire[position]["content"] is None
            assert [call["id"] for call in wire[position]["tool_calls"]] == [
                c.call_id for c in run if isinstance(c, ToolCall)
            ]
            position += 1
        else:
            parts: list[dict[str, Any]] = []
            for result in run:
                assert isinstance(result, ToolResult)
                text, images = _sent(result, pruned)
                expected = text if vision or not images else text + note(len(images))
                assert wire[position] == {"role": "tool", "content": expected, "tool_call_id": result.call_id}
                position += 1
                parts += [{"type": "image_url", "image_url": {"url": url(att)}} for att in images] if vision else []
            if parts:
                assert wire[position] == {"role": "user", "content": parts}
                position += 1
    assert position == len(wire)


def check_pairing(wire: list[dict[str, Any]]) -> None:
    """Every assistant tool-call message is answered by exactly its tool messages, directly after it."""
    for index, message in enumerate(wire):
        if message["role"] == "tool":
            assert isinstance(message["content"], str)
        if message.get("tool_calls"):
            answers = list(itertools.takewhile(lambda m: m["role"] == "tool", wire[index + 1 :]))
            assert sorted(m["tool_call_id"] for m in answers) == sorted(c["id"] for c in message["tool_calls"])


def wire_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for child in value.values() for key in wire_keys(child)}
    if isinstance(value, list):
        return {key for child in value for key in wire_keys(child)}
    return set()


@pytest.mark.invariant("ATT-3")
@pytest.mark.invariant("ATT-4")
@settings(max_examples=50)
@given(session=sessions(), vision=st.booleans())
def test_generated_sessions_lower_to_the_documented_shapes(session: Session, vision: bool) -> None:
    items, pruned = session.items, session.pruned
    responses = lower_responses(items, vision=vision, pruned=pruned)
    chat = lower_chat(items, vision=vision, pruned=pruned)
    check_responses(items, responses, vision, pruned)
    check_chat(items, chat, vision, pruned)
    check_pairing(chat)
    assert lower_cascade_messages(items, vision=vision, pruned=pruned) == chat
    again = frozenset(sorted(pruned, reverse=True))  # an equal set built in another order
    assert dumps(lower_responses(tuple(items), vision=vision, pruned=again)) == dumps(responses)
    assert dumps(lower_chat(tuple(items), vision=vision, pruned=again)) == dumps(chat)
    for wire in (responses, chat):
        assert wire_keys(wire) <= WIRE_KEYS  # no detail, ids, status or timestamps
        if not vision:
            assert b"data:image" not in dumps(wire)


@pytest.mark.invariant("ATT-6")
@settings(max_examples=50)
@given(session=sessions(), vision=st.booleans())
def test_generated_consecutive_requests_extend_each_other(session: Session, vision: bool) -> None:
    for lower in (lower_responses, lower_chat, lower_cascade_messages):
        previous: list[dict[str, Any]] = []
        for history in session.requests():
            wire = lower(history, vision=vision, pruned=session.pruned)
            assert [dumps(m) for m in wire[: len(previous)]] == [dumps(m) for m in previous]
            previous = wire

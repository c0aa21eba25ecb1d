"""engine.http.responses_shapes: the usage block, the response object, the output items and stream events a
chat turn's events make (golden sequences), and the SSE frames."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.chat.tool_markup import ParsedToolCall
from engine.http.front import ChatEvent
from engine.http.responses_shapes import EventWriter, OutputBuilder, response_object, responses_usage
from tests.engine.http.responses_exact_support import response_defaults

CALL = ParsedToolCall("call_1", "lookup", '{"q":"x"}')


def _feed(*events: ChatEvent) -> tuple[OutputBuilder, list[tuple[str, dict[str, Any]]]]:
    builder = OutputBuilder()
    out: list[tuple[str, dict[str, Any]]] = []
    for event in events:
        out += builder.feed(event)
    return builder, out


# ------------------------------------------------------------------------------------------ usage


def test_no_usage_is_none() -> None:
    assert responses_usage(None) is None
    assert responses_usage({}) is None


def test_a_full_chat_usage_is_renamed_and_keeps_its_total() -> None:
    usage = {
        "prompt_tokens": 14,
        "completion_tokens": 4,
        "total_tokens": 99,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert responses_usage(usage) == {
        "input_tokens": 14,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens": 4,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 99,
    }


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 5}, (5, 0, 0, 0, 5)),
        ({"completion_tokens": 7}, (0, 0, 7, 0, 7)),
        ({"prompt_tokens": 2, "completion_tokens": 3, "prompt_tokens_details": None}, (2, 0, 3, 0, 5)),
        ({"prompt_tokens": 1, "prompt_tokens_details": {}, "completion_tokens_details": {}}, (1, 0, 0, 0, 1)),
    ],
)
def test_missing_usage_fields_count_zero_and_the_total_is_their_sum(
    usage: dict[str, Any], expected: tuple[int, ...]
) -> None:
    got = responses_usage(usage)
    assert got is not None
    assert (
        got["input_tokens"],
        got["input_tokens_details"]["cached_tokens"],
        got["output_tokens"],
        got["output_tokens_details"]["reasoning_tokens"],
        got["total_tokens"],
    ) == expected


# --------------------------------------------------------------------------------- response object


def test_a_bare_response_object_has_the_openai_defaults() -> None:
    body = response_object(response_id="r", created_at=7, model="m", status="completed", output=[], echo={}, store=True)
    assert body == response_defaults(id="r", created_at=7, status="completed", model="m", output=[], store=True)
    assert list(body)[:4] == ["id", "object", "created_at", "status"]  # OpenAI's order leads


def test_a_response_object_echoes_the_request_and_copies_what_it_is_given() -> None:
    echo = {
        "max_output_tokens": 9,
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "text": {"format": {"type": "json_object"}},
        "tool_choice": "required",
        "tools": [{"type": "function", "name": "f"}],
        "top_p": 0.9,
        "user": "u",
        "metadata": {"k": "v"},
    }
    output = [{"type": "message", "id": "m"}]
    usage = {"input_tokens": 1}
    error = {"code": "x", "message": "y"}
    body = response_object(
        response_id="r",
        created_at=1,
        model="m",
        status="failed",
        output=output,
        echo=echo,
        store=False,
        usage=usage,
        instructions="i",
        previous_response_id="p",
        error=error,
        incomplete_reason="max_output_tokens",
    )
    assert body["error"] == error
    assert body["error"] is not error
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert (body["instructions"], body["previous_response_id"], body["store"]) == ("i", "p", False)
    assert body["output"] == output
    assert body["output"][0] is not output[0]
    assert body["usage"] == usage
    assert body["usage"] is not usage
    assert body["tools"] is not echo["tools"]
    assert body["metadata"] == {"k": "v"}
    assert body["metadata"] is not echo["metadata"]
    for key in (
        "max_output_tokens",
        "parallel_tool_calls",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_p",
        "user",
    ):
        assert body[key] == echo[key], key


def test_an_empty_incomplete_reason_gives_no_incomplete_details() -> None:
    body = response_object(
        response_id="r",
        created_at=1,
        model="m",
        status="completed",
        output=[],
        echo={},
        store=True,
        incomplete_reason="",
    )
    assert body["incomplete_details"] is None


# --------------------------------------------------------------------------------- output builder


def test_thinking_text_and_a_tool_call_make_the_golden_event_sequence() -> None:
    builder, events = _feed(
        ChatEvent("role"),
        ChatEvent("reasoning", text="pl"),
        ChatEvent("reasoning", text="an"),
        ChatEvent("content", text="Hel"),
        ChatEvent("content", text=""),
        ChatEvent("content", text="lo"),
        ChatEvent("tool_call", call=CALL),
        ChatEvent("finish"),
        ChatEvent("usage", usage={"prompt_tokens": 1}),
    )
    rs, msg, fc = (item["id"] for item in builder.items)
    assert re.fullmatch(r"rs_[0-9a-f]{32}", rs)
    assert re.fullmatch(r"msg_[0-9a-f]{32}", msg)
    assert re.fullmatch(r"fc_[0-9a-f]{32}", fc)
    reasoning_done = {"type": "reasoning", "id": rs, "summary": [{"type": "summary_text", "text": "plan"}]}
    text_done = {"type": "output_text", "text": "Hello", "annotations": []}
    message_done = {"type": "message", "id": msg, "status": "completed", "role": "assistant", "content": [text_done]}
    call_done = {
        "type": "function_call",
        "id": fc,
        "call_id": "call_1",
        "name": "lookup",
        "arguments": '{"q":"x"}',
        "status": "completed",
    }
    ref = {"item_id": msg, "output_index": 1, "content_index": 0}
    assert events == [
        ("response.output_item.added", {"output_index": 0, "item": {"type": "reasoning", "id": rs, "summary": []}}),
        ("response.output_item.done", {"output_index": 0, "item": reasoning_done}),
        (
            "response.output_item.added",
            {
                "output_index": 1,
                "item": {"type": "message", "id": msg, "status": "in_progress", "role": "assistant", "content": []},
            },
        ),
        ("response.content_part.added", {**ref, "part": {"type": "output_text", "text": "", "annotations": []}}),
        ("response.output_text.delta", {**ref, "delta": "Hel", "logprobs": []}),
        ("response.output_text.delta", {**ref, "delta": "lo", "logprobs": []}),
        ("response.output_text.done", {**ref, "text": "Hello", "logprobs": []}),
        ("response.content_part.done", {**ref, "part": text_done}),
        ("response.output_item.done", {"output_index": 1, "item": message_done}),
        (
            "response.output_item.added",
            {"output_index": 2, "item": {**call_done, "arguments": "", "status": "in_progress"}},
        ),
        ("response.function_call_arguments.delta", {"item_id": fc, "output_index": 2, "delta": '{"q":"x"}'}),
        (
            "response.function_call_arguments.done",
            {"item_id": fc, "output_index": 2, "name": "lookup", "arguments": '{"q":"x"}'},
        ),
        ("response.output_item.done", {"output_index": 2, "item": call_done}),
    ]
    assert builder.items == [reasoning_done, message_done, call_done]
    assert builder.stored_items == [message_done, call_done]


def test_a_turn_that_produced_nothing_answers_with_an_empty_message() -> None:
    builder, events = _feed(ChatEvent("finish"))
    [message] = builder.items
    ref = {"item_id": message["id"], "output_index": 0, "content_index": 0}
    empty = {"type": "output_text", "text": "", "annotations": []}
    assert [kind for kind, _ in events] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert events[2][1] == {**ref, "text": "", "logprobs": []}
    assert message == {
        "type": "message",
        "id": message["id"],
        "status": "completed",
        "role": "assistant",
        "content": [empty],
    }


def test_a_finish_after_only_thinking_closes_the_reasoning_and_adds_no_message() -> None:
    builder, events = _feed(ChatEvent("reasoning", text="t"), ChatEvent("finish"))
    assert [item["type"] for item in builder.items] == ["reasoning"]
    assert [kind for kind, _ in events] == ["response.output_item.added", "response.output_item.done"]
    assert builder.stored_items == []


def test_text_after_a_tool_call_opens_a_new_message_at_the_next_index() -> None:
    builder, events = _feed(
        ChatEvent("tool_call", call=CALL),
        ChatEvent("content", text="after"),
        ChatEvent("tool_call", call=None),
        ChatEvent("finish"),
    )
    assert [item["type"] for item in builder.items] == ["function_call", "message"]
    deltas = [payload for kind, payload in events if kind == "response.output_text.delta"]
    assert deltas == [
        {"item_id": builder.items[1]["id"], "output_index": 1, "content_index": 0, "delta": "after", "logprobs": []}
    ]
    assert builder.items[1]["content"] == [{"type": "output_text", "text": "after", "annotations": []}]


def test_the_done_item_is_a_copy_the_builder_does_not_share() -> None:
    builder, events = _feed(ChatEvent("content", text="a"), ChatEvent("finish"))
    done = events[-1][1]["item"]
    done["content"][0]["text"] = "changed"
    assert builder.items[0]["content"][0]["text"] == "a"


# ------------------------------------------------------------------------------------------ frames


def test_frames_are_numbered_from_zero_with_the_type_first() -> None:
    writer = EventWriter()
    first = writer.frame("response.created", {"response": {"id": "r", "text": "é"}})
    second = writer.frame("error", {"code": None})
    data = '{"type":"response.created","sequence_number":0,"response":{"id":"r","text":"é"}}'
    assert first == f"event: response.created\ndata: {data}\n\n".encode()
    assert second == b'event: error\ndata: {"type":"error","sequence_number":1,"code":null}\n\n'
    assert json.loads(second.split(b"data: ")[1]) == {"type": "error", "sequence_number": 1, "code": None}


def test_a_tool_call_right_after_thinking_closes_the_reasoning_first() -> None:
    builder, events = _feed(ChatEvent("reasoning", text="t"), ChatEvent("tool_call", call=CALL))
    reasoning, call = builder.items
    assert [(kind, payload.get("output_index")) for kind, payload in events] == [
        ("response.output_item.added", 0),
        ("response.output_item.done", 0),
        ("response.output_item.added", 1),
        ("response.function_call_arguments.delta", 1),
        ("response.function_call_arguments.done", 1),
        ("response.output_item.done", 1),
    ]
    assert events[1][1]["item"] == {
        "type": "reasoning",
        "id": reasoning["id"],
        "summary": [{"type": "summary_text", "text": "t"}],
    }
    assert call["status"] == "completed"

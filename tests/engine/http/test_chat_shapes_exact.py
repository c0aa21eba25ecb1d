"""The chat front's pure parts, byte for byte: OpenAI usage, completion and chunk objects, SSE frames, error
bodies (engine.md §5.A), and tool turns lowered to the markup the prompt builder replays."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine.cascade.usage import GeneratorUsage
from engine.chat.tool_markup import ParsedToolCall
from engine.http.errors import ApiError, bad_request, error_body, upstream_error
from engine.http.shapes import (
    DONE,
    HEARTBEAT,
    ChunkWriter,
    completion,
    error_frame,
    openai_usage,
    sse,
)
from engine.http.tool_history import lower_tool_turns

CALL = ParsedToolCall(id="call_1", name="lookup", arguments='{"q":"é"}')
CALL_OBJECT = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":"é"}'}}
BASE = {
    "id": "chatcmpl-x",
    "object": "chat.completion.chunk",
    "created": 7,
    "model": "m",
    "system_fingerprint": "fp_cascade_engine",
    "service_tier": "default",
}


def _usage(prompt: int, completion_tokens: int, cached: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


@pytest.mark.invariant("ACC-4")
def test_wire_usage_counts_fresh_input_cache_reads_and_cache_writes_as_prompt() -> None:
    wire = GeneratorUsage(
        input_tokens=11, output_tokens=4, cache_read_tokens=3, cache_write_tokens=5, entry_count=1, has_usage=True
    )
    assert openai_usage(wire, prompt_chars=999, completion_chars=999) == _usage(19, 4, 3)


@pytest.mark.parametrize(
    ("prompt_chars", "completion_chars", "expected"),
    [(0, 0, (1, 1)), (1, 4, (1, 1)), (4, 5, (1, 2)), (5, 8, (2, 2)), (9, 13, (3, 4))],
)
def test_without_wire_usage_tokens_are_a_quarter_of_the_chars_rounded_up_at_least_one(
    prompt_chars: int, completion_chars: int, expected: tuple[int, int]
) -> None:
    unused = GeneratorUsage(
        input_tokens=7, output_tokens=7, cache_read_tokens=7, cache_write_tokens=7, entry_count=1, has_usage=False
    )
    for usage in (None, unused):
        assert openai_usage(usage, prompt_chars=prompt_chars, completion_chars=completion_chars) == _usage(*expected, 0)


def _completion(text: str, thinking: str, calls: list[ParsedToolCall]) -> dict[str, Any]:
    return completion(
        completion_id="chatcmpl-x",
        created=7,
        model="m",
        text=text,
        thinking=thinking,
        calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        usage={"total_tokens": 2},
    )


def test_a_completion_object_has_the_openai_shape() -> None:
    assert _completion("hi", "", []) == {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 7,
        "model": "m",
        "system_fingerprint": "fp_cascade_engine",
        "service_tier": "default",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {"total_tokens": 2},
    }


@pytest.mark.parametrize(
    ("text", "thinking", "calls", "message"),
    [
        ("", "", [], {"role": "assistant", "content": ""}),
        ("", "plan", [], {"role": "assistant", "content": "", "reasoning_content": "plan"}),
        ("", "", [CALL], {"role": "assistant", "content": None, "tool_calls": [CALL_OBJECT]}),
        (
            "so",
            "p",
            [CALL],
            {"role": "assistant", "content": "so", "reasoning_content": "p", "tool_calls": [CALL_OBJECT]},
        ),
    ],
)
def test_the_message_has_null_content_only_for_tool_calls_without_text(
    text: str, thinking: str, calls: list[ParsedToolCall], message: dict[str, Any]
) -> None:
    assert _completion(text, thinking, calls)["choices"][0]["message"] == message


def test_stream_chunks_are_compact_json_with_the_completion_fields() -> None:
    writer = ChunkWriter(completion_id="chatcmpl-x", created=7, model="m")
    frames = [
        writer.role(),
        writer.reasoning("r"),
        writer.content("é"),
        writer.tool_call(CALL),
        writer.tool_call(CALL),
        writer.tool_call(CALL),
        writer.finish("tool_calls"),
        writer.usage({"total_tokens": 3}),
    ]
    assert frames[2] == (
        '{"id":"chatcmpl-x","object":"chat.completion.chunk","created":7,"model":"m",'
        '"system_fingerprint":"fp_cascade_engine","service_tier":"default",'
        '"choices":[{"index":0,"delta":{"content":"é"},"finish_reason":null}]}'
    )

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    assert [json.loads(f) for f in frames] == [
        choice({"role": "assistant", "content": ""}),
        choice({"reasoning_content": "r"}),
        choice({"content": "é"}),
        choice({"tool_calls": [{"index": 0, **CALL_OBJECT}]}),
        choice({"tool_calls": [{"index": 1, **CALL_OBJECT}]}),
        choice({"tool_calls": [{"index": 2, **CALL_OBJECT}]}),
        choice({}, "tool_calls"),
        {**BASE, "choices": [], "usage": {"total_tokens": 3}},
    ]


def test_sse_frames_heartbeat_and_done() -> None:
    assert sse('{"a":1}') == b'data: {"a":1}\n\n'
    assert sse(DONE) == b"data: [DONE]\n\n"
    assert HEARTBEAT == b": ping\n\n"
    assert error_frame({"error": {"message": "é"}}) == '{"error":{"message":"é"}}'


def test_error_bodies_and_their_statuses() -> None:
    assert error_body("m", type="t") == {"error": {"message": "m", "type": "t", "param": None, "code": None}}
    error = ApiError(418, "teapot")
    assert (error.status, str(error), error.body()) == (
        418,
        "teapot",
        {"error": {"message": "teapot", "type": "invalid_request_error", "param": None, "code": None}},
    )
    bad = bad_request("no", param="p", code="c")
    assert (bad.status, bad.body()) == (
        400,
        {"error": {"message": "no", "type": "invalid_request_error", "param": "p", "code": "c"}},
    )
    up = upstream_error("gone")
    assert (up.status, up.body()) == (
        502,
        {"error": {"message": "gone", "type": "api_error", "param": None, "code": "upstream_error"}},
    )


def test_tool_turns_become_markup_and_result_blocks() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "rules", "name": "d"},
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": [1, 2], "k": "é"}'}},
                {"id": "b"},
                {"id": "c", "function": {"name": "g", "arguments": "not json"}},
                {"id": "d", "function": {"name": "g", "arguments": None}},
            ],
        },
        {"role": "tool", "content": [{"type": "text", "text": "r1"}], "tool_call_id": "a"},
        {"role": "tool", "content": "r2"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "e", "function": {"name": "h"}}]},
        {"role": "tool", "content": "r3", "tool_call_id": "e"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "ok", "tool_calls": []},
    ]
    before = copy.deepcopy(messages)
    assert lower_tool_turns(messages) == [
        {"role": "system", "content": "rules", "name": "d"},
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": 'checking\n<tool_call>{"name": "f", "arguments": {"x": [1, 2], "k": "é"}}</tool_call>\n'
            '<tool_call>{"name": "", "arguments": {}}</tool_call>\n'
            '<tool_call>{"name": "g", "arguments": "not json"}</tool_call>\n'
            '<tool_call>{"name": "g", "arguments": null}</tool_call>',
        },
        {
            "role": "user",
            "content": '<tool_result tool_call_id="a">\nr1\n</tool_result>\n'
            '<tool_result tool_call_id="">\nr2\n</tool_result>',
        },
        {"role": "assistant", "content": '<tool_call>{"name": "h", "arguments": {}}</tool_call>'},
        {"role": "user", "content": '<tool_result tool_call_id="e">\nr3\n</tool_result>'},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "ok", "tool_calls": []},
    ]
    assert messages == before


def test_lowered_messages_are_copies() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}]
    lowered = lower_tool_turns(messages)
    lowered[0]["content"] = "changed"
    lowered[1]["content"] += "more"
    assert messages == [{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}]


def test_a_lone_surrogate_in_call_arguments_is_written_as_its_escape() -> None:
    call = {"id": "a", "function": {"name": "f", "arguments": '{"s": "\\ud800"}'}}
    lowered = lower_tool_turns([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert lowered == [
        {"role": "assistant", "content": '<tool_call>{"name": "f", "arguments": {"s": "\\ud800"}}</tool_call>'}
    ]
    lowered[0]["content"].encode("utf-8")


def test_a_conversation_may_open_with_tool_results() -> None:
    lowered = lower_tool_turns([{"role": "tool", "content": "r", "tool_call_id": "x"}])
    assert lowered == [{"role": "user", "content": '<tool_result tool_call_id="x">\nr\n</tool_result>'}]

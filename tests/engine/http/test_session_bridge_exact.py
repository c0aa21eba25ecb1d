"""engine.http.session_bridge at its edges: roles, malformed tool calls and image parts, data URLs that are not
base64 images, and durable results matched by call id."""

from __future__ import annotations

from typing import Any

import pytest

from engine.http.session_bridge import cascade_messages, decode_image_data_url, session_items, tool_result, tool_results
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.sessions.items import ImageAttachment, Message, ToolCall, ToolResult


def test_system_and_developer_messages_are_system_items_and_unknown_roles_are_left_out() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "developer", "content": [{"type": "text", "text": "d"}]},
        {"role": "function", "content": "old-style"},
        {"content": "no role"},
        {"role": "user", "content": None},
        {"role": "assistant", "content": "", "tool_calls": None},
    ]
    assert session_items(messages) == [
        Message("system", "s"),
        Message("system", "d"),
        Message("user", ""),
        Message("assistant", ""),
    ]


def test_malformed_tool_calls_become_calls_with_empty_fields() -> None:
    calls: list[Any] = [
        "junk",
        {"id": "c1"},
        {"id": "c2", "function": "not an object"},
        {"id": 3, "function": {"name": 4, "arguments": {"a": 1}}},
    ]
    assert session_items([{"role": "assistant", "content": None, "tool_calls": calls}]) == [
        ToolCall("", "", ""),
        ToolCall("c1", "", ""),
        ToolCall("c2", "", ""),
        ToolCall("3", "4", "{'a': 1}"),
    ]


def test_tool_results_are_the_tool_messages_only_in_order() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "assistant", "content": "x"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
    ]
    assert tool_results(messages) == [ToolResult("b", "B"), ToolResult("a", "A")]
    assert tool_results([]) == []


@pytest.mark.parametrize(
    "url",
    [
        "data:image/png;base64",  # no comma: no payload
        "data:image/png;utf8,aGk=",  # not base64-encoded
        "data:image/png;x,y;base64,aGk=",  # the first comma ends the header
        "data:image/png;base64,aG!k=",  # not base64 text
        "data:,aGk=",
    ],
)
def test_a_data_url_that_is_not_a_base64_image_does_not_decode(url: str) -> None:
    assert decode_image_data_url(url) is None


def test_a_base64_image_data_url_decodes_with_its_lowercased_type() -> None:
    assert decode_image_data_url("data: Image/PNG ; BASE64 ,aGk=") == ImageAttachment("image/png", b"hi")
    assert decode_image_data_url("data:image/gif;base64,") == ImageAttachment("image/gif", b"")


def test_parts_that_are_not_image_parts_stay_text_even_with_an_image_url_key() -> None:
    content: list[Any] = [
        "loose",
        {"type": "text", "text": "t", "image_url": "data:image/png;base64,aGk="},
        {"type": "image_url", "image_url": {"url": 5}},
        {"type": "input_image", "image_url": "data:image/png;base64,aGk="},
    ]
    result = tool_result({"role": "tool", "tool_call_id": "c", "content": content})
    assert result.attachments == (ImageAttachment("image/png", b"hi"),)
    assert result.summary == f'"loose"t{IMAGE_PLACEHOLDER}'
    only_bad = tool_result({"role": "tool", "tool_call_id": "c", "content": content[:3]})
    assert only_bad.attachments == ()


def test_a_durable_result_is_found_by_the_messages_call_id_even_an_empty_one() -> None:
    messages = [{"role": "user", "content": "q"}, {"role": "tool", "content": "own"}]
    lowered = cascade_messages(messages, vision=True, durable={"": ToolResult("", "stored")})
    assert lowered[-1] == {"role": "user", "content": '<tool_result tool_call_id="">\nstored\n</tool_result>'}
    none = cascade_messages(messages, vision=True, durable={"None": ToolResult("None", "wrong")})
    assert none[-1] == {"role": "user", "content": '<tool_result tool_call_id="">\nown\n</tool_result>'}


def test_a_tool_message_without_images_or_call_id_is_its_text() -> None:
    assert tool_result({"role": "tool", "content": None}) == ToolResult("", "")
    assert tool_result({"role": "tool", "content": {"a": 1}}) == ToolResult("", '{"a":1}')


def test_a_result_of_images_only_keeps_them_all_and_notes_plain_http_urls() -> None:
    content = [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
        {"type": "image_url", "image_url": "http://example.test/a.png"},
    ]
    assert tool_result({"role": "tool", "tool_call_id": "c", "content": content}) == ToolResult(
        "c", "[image not fetched: http://example.test/a.png]", attachments=(ImageAttachment("image/png", b"hi"),)
    )

"""engine.http.session_bridge as pure functions: a Chat conversation as session items, and its Cascade lowering
(byte-identical to the old tool-turn lowering when no tool message carries an image)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from engine.http.session_bridge import cascade_messages, decode_image_data_url, session_items, tool_result
from engine.http.tool_history import lower_tool_turns
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.sessions.items import ImageAttachment, Message, ToolCall, ToolResult
from engine.sessions.lowering import OMITTED_NOTE
from tests.engine.prompt_support import png_b64

PNG = png_b64(41, side=6)
PNG_BYTES = base64.b64decode(PNG)
DATA_URL = f"data:image/png;base64,{PNG}"


def call(call_id: str, name: str = "ViewImage", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def image_part(url: str = DATA_URL) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


WITHOUT_TOOL_IMAGES: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": "hi"}],
    [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": "dev"},
        {"role": "user", "content": "x"},
    ],
    [
        {"role": "user", "content": [text_part("look"), image_part()]},  # a user's own image: not a tool image
        {"role": "assistant", "content": "Checking.", "tool_calls": [call("c1", "lookup", '{"q": "peru"}')]},
        tool("c1", "Lima"),
        {"role": "assistant", "content": None, "tool_calls": [call("c2"), call("c3", "Read", "not json")]},
        tool("c2", [text_part("two "), text_part("parts")]),
        tool("c3", [{"type": "file", "file": {"file_id": "f-1"}}, {"weird": True}]),
        {"role": "user", "content": "and?"},
    ],
    [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call("c1")], "content": ""},
        tool("c1", ""),
    ],
    [tool("orphan", "no call before me"), {"role": "assistant", "content": "ok"}],
]


@pytest.mark.parametrize("vision", [True, False])
@pytest.mark.parametrize("messages", WITHOUT_TOOL_IMAGES)
def test_conversations_without_tool_images_lower_exactly_as_before(
    messages: list[dict[str, Any]], vision: bool
) -> None:
    before = [dict(m) for m in messages]
    assert cascade_messages(messages, vision=vision) == lower_tool_turns(messages)
    assert messages == before  # never mutated


def test_a_tool_message_becomes_a_result_with_its_data_url_images_and_noted_urls() -> None:
    jpeg = "data:image/JPEG;charset=x;base64," + base64.b64encode(b"\xff\xd8jpeg").decode()
    message = tool(
        "c1",
        [
            text_part("Attached a.png"),
            image_part(),
            {"type": "input_image", "image_url": jpeg},
            image_part("https://example.test/b.png"),
            image_part("data:image/png;base64,@@not base64@@"),
            text_part(" done"),
        ],
    )
    result = tool_result(message)
    assert result == ToolResult(
        "c1",
        f"Attached a.png[image not fetched: https://example.test/b.png]{IMAGE_PLACEHOLDER} done",
        attachments=(ImageAttachment("image/png", PNG_BYTES), ImageAttachment("image/jpeg", b"\xff\xd8jpeg")),
    )
    assert tool_result(tool("c2", "plain")) == ToolResult("c2", "plain")


@pytest.mark.parametrize(
    "url",
    ["data:text/plain;base64,aGk=", "data:image/png,notbase64", "data:image/png;base64,aGk", "https://x.test/a.png"],
)
def test_only_base64_image_data_urls_decode(url: str) -> None:
    assert decode_image_data_url(url) is None
    assert decode_image_data_url("data:image/png;base64, aG k=\n") == ImageAttachment("image/png", b"hi")


def test_a_chat_conversation_as_session_items() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "Let me see.", "tool_calls": [call("c1", arguments='{"path": "a.png"}')]},
        tool("c1", [text_part("Attached a.png"), image_part()]),
        {"role": "assistant", "content": None, "tool_calls": [call("c2", "Read")]},
        tool("c2", "notes"),
        {"role": "assistant", "content": "a cat"},
    ]
    assert session_items(messages) == [
        Message("system", "rules"),
        Message("user", "look"),
        Message("assistant", "Let me see."),
        ToolCall("c1", "ViewImage", '{"path": "a.png"}'),
        ToolResult("c1", "Attached a.png", attachments=(ImageAttachment("image/png", PNG_BYTES),)),
        ToolCall("c2", "Read", "{}"),
        ToolResult("c2", "notes"),
        Message("assistant", "a cat"),
    ]


def _blocks(*pairs: tuple[str, str]) -> str:
    return "\n".join(f'<tool_result tool_call_id="{call_id}">\n{text}\n</tool_result>' for call_id, text in pairs)


def test_an_earlier_runs_images_follow_it_as_one_user_image_turn() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        tool("c1", [text_part("one"), image_part()]),
        tool("c2", [image_part(), text_part("two")]),
        {"role": "assistant", "content": "cats"},
        {"role": "user", "content": "colour?"},
    ]
    lowered = cascade_messages(messages, vision=True)
    assert lowered[2:] == [
        {"role": "user", "content": _blocks(("c1", "one"), ("c2", "two"))},
        {"role": "user", "content": [image_part(), image_part()]},
        {"role": "assistant", "content": "cats"},
        {"role": "user", "content": "colour?"},
    ]
    assert lowered[:2] == lower_tool_turns(messages[:2])


def test_the_newest_runs_images_join_its_tool_result_turn() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
        tool("c1", [text_part("one"), image_part()]),
    ]
    assert cascade_messages(messages, vision=True)[-1] == {
        "role": "user",
        "content": [text_part(_blocks(("c1", "one"))), image_part()],
    }


def test_a_model_without_vision_gets_the_omitted_note_and_no_pixels() -> None:
    messages = [{"role": "user", "content": "look"}, tool("c1", [text_part("one"), image_part()])]
    assert cascade_messages(messages, vision=False)[-1] == {
        "role": "user",
        "content": _blocks(("c1", "one" + OMITTED_NOTE.format(n=1))),
    }


def test_durable_results_replace_the_requests_own_and_pruned_ones_lose_their_images() -> None:
    messages = [{"role": "user", "content": "look"}, tool("c1", "elided"), {"role": "user", "content": "?"}]
    stored = ToolResult("c1", "Attached a.png", attachments=(ImageAttachment("image/png", PNG_BYTES),))
    lowered = cascade_messages(messages, vision=True, durable={"c1": stored})
    assert lowered[1:3] == [
        {"role": "user", "content": _blocks(("c1", "Attached a.png"))},
        {"role": "user", "content": [image_part()]},
    ]
    pruned = cascade_messages(messages, vision=True, durable={"c1": stored}, pruned=frozenset({"c1"}))
    assert pruned[1:] == [{"role": "user", "content": _blocks(("c1", "Attached a.png"))}, messages[2]]

"""Chat lowering of a history that ends in tool calls still awaiting their results (seed 002, yoi.md §3)."""

from __future__ import annotations

from engine.sessions.items import Item, Message, ToolCall
from engine.sessions.lowering import lower_cascade_messages, lower_chat


def test_trailing_tool_calls_are_one_assistant_message_with_null_content() -> None:
    items: list[Item] = [
        Message("user", "Read both files."),
        ToolCall("call_1", "read_file", '{"path":"a.txt"}'),
        ToolCall("call_2", "read_file", "null"),
    ]
    expected = [
        {"role": "user", "content": "Read both files."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
            ],
        },
    ]
    assert lower_chat(items, vision=True) == expected
    assert lower_cascade_messages(items, vision=False) == expected

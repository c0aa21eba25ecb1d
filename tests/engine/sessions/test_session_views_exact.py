"""The exploration view's entries, field by field, for every item kind (yoi.md section 5)."""

from __future__ import annotations

from engine.sessions.items import History, Message, ToolCall, ToolResult
from engine.sessions.views import exploration_view
from tests.engine.session_support import png


def test_every_kind_of_entry_has_exactly_its_documented_fields() -> None:
    history = History(
        [
            Message("assistant", "Looking."),
            ToolCall("call_1", "view_image", '{"path":"a.png"}'),
            ToolResult("call_1", "Attached a.png", "some detail", True, (png(1), png(2))),
            ToolResult("call_2", "plain"),
        ],
        pruned=["call_1"],
    )
    assert exploration_view(history) == {
        "total": 4,
        "items": [
            {"index": 0, "type": "message", "role": "assistant", "summary": "Looking."},
            {
                "index": 1,
                "type": "tool_call",
                "call_id": "call_1",
                "name": "view_image",
                "summary": '{"path":"a.png"}',
            },
            {
                "index": 2,
                "type": "tool_result",
                "call_id": "call_1",
                "summary": "Attached a.png",
                "is_error": True,
                "content_chars": 11,
                "attachments": "2 image(s)",
            },
            {"index": 3, "type": "tool_result", "call_id": "call_2", "summary": "plain"},
        ],
        "pruned": [2],
        "next": None,
    }

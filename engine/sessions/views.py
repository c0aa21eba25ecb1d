"""Bounded views of a session's history for exploration and for the compaction summarizer (yoi.md section 5).

Neither view ever holds an image's bytes or base64: a tool result shows its attachment count
(``"attachments": "2 image(s)"``). Every free-text field (summaries, message text in the exploration view, call
ids, tool names, arguments) is capped at :data:`SUMMARY_CAP` characters: a longer one keeps its first
``SUMMARY_CAP - 1`` characters and ends with ``…``. The exploration view is one page of at most
:data:`VIEW_MAX_ITEMS` entries whose compact UTF-8 JSON (:func:`view_bytes`) is at most :data:`VIEW_MAX_BYTES`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from engine.sessions.items import History, Item, Message, ToolCall, ToolResult

SUMMARY_CAP: Final = 240
VIEW_MAX_BYTES: Final = 32 * 1024
VIEW_MAX_ITEMS: Final = 80
ELLIPSIS: Final = "…"


def cap_text(text: str, limit: int = SUMMARY_CAP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def attachment_count(result: ToolResult) -> str:
    return f"{len(result.attachments)} image(s)"


def view_bytes(view: dict[str, Any]) -> int:
    """The size the byte cap applies to: the view as compact UTF-8 JSON."""
    return len(json.dumps(view, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def exploration_view(
    history: History, *, start: int = 0, max_items: int = VIEW_MAX_ITEMS, max_bytes: int = VIEW_MAX_BYTES
) -> dict[str, Any]:
    """One page of entries from ``start``: ``{"total", "items", "pruned", "next"}``.

    ``items`` are consecutive entries, as many as fit both caps; ``pruned`` the indexes among them whose results a
    prune decision cleared; ``next`` the index of the first entry not shown, or None when the page reaches the end.
    """
    items, pruned = history.snapshot()
    if not 0 <= start <= len(items):
        raise ValueError(f"start: {start} is outside 0..{len(items)}")
    view = _page(len(items), [], [], start)
    for index in range(start, min(len(items), start + max_items)):
        item = items[index]
        marked = [*view["pruned"], index] if isinstance(item, ToolResult) and item.call_id in pruned else view["pruned"]
        candidate = _page(len(items), [*view["items"], _entry(index, item)], marked, index + 1)
        if view_bytes(candidate) > max_bytes:
            break
        view = candidate
    return view


def compaction_input(history: History, *, end: int | None = None) -> str:
    """The text the compaction summarizer reads for ``items[:end]``: one ``[index Kind] ...`` line per item.

    Messages keep their whole text (the conversation is what gets summarized); a tool call shows its name and
    capped arguments; a tool result only its capped summary, an error mark and its attachment count.
    """
    items = history.items[:end]
    return "\n".join(_line(index, item) for index, item in enumerate(items))


def _page(total: int, entries: list[dict[str, Any]], pruned: list[int], after: int) -> dict[str, Any]:
    return {"total": total, "items": entries, "pruned": pruned, "next": after if after < total else None}


def _entry(index: int, item: Item) -> dict[str, Any]:
    if isinstance(item, Message):
        return {"index": index, "type": "message", "role": item.role, "summary": cap_text(item.text)}
    if isinstance(item, ToolCall):
        return {
            "index": index,
            "type": "tool_call",
            "call_id": cap_text(item.call_id),
            "name": cap_text(item.name),
            "summary": cap_text(item.arguments),
        }
    entry: dict[str, Any] = {
        "index": index,
        "type": "tool_result",
        "call_id": cap_text(item.call_id),
        "summary": cap_text(item.summary),
    }
    if item.is_error:
        entry["is_error"] = True
    if item.content is not None:
        entry["content_chars"] = len(item.content)
    if item.attachments:
        entry["attachments"] = attachment_count(item)
    return entry


def _line(index: int, item: Item) -> str:
    if isinstance(item, Message):
        return f"[{index} {item.role.capitalize()}] {item.text}"
    if isinstance(item, ToolCall):
        return f"[{index} ToolCall] {cap_text(item.name)} {cap_text(item.arguments)}"
    line = f"[{index} ToolResult] {cap_text(item.summary)}"
    if item.is_error:
        line += " (error)"
    if item.attachments:
        line += f" (attachments: {attachment_count(item)})"
    return line

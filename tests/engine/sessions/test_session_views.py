"""Exploration and compaction views (seed 002, yoi.md section 5): attachment counts only, capped and bounded."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from engine.sessions.items import History, Item, Message, ToolCall, ToolResult
from engine.sessions.views import (
    SUMMARY_CAP,
    VIEW_MAX_BYTES,
    VIEW_MAX_ITEMS,
    cap_text,
    compaction_input,
    exploration_view,
    view_bytes,
)
from tests.engine.session_support import attachments_of, history_of_view_size, png, sample_items, user_messages

pytestmark = pytest.mark.invariant("ATT-7")


def _secrets(items: tuple[Item, ...]) -> list[str]:
    """Every image's base64 and its raw bytes read as latin-1: nothing of either may leak into a view."""
    found = []
    for attachments in attachments_of(items):
        for attachment in attachments:
            found += [base64.b64encode(attachment.data).decode(), attachment.data.decode("latin-1")]
    return found


def _assert_no_leak(text: str, items: tuple[Item, ...]) -> None:
    for secret in _secrets(items):
        leaked = [secret[i : i + 12] for i in range(len(secret) - 11) if secret[i : i + 12] in text]
        assert leaked == []


def _image_heavy_history() -> History:
    history = History(sample_items(), pruned=["call_b"])
    history.commit(
        ToolCall("call_big", "view_image", '{"path":"big.png"}'),
        ToolResult("call_big", "Attached image big.png", attachments=(png(11, 20_000),)),
    )
    return history


def test_a_result_shows_its_attachment_count_and_never_its_bytes() -> None:
    history = _image_heavy_history()
    view = exploration_view(history)
    entries = {entry["index"]: entry for entry in view["items"]}
    assert entries[5]["attachments"] == "1 image(s)"
    assert entries[6]["attachments"] == "2 image(s)"
    assert "attachments" not in entries[7]
    assert entries[6]["content_chars"] == len("both frames")
    assert view["pruned"] == [6]
    for text in (json.dumps(view), json.dumps(view, ensure_ascii=False), compaction_input(history)):
        _assert_no_leak(text, history.items)
    assert "data:image" not in json.dumps(view) + compaction_input(history)


def test_the_views_leave_the_history_and_its_images_alone() -> None:
    history = _image_heavy_history()
    before = (history.snapshot(), history.version)
    exploration_view(history)
    compaction_input(history)
    assert (history.snapshot(), history.version) == before


def test_the_compaction_input_lists_results_by_summary_and_count() -> None:
    history = History([*sample_items(), ToolResult("call_x", "Failed to read x.png", is_error=True)])
    lines = compaction_input(history).split("\n")
    assert lines[0] == "[0 System] You are a careful agent."
    assert lines[2] == '[2 ToolCall] view_image {"path":"a.png"}'
    assert lines[5] == "[5 ToolResult] Attached image a.png (image/png, 300 bytes) (attachments: 1 image(s))"
    assert lines[6] == "[6 ToolResult] Attached 2 images (attachments: 2 image(s))"
    assert "both frames" not in compaction_input(history)
    assert lines[-1] == "[9 ToolResult] Failed to read x.png (error)"
    assert compaction_input(history, end=3).split("\n") == lines[:3]


@pytest.mark.parametrize(("length", "kept"), [(0, 0), (SUMMARY_CAP, SUMMARY_CAP), (SUMMARY_CAP + 1, SUMMARY_CAP - 1)])
def test_summaries_are_capped_at_240_characters(length: int, kept: int) -> None:
    summary = "☃" * length
    history = History([ToolCall("c", "f", "x" * length), ToolResult("c", summary, attachments=(png(1),))])
    expected = summary if length <= SUMMARY_CAP else "☃" * kept + "…"
    assert len(expected) <= SUMMARY_CAP
    entry = exploration_view(history)["items"][1]
    assert entry["summary"] == expected
    assert compaction_input(history).split("\n")[1] == f"[1 ToolResult] {expected} (attachments: 1 image(s))"
    assert len(exploration_view(history)["items"][0]["summary"]) == min(length, SUMMARY_CAP)


def test_every_free_text_field_of_an_entry_is_capped() -> None:
    long = "y" * 1000
    history = History([Message("user", long), ToolCall(long, long, long), ToolResult(long, long, long)])
    for entry in exploration_view(history)["items"]:
        for key, value in entry.items():
            if isinstance(value, str):
                assert len(value) <= SUMMARY_CAP, key
    assert cap_text(long) == "y" * (SUMMARY_CAP - 1) + "…"
    assert cap_text("abc", 3) == "abc"


@pytest.mark.parametrize(("count", "shown", "next_index"), [(VIEW_MAX_ITEMS, 80, None), (VIEW_MAX_ITEMS + 1, 80, 80)])
def test_at_most_80_entries(count: int, shown: int, next_index: int | None) -> None:
    view = exploration_view(History(user_messages(count)))
    assert len(view["items"]) == shown
    assert view["next"] == next_index
    assert view["total"] == count


def test_the_next_page_starts_where_the_last_stopped() -> None:
    history = History(user_messages(200))
    first = exploration_view(history)
    second = exploration_view(history, start=first["next"])
    assert [e["index"] for e in second["items"]] == list(range(80, 160))
    assert exploration_view(history, start=200) == {"total": 200, "items": [], "pruned": [], "next": None}
    with pytest.raises(ValueError, match=r"^start: "):
        exploration_view(history, start=201)


@pytest.mark.parametrize("over", [0, 1])
def test_at_most_32_kib(over: int) -> None:
    history = history_of_view_size(VIEW_MAX_BYTES + over)
    count = len(history.items)
    assert view_bytes(exploration_view(history, max_bytes=10**9)) == VIEW_MAX_BYTES + over
    view = exploration_view(history)
    assert len(view["items"]) == count - over
    assert view_bytes(view) <= VIEW_MAX_BYTES
    assert view["next"] == (None if over == 0 else count - 1)


def test_the_byte_cap_holds_for_image_results_at_the_limit() -> None:
    results: list[Item] = [
        ToolResult(f"call_{i}", "é" * SUMMARY_CAP, "c" * 10_000, attachments=(png(i, 50),) * 3) for i in range(79)
    ]
    history = History(results, pruned=["call_3"])
    view = exploration_view(history)
    assert view_bytes(view) <= VIEW_MAX_BYTES
    assert view_bytes(_with_next_entry(view, history)) > VIEW_MAX_BYTES
    assert view["pruned"] == [3]
    _assert_no_leak(json.dumps(view, ensure_ascii=False), history.items)


def _with_next_entry(view: dict[str, Any], history: History) -> dict[str, Any]:
    longer = exploration_view(history, max_items=len(view["items"]) + 1, max_bytes=10**9)
    assert len(longer["items"]) == len(view["items"]) + 1
    return longer

"""The durable item model (seed 002): lossless JSON, strict parsing, back-compat, and the append-only History."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given

from engine.sessions.items import (
    Change,
    History,
    ImageAttachment,
    Item,
    Message,
    ToolCall,
    ToolResult,
    image_data_url,
    item_from_json,
    item_to_json,
    result_text,
    retained_split,
)
from tests.engine.session_support import attachments_of, items_strategy, png, sample_items


def _json_round_trip(item: Item) -> Item:
    return item_from_json(json.loads(json.dumps(item_to_json(item))))


# ------------------------------------------------------------------------------------ JSON


@pytest.mark.invariant("ATT-1")
@given(items_strategy)
def test_every_item_survives_a_json_text_round_trip(item: Item) -> None:
    text = json.dumps(item_to_json(item))
    assert item_from_json(json.loads(text)) == item
    for attachment in attachments_of([item])[0] if isinstance(item, ToolResult) else ():
        assert base64.b64encode(attachment.data).decode() in text


def test_a_binary_image_is_written_as_standard_padded_base64_never_as_raw_bytes() -> None:
    result = ToolResult("call_image", "attached", attachments=(ImageAttachment("image/png", b"image-body\x00\xff"),))
    doc = item_to_json(result)
    assert doc == {
        "type": "tool_result",
        "call_id": "call_image",
        "summary": "attached",
        "attachments": [{"type": "image", "payload": {"mime_type": "image/png", "data": "aW1hZ2UtYm9keQD/"}}],
    }
    text = json.dumps(doc)
    assert "image-body" not in text
    assert _json_round_trip(result) == result


def test_optional_keys_are_omitted_at_their_defaults_and_written_otherwise() -> None:
    assert item_to_json(ToolResult("c", "s")) == {"type": "tool_result", "call_id": "c", "summary": "s"}
    full = item_to_json(ToolResult("c", "s", "", True, (png(0, 9),)))
    assert list(full) == ["type", "call_id", "summary", "content", "is_error", "attachments"]
    assert full["content"] == ""
    assert full["is_error"] is True


@pytest.mark.parametrize(
    "doc",
    [
        {"type": "tool_result", "call_id": "c", "summary": "s"},
        {"type": "tool_result", "call_id": "c", "summary": "s", "attachments": []},
        {"type": "tool_result", "call_id": "c", "summary": "s", "content": None, "is_error": False},
    ],
    ids=["old-record-without-attachments", "explicit-empty-list", "explicit-defaults"],
)
def test_old_records_without_optional_keys_load_with_the_defaults(doc: dict[str, Any]) -> None:
    assert item_from_json(doc) == ToolResult("c", "s", None, False, ())


def test_messages_and_calls_round_trip_in_their_own_shapes() -> None:
    assert item_to_json(Message("user", "hi")) == {"type": "message", "role": "user", "text": "hi"}
    assert item_to_json(ToolCall("c", "f", "{}")) == {
        "type": "tool_call",
        "call_id": "c",
        "name": "f",
        "arguments": "{}",
    }
    for item in sample_items():
        assert _json_round_trip(item) == item


def _result(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": "tool_result", "call_id": "c", "summary": "s"}
    doc.update(overrides)
    return doc


def _with_image(**payload: Any) -> dict[str, Any]:
    return _result(attachments=[{"type": "image", "payload": {"mime_type": "image/png", "data": "AAAA", **payload}}])


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "item"),
        ({"type": "reasoning"}, "item.type"),
        ({"role": "user", "text": "x"}, "item.type"),
        ({"type": "message", "role": "tool", "text": "x"}, "message.role"),
        ({"type": "message", "role": "user"}, "message.text"),
        ({"type": "tool_call", "call_id": "c", "name": "f", "arguments": {}}, "tool_call.arguments"),
        (_result(call_id=None), "tool_result.call_id"),
        ({"type": "tool_result", "call_id": "c"}, "tool_result.summary"),
        (_result(summary=3), "tool_result.summary"),
        (_result(content=[]), "tool_result.content"),
        (_result(is_error="yes"), "tool_result.is_error"),
        (_result(is_error=1), "tool_result.is_error"),
        (_result(attachments={}), "tool_result.attachments"),
        (_result(id="x"), "tool_result.id"),
        (_result(attachments=["AAAA"]), "tool_result.attachments[0]"),
        (_result(attachments=[{"type": "audio", "payload": {}}]), "tool_result.attachments[0].type"),
        (_result(attachments=[{"type": "image"}]), "tool_result.attachments[0].payload"),
        (_with_image(data=None), "tool_result.attachments[0].payload.data"),
        (_with_image(data="not base64!"), "tool_result.attachments[0].payload.data"),
        (_with_image(data="aW1hZ2U"), "tool_result.attachments[0].payload.data"),
        (_with_image(data="-_-_"), "tool_result.attachments[0].payload.data"),
        (_with_image(data="QR=="), "tool_result.attachments[0].payload.data"),
        (_with_image(data="AAAA\n"), "tool_result.attachments[0].payload.data"),
        (_with_image(mime_type="image/png;x"), "tool_result.attachments[0].payload.mime_type"),
        (_with_image(mime_type="text/plain"), "tool_result.attachments[0].payload.mime_type"),
        (_with_image(width=3), "tool_result.attachments[0].payload.width"),
    ],
)
def test_a_malformed_document_is_refused_naming_the_field(doc: object, field: str) -> None:
    with pytest.raises(ValueError, match=r"^" + re.escape(field) + ": "):
        item_from_json(doc)


def test_the_values_validate_their_fields_and_an_image_shows_only_its_size() -> None:
    with pytest.raises(ValueError, match=r"^attachments: expected tuple"):
        ToolResult("c", "s", attachments=[png(0)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^role: "):
        Message("tool", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^data: expected bytes"):
        ImageAttachment("image/png", "AAAA")  # type: ignore[arg-type]
    assert (
        repr(ImageAttachment("image/gif", b"GIF89a" * 10)) == "ImageAttachment(mime_type='image/gif', data=<60 bytes>)"
    )
    assert hash(sample_items()[6]) == hash(sample_items()[6])


def test_the_data_url_and_the_result_text() -> None:
    assert image_data_url(ImageAttachment("image/png", b"image-body")) == "data:image/png;base64,aW1hZ2UtYm9keQ=="
    assert result_text(ToolResult("c", "summary")) == "summary"
    assert result_text(ToolResult("c", "summary", "")) == "summary\n"
    assert result_text(ToolResult("c", "summary", "body")) == "summary\nbody"


# ------------------------------------------------------------------------------------ History


def test_history_hands_out_snapshots_and_bumps_its_version_per_change() -> None:
    history = History()
    first = history.items
    history.commit(*sample_items()[:3])
    assert first == ()
    assert isinstance(history.items, tuple)
    assert len(history.items) == 3
    assert history.version == 3
    history.commit()
    assert history.version == 3
    assert History(sample_items()).version == 0
    assert History(sample_items()) == History(sample_items())
    assert History(sample_items()) != History(sample_items()[:-1])


def test_observers_see_each_operation_before_the_history_shows_it() -> None:
    history = History(sample_items()[:2])
    seen: list[tuple[list[Change], int]] = []
    history.add_observer(lambda changes: seen.append((list(changes), len(history.items))))
    history.commit(*sample_items()[2:5])
    assert [(len(changes), before) for changes, before in seen] == [(3, 2)]
    assert [change.kind for change in seen[0][0]] == ["item", "item", "item"]
    assert seen[0][0][0].body == item_to_json(sample_items()[2])


def test_a_refusing_observer_leaves_the_history_unchanged() -> None:
    history = History(sample_items()[:5])
    before = (history.snapshot(), history.version)

    def refuse(changes: Sequence[Change]) -> None:
        raise OSError("disk full")

    history.add_observer(refuse)
    with pytest.raises(OSError, match="disk full"):
        history.commit(sample_items()[5])
    with pytest.raises(OSError, match="disk full"):
        history.compact("summary", 2)
    assert (history.snapshot(), history.version) == before
    history.remove_observer(refuse)
    history.commit(sample_items()[5])
    assert len(history.items) == 6


@pytest.mark.invariant("ATT-5")
def test_a_prune_decision_is_sticky_and_leaves_the_items_alone() -> None:
    history = History(sample_items())
    items = history.items
    history.record_prune(["call_a", "call_b"])
    history.commit(Message("user", "and now?"))
    assert history.pruned == {"call_a", "call_b"}
    assert history.items[: len(items)] == items
    assert attachments_of(history.items) == attachments_of(items)
    version = history.version
    history.record_prune(["call_a"])  # already pruned: nothing to record
    history.record_prune([])
    assert history.version == version
    with pytest.raises(ValueError, match="is not the call id of a result"):
        history.record_prune(["call_missing"])
    assert history.pruned == {"call_a", "call_b"}


@pytest.mark.invariant("ATT-5")
def test_compaction_clears_the_prune_decisions_and_keeps_the_retained_images() -> None:
    history = History(sample_items(), pruned=["call_a"])
    history.compact("The user asked to compare two images.", 7)
    # The results from index 7 answer calls from index 2..4: the split is pulled back to the first of them.
    assert history.items == (Message("system", "The user asked to compare two images."), *sample_items()[2:])
    assert history.pruned == frozenset()
    assert attachments_of(history.items) == attachments_of(sample_items())


@pytest.mark.parametrize(
    ("retain_from", "split"),
    [(0, 0), (2, 2), (3, 2), (5, 2), (6, 2), (8, 8), (9, 9)],
)
def test_the_retained_split_moves_back_to_the_call_of_every_retained_result(retain_from: int, split: int) -> None:
    assert retained_split(sample_items(), retain_from) == split


def test_the_split_follows_a_chain_of_batches_back() -> None:
    items: list[Item] = [
        ToolCall("c1", "f", "{}"),
        ToolCall("c2", "f", "{}"),
        ToolResult("c1", "one"),
        ToolResult("c2", "two"),  # retaining it retains c2's call, hence "one" too, hence c1's call
        ToolResult("orphan", "no call"),
        ToolCall("c1", "f", "{}"),  # a reused id answers its latest earlier call
        ToolResult("c1", "again"),
    ]
    assert [retained_split(items, n) for n in range(len(items) + 1)] == [0, 0, 0, 0, 4, 5, 5, 7]


def test_compaction_refuses_a_split_outside_the_history() -> None:
    history = History(sample_items())
    for bad in (-1, len(sample_items()) + 1):
        with pytest.raises(ValueError, match=r"^retain_from: "):
            history.compact("s", bad)
    assert history == History(sample_items())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (Change("item", {"type": "tool_result", "call_id": "c"}), "tool_result.summary"),
        (Change("prune", {"call_ids": []}), "prune.call_ids"),
        (Change("prune", {"call_ids": ["call_a", "call_a"]}), r"prune.call_ids\[1\]"),
        (Change("prune", {"call_ids": ["call_x"]}), r"prune.call_ids\[0\]"),
        (Change("prune", {"ids": ["call_a"]}), "prune.call_ids"),
        (Change("compact", {"summary": "s", "retain_from": 3}), "compact.retain_from"),
        (Change("compact", {"summary": "s", "retain_from": 99}), "compact.retain_from"),
        (Change("compact", {"summary": None, "retain_from": 2}), "compact.summary"),
        (Change("rewrite", {}), "change.kind"),  # type: ignore[arg-type]
    ],
)
def test_a_malformed_recorded_change_is_refused_naming_the_field(change: Change, field: str) -> None:
    history = History(sample_items())
    with pytest.raises(ValueError, match=f"^{field}: "):
        history.apply(change)
    assert history == History(sample_items())
    assert history.version == 0

"""The durable item model at its exact edges: value checks with their messages, the JSON form key by key, the
History's compaction and prune bounds and the messages that name a bad field."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.sessions.items import (
    Change,
    History,
    ImageAttachment,
    Item,
    Message,
    ToolCall,
    ToolResult,
    item_from_json,
    item_to_json,
)
from tests.engine.session_support import sample_items

# ------------------------------------------------------------------------------------ values


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ImageAttachment(b"image/png", b""), "mime_type: expected str, got bytes"),  # type: ignore[arg-type]
        (lambda: ImageAttachment("text/plain", b""), "mime_type: 'text/plain' is not an image/<subtype> MIME type"),
        (lambda: ImageAttachment("image/", b""), "mime_type: 'image/' is not an image/<subtype> MIME type"),
        (lambda: ImageAttachment("image/png", "x"), "data: expected bytes, got str"),  # type: ignore[arg-type]
        (lambda: Message("tool", "x"), "role: 'tool' is not one of assistant, system, user"),  # type: ignore[arg-type]
        (lambda: Message("user", None), "text: expected str, got NoneType"),  # type: ignore[arg-type]
        (lambda: ToolCall(1, "f", "{}"), "call_id: expected str, got int"),  # type: ignore[arg-type]
        (lambda: ToolCall("c", None, "{}"), "name: expected str, got NoneType"),  # type: ignore[arg-type]
        (lambda: ToolCall("c", "f", {}), "arguments: expected str, got dict"),  # type: ignore[arg-type]
        (lambda: ToolResult(None, "s"), "call_id: expected str, got NoneType"),  # type: ignore[arg-type]
        (lambda: ToolResult("c", b"s"), "summary: expected str, got bytes"),  # type: ignore[arg-type]
        (lambda: ToolResult("c", "s", 3), "content: expected str, got int"),  # type: ignore[arg-type]
        (lambda: ToolResult("c", "s", is_error=1), "is_error: expected bool, got int"),  # type: ignore[arg-type]
        (lambda: ToolResult("c", "s", attachments=[]), "attachments: expected tuple, got list"),  # type: ignore[arg-type]
        (
            lambda: ToolResult("c", "s", attachments=(ImageAttachment("image/png", b""), "x")),  # type: ignore[arg-type]
            "attachments[1]: expected ImageAttachment, got str",
        ),
    ],
)
def test_a_bad_value_is_refused_with_a_message_naming_field_and_types(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        build()


def test_a_bool_is_not_accepted_where_a_string_is_expected_but_is_where_a_bool_is() -> None:
    with pytest.raises(ValueError, match=r"^summary: expected str, got bool$"):
        ToolResult("c", True)  # type: ignore[arg-type]
    assert ToolResult("c", "s", is_error=True).is_error is True


@pytest.mark.parametrize("mime", ["image/png", "image/svg+xml", "image/vnd.ms-photo", "image/x_1!#$&^"])
def test_image_subtypes_made_of_token_characters_are_accepted(mime: str) -> None:
    assert ImageAttachment(mime, b"x").mime_type == mime


@pytest.mark.parametrize("mime", ["image/png;x", "image/png ", "image/-png", "IMAGE/png", "image/pñg", "image/a,b"])
def test_image_subtypes_that_could_break_a_data_url_are_refused(mime: str) -> None:
    with pytest.raises(ValueError, match=r"^mime_type: "):
        ImageAttachment(mime, b"x")


# ------------------------------------------------------------------------------------ JSON


def test_a_result_with_every_field_has_the_documented_json_form() -> None:
    result = ToolResult("call_1", "two images", "body", True, (ImageAttachment("image/gif", b"GIF89a"),))
    assert item_to_json(result) == {
        "type": "tool_result",
        "call_id": "call_1",
        "summary": "two images",
        "content": "body",
        "is_error": True,
        "attachments": [{"type": "image", "payload": {"mime_type": "image/gif", "data": "R0lGODlh"}}],
    }
    assert item_from_json(item_to_json(result)) == result


def test_a_document_with_every_optional_field_loads_them_all() -> None:
    doc = {
        "type": "tool_result",
        "call_id": "c",
        "summary": "s",
        "content": "",
        "is_error": True,
        "attachments": [
            {"type": "image", "payload": {"mime_type": "image/png", "data": "AAE="}},
            {"type": "image", "payload": {"mime_type": "image/webp", "data": ""}},
        ],
    }
    loaded = item_from_json(doc)
    assert loaded == ToolResult(
        "c", "s", "", True, (ImageAttachment("image/png", b"\x00\x01"), ImageAttachment("image/webp", b""))
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("x", "item: expected dict, got str"),
        ({"type": "reasoning"}, "item.type: 'reasoning' is not one of message, tool_call, tool_result"),
        ({"type": "message", "text": "x"}, "message.role: missing"),
        ({"type": "message", "role": "user", "text": "x", "name": "n"}, "message.name: unknown field"),
        ({"type": "message", "role": 1, "text": "x"}, "message.role: expected str, got int"),
        ({"type": "message", "role": "user", "text": None}, "message.text: expected str, got NoneType"),
        (
            {"type": "message", "role": "tool", "text": "x"},
            "message.role: 'tool' is not one of assistant, system, user",
        ),
        ({"type": "tool_call", "call_id": "c", "arguments": "{}"}, "tool_call.name: missing"),
        ({"type": "tool_call", "call_id": "c", "name": 5, "arguments": "{}"}, "tool_call.name: expected str, got int"),
        ({"type": "tool_result", "summary": "s"}, "tool_result.call_id: missing"),
        (
            {"type": "tool_result", "call_id": "c", "summary": "s", "content": 1},
            "tool_result.content: expected str, got int",
        ),
        (
            {"type": "tool_result", "call_id": "c", "summary": "s", "is_error": None},
            "tool_result.is_error: expected bool, got NoneType",
        ),
        (
            {"type": "tool_result", "call_id": "c", "summary": "s", "attachments": None},
            "tool_result.attachments: expected list, got NoneType",
        ),
    ],
)
def test_a_malformed_document_is_refused_with_the_exact_message(doc: object, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        item_from_json(doc)


def _image(payload: object, **extra: object) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "call_id": "c",
        "summary": "s",
        "attachments": [{"type": "image", "payload": payload, **extra}],
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_image({"mime_type": "image/png", "data": "AA=="}, alt="x"), "tool_result.attachments[0].alt: unknown field"),
        ({**_image({}), "attachments": [{"payload": {}}]}, "tool_result.attachments[0].type: missing"),
        (
            {**_image({}), "attachments": [{"type": "file", "payload": {}}]},
            "tool_result.attachments[0].type: 'file' is not 'image'",
        ),
        (_image([]), "tool_result.attachments[0].payload: expected dict, got list"),
        (_image({"data": "AA=="}), "tool_result.attachments[0].payload.mime_type: missing"),
        (
            _image({"mime_type": 1, "data": "AA=="}),
            "tool_result.attachments[0].payload.mime_type: expected str, got int",
        ),
        (
            _image({"mime_type": "image/x y", "data": "AA=="}),
            "tool_result.attachments[0].payload.mime_type: 'image/x y' is not an image/<subtype> MIME type",
        ),
        (
            _image({"mime_type": "image/png", "data": 1}),
            "tool_result.attachments[0].payload.data: expected str, got int",
        ),
        (
            _image({"mime_type": "image/png", "data": "AB=="}),
            "tool_result.attachments[0].payload.data: not canonical standard padded base64",
        ),
    ],
)
def test_a_malformed_attachment_is_refused_with_the_exact_message(doc: object, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        item_from_json(doc)


def test_undecodable_base64_is_reported_with_the_decoder_reason() -> None:
    with pytest.raises(
        ValueError, match=r"^tool_result\.attachments\[0\]\.payload\.data: not standard padded base64 \(.+\)$"
    ):
        item_from_json(_image({"mime_type": "image/png", "data": "A"}))


def test_the_first_missing_and_first_unknown_key_are_named_in_sorted_order() -> None:
    with pytest.raises(ValueError, match=r"^tool_call\.arguments: missing$"):
        item_from_json({"type": "tool_call"})
    with pytest.raises(ValueError, match=r"^message\.a: unknown field$"):
        item_from_json({"type": "message", "role": "user", "text": "x", "z": 1, "a": 2})


# ------------------------------------------------------------------------------------ History


def _calls_and_results() -> list[Item]:
    return [Message("user", "go"), ToolCall("c1", "f", "{}"), ToolResult("c1", "one", "detail")]


@pytest.mark.parametrize("retain_from", [0, 3])
def test_compaction_accepts_both_ends_of_the_history(retain_from: int) -> None:
    history = History(_calls_and_results())
    history.compact("summary", retain_from)
    assert history.items == (Message("system", "summary"), *_calls_and_results()[retain_from:])


@pytest.mark.parametrize(
    ("summary", "retain_from", "message"),
    [
        (None, 0, "summary: expected str, got NoneType"),
        ("s", "1", "retain_from: expected int, got str"),
        ("s", True, "retain_from: expected int, got bool"),
        ("s", 4, "retain_from: 4 is outside 0..3"),
        ("s", -1, "retain_from: -1 is outside 0..3"),
    ],
)
def test_compaction_refuses_bad_arguments_with_the_exact_message(summary: Any, retain_from: Any, message: str) -> None:
    history = History(_calls_and_results())
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        history.compact(summary, retain_from)
    assert history.items == tuple(_calls_and_results())


@pytest.mark.parametrize("split", [0, 3])
def test_a_recorded_compaction_replays_at_both_ends(split: int) -> None:
    history = History(_calls_and_results(), pruned=["c1"])
    history.apply(Change("compact", {"summary": "s", "retain_from": split}))
    assert history.snapshot() == ((Message("system", "s"), *_calls_and_results()[split:]), frozenset())
    assert history.version == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"summary": "s"}, "compact.retain_from: missing"),
        ({"summary": "s", "retain_from": 0, "keep": 1}, "compact.keep: unknown field"),
        ({"summary": "s", "retain_from": 1.0}, "compact.retain_from: expected int, got float"),
        ({"summary": 2, "retain_from": 1}, "compact.summary: expected str, got int"),
        ({"summary": "s", "retain_from": -1}, "compact.retain_from: -1 is outside 0..3"),
        ({"summary": "s", "retain_from": 4}, "compact.retain_from: 4 is outside 0..3"),
        (
            {"summary": "s", "retain_from": 2},
            "compact.retain_from: 2 separates a retained ToolResult from its ToolCall",
        ),
        ("not a mapping", "change.body: expected Mapping, got str"),
    ],
)
def test_a_malformed_recorded_compaction_is_refused_with_the_exact_message(body: Any, message: str) -> None:
    history = History(_calls_and_results())
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        history.apply(Change("compact", body))
    assert history.version == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"call_ids": "call_a"}, "prune.call_ids: expected list, got str"),
        ({"call_ids": []}, "prune.call_ids: empty"),
        ({"call_ids": [7]}, "prune.call_ids[0]: expected str, got int"),
        ({"call_ids": ["call_a", "call_zz"]}, "prune.call_ids[1]: 'call_zz' is not the call id of a result in history"),
        ({"call_ids": ["call_a", "call_b", "call_a"]}, "prune.call_ids[2]: 'call_a' is already pruned"),
        ({"call_ids": ["call_n"]}, "prune.call_ids[0]: 'call_n' is already pruned"),
    ],
)
def test_a_malformed_recorded_prune_is_refused_with_the_exact_message(body: Any, message: str) -> None:
    history = History(sample_items(), pruned=["call_n"])
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        history.apply(Change("prune", body))
    assert history.pruned == {"call_n"}


def test_a_recorded_prune_of_a_call_id_without_a_result_is_refused() -> None:
    history = History([ToolCall("c1", "f", "{}")])
    with pytest.raises(ValueError, match=r"^prune\.call_ids\[0\]: 'c1' is not the call id of a result in history$"):
        history.apply(Change("prune", {"call_ids": ["c1"]}))


def test_an_unknown_change_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match=r"^change\.kind: 'rewrite' is not one of compact, item, prune$"):
        History().apply(Change("rewrite", {}))  # type: ignore[arg-type]


def test_committing_something_that_is_not_an_item_is_refused_and_nothing_is_recorded() -> None:
    history = History()
    seen: list[object] = []
    history.add_observer(seen.append)
    with pytest.raises(ValueError, match=r"^item: expected Message, ToolCall or ToolResult, got dict$"):
        history.commit(Message("user", "a"), {"type": "message"})  # type: ignore[arg-type]
    assert (history.items, seen, history.version) == ((), [], 0)


def test_a_prune_records_the_new_ids_sorted_and_bumps_the_version_once() -> None:
    history = History(sample_items(), pruned=["call_b"])
    seen: list[list[Change]] = []
    history.add_observer(lambda changes: seen.append(list(changes)))
    history.record_prune(["call_n", "call_b", "call_a", "call_n"])
    assert seen == [[Change("prune", {"call_ids": ["call_a", "call_n"]})]]
    assert history.version == 1
    assert history.pruned == {"call_a", "call_b", "call_n"}


def test_the_history_repr_and_equality() -> None:
    history = History(sample_items(), pruned=["call_n", "call_a"])
    history.commit(Message("user", "x"))
    assert repr(history) == "History(10 items, pruned=['call_a', 'call_n'], version=1)"
    assert history != History(sample_items(), pruned=["call_n", "call_a"])
    assert History(sample_items(), pruned=["call_a"]) != History(sample_items())
    assert (History() == "History") is False
    assert History().__eq__(object()) is NotImplemented


@pytest.mark.parametrize("data", ["AAAA\n", "AA-_", "AA AA=="])
def test_base64_with_characters_outside_the_alphabet_is_refused_by_the_decoder(data: str) -> None:
    with pytest.raises(
        ValueError, match=r"^tool_result\.attachments\[0\]\.payload\.data: not standard padded base64 \("
    ):
        item_from_json(_image({"mime_type": "image/png", "data": data}))


def test_the_version_counts_every_change_record_across_operations() -> None:
    history = History(sample_items()[:5])
    history.commit(*sample_items()[5:7])
    history.commit(sample_items()[7])
    history.record_prune(["call_a", "call_b"])
    history.compact("s", 2)
    assert history.version == 5

"""Durable tool-result images on the Cascade path (seed 002 on top of seed 000's history images).

The Cascade lowering produces Chat messages; ``lower_tool_turns`` turns the tool turns into text and
``build_cascade_prompt`` builds the Send. A run's images are one user turn of ``image_url`` parts, so
they reach field 6 through the builder's one history-image pipeline: the same caps, ordinals and
``[Image #N attached to this request — from an earlier turn]`` markers, or a counted drop. Checked by
decoding what the builder returns (its text and field-6 list), as the prompt tests do.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import pytest

from engine.http.tool_history import lower_tool_turns
from engine.prompt.build import Message as PromptMessage
from engine.prompt.build import PromptBuild
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.prompt.metrics import DropCounts, ImageHistoryMetrics
from engine.sessions.items import ImageAttachment, Item, Message, ToolCall, ToolResult
from engine.sessions.lowering import OMITTED_NOTE, lower_cascade_messages, lower_chat
from tests.engine.prompt_support import IMG_A, IMG_B, IMG_C, MARKER, build, png, png_b64


def att(data: str) -> ImageAttachment:
    return ImageAttachment("image/png", base64.b64decode(data))


def send(
    items: Sequence[Item], *, vision: bool = True, pruned: frozenset[str] = frozenset(), **kwargs: Any
) -> PromptBuild:
    """The Send the engine builds from a session history: lowering, tool turns as text, the prompt builder."""
    chat = lower_cascade_messages(items, vision=vision, pruned=pruned)
    replayed = lower_tool_turns(chat)
    return build([PromptMessage(str(m["role"]), m.get("content")) for m in replayed], **kwargs)


def tool_turn(*blocks: tuple[str, str]) -> str:
    body = "\n".join(f'<tool_result tool_call_id="{call_id}">\n{text}\n</tool_result>' for call_id, text in blocks)
    return f"<human>\n{body}\n</human>"


def viewed(call_id: str, *images: str) -> list[Item]:
    return [
        ToolCall(call_id, "ViewImage", "{}"),
        ToolResult(call_id, f"viewed {call_id}", attachments=tuple(map(att, images))),
    ]


def later_turns(question: str = "what colour?") -> list[Item]:
    return [Message("assistant", "a cat"), Message("user", question)]


@pytest.mark.invariant("ATT-4")
def test_a_tool_result_image_from_an_earlier_turn_rides_field_6_with_the_history_marker() -> None:
    items: list[Item] = [
        Message("user", "look at a.png"),
        ToolCall("c1", "ViewImage", '{"path":"a.png"}'),
        ToolCall("c2", "Read", "{}"),
        ToolResult("c1", "Attached image a.png", attachments=(att(IMG_A),)),
        ToolResult("c2", "Read notes", content="meow"),
        *later_turns(),
    ]
    metrics = ImageHistoryMetrics()
    result = send(items, metrics=metrics)
    assert result.images == (png(IMG_A),)
    assert (result.attached, result.drops) == (1, DropCounts())
    # The run's tool text, then its image turn carrying the marker in place of the image.
    expected = (
        tool_turn(("c1", "Attached image a.png"), ("c2", "Read notes\nmeow"))
        + f"\n\n<human>\n{MARKER.format(n=1)}\n</human>"
    )
    assert expected in result.text
    assert IMAGE_PLACEHOLDER not in result.text
    assert IMG_A not in result.text  # pixels ride field 6 only, never the text
    assert result.text.endswith("<assistant>\na cat\n</assistant>\n\n<human>\nwhat colour?\n</human>")
    assert metrics.snapshot()["cascade_image_history_attached"] == 1
    assert send(items) == result  # deterministic


@pytest.mark.invariant("ATT-4")
def test_tool_result_images_are_numbered_after_the_current_turns_images_in_chronological_order() -> None:
    items: list[Item] = [
        Message("user", "go"),
        *viewed("c1", IMG_A),
        Message("assistant", "one"),
        Message("user", "next"),
        *viewed("c2", IMG_B),
        *later_turns(),
    ]
    result = send(items)
    assert result.images == (png(IMG_A), png(IMG_B))
    assert f"{tool_turn(('c1', 'viewed c1'))}\n\n<human>\n{MARKER.format(n=1)}\n</human>" in result.text
    assert f"{tool_turn(('c2', 'viewed c2'))}\n\n<human>\n{MARKER.format(n=2)}\n</human>" in result.text


@pytest.mark.invariant("ATT-4")
def test_too_many_tool_result_images_are_capped_newest_first_and_counted() -> None:
    images = [png_b64(70 + i) for i in range(6)]
    items: list[Item] = [
        Message("user", "old"),
        *viewed("c0", images[0], images[1]),
        Message("assistant", "seen"),
        Message("user", "more"),
        ToolCall("c1", "ViewImage", "{}"),
        ToolCall("c2", "ViewImage", "{}"),
        ToolResult("c1", "two", attachments=(att(images[2]), att(images[3]))),
        ToolResult("c2", "two more", attachments=(att(images[4]), att(images[5]))),
        *later_turns(),
    ]
    metrics = ImageHistoryMetrics()
    result = send(items, metrics=metrics)  # default cap: 4 history images
    assert result.images == tuple(png(d) for d in images[2:])  # the newest turn's four, document order
    assert result.drops == DropCounts(cap=2)
    assert f"<human>\n{IMAGE_PLACEHOLDER}{IMAGE_PLACEHOLDER}\n</human>" in result.text  # the older run, dropped
    markers = "".join(MARKER.format(n=n) for n in range(1, 5))
    assert f"{tool_turn(('c1', 'two'), ('c2', 'two more'))}\n\n<human>\n{markers}\n</human>" in result.text
    assert metrics.snapshot()["dropped_by_reason"]["cap"] == 2
    capped = send(items, env={"CASCADE_MAX_HISTORY_IMAGES": "1"})
    assert (capped.images, capped.drops) == ((png(images[2]),), DropCounts(cap=5))


@pytest.mark.invariant("ATT-4")
def test_the_byte_cap_and_the_vision_gate_count_tool_result_images_as_dropped() -> None:
    items: list[Item] = [Message("user", "go"), *viewed("c1", IMG_A, IMG_B), *later_turns()]
    spent = send(items, env={"CASCADE_MAX_HISTORY_IMAGE_BYTES": str(len(IMG_A))})
    assert (spent.images, spent.drops) == ((png(IMG_A),), DropCounts(bytes=1))
    gated = send(items, tool_preamble="<tools>call f</tools>")  # no vision on the wire: counted, not attached
    assert (gated.images, gated.drops, gated.planner_default) == ((), DropCounts(no_vision=2), False)
    assert f"<human>\n{IMAGE_PLACEHOLDER}{IMAGE_PLACEHOLDER}\n</human>" in gated.text


@pytest.mark.invariant("ATT-4")
def test_the_newest_runs_images_are_the_current_turns_images() -> None:
    items: list[Item] = [Message("user", "look"), *viewed("c1", IMG_A, IMG_B)]
    result = send(items)
    assert result.images == (png(IMG_A), png(IMG_B))  # field 6 first, the current turn's, unmarked
    assert (result.attached, result.drops) == (0, DropCounts())
    assert result.text.endswith(f"{tool_turn(('c1', 'viewed c1'))}\n\n<human>\n\n</human>")
    assert MARKER.format(n=1) not in result.text
    # One request later the same images are history images, numbered after the new turn's own image.
    later = [*items, Message("assistant", "two cats"), Message("user", "and this?")]
    chat = [*lower_cascade_messages(later, vision=True)[:-1], {"role": "user", "content": [_image_block(IMG_C)]}]
    next_send = build([PromptMessage(str(m["role"]), m.get("content")) for m in lower_tool_turns(chat)])
    assert next_send.images == (png(IMG_C), png(IMG_A), png(IMG_B))
    assert f"<human>\n{MARKER.format(n=2)}{MARKER.format(n=3)}\n</human>" in next_send.text


def _image_block(data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


@pytest.mark.invariant("ATT-5")
def test_pruned_and_text_only_model_results_send_no_pixels_and_count_nothing() -> None:
    items: list[Item] = [Message("user", "go"), *viewed("c1", IMG_A), *viewed("c2", IMG_B), *later_turns()]
    pruned = send(items, pruned=frozenset({"c1"}))
    assert (pruned.images, pruned.drops) == ((png(IMG_B),), DropCounts())
    assert f"{tool_turn(('c1', 'viewed c1'))}\n\n<assistant>" in pruned.text  # no image turn for the pruned run
    blind = send(items, vision=False)
    assert (blind.images, blind.drops) == ((), DropCounts())
    assert tool_turn(("c1", "viewed c1" + OMITTED_NOTE.format(n=1))) in blind.text
    assert lower_cascade_messages(items, vision=False) == lower_chat(items, vision=False)

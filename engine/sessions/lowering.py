"""Durable session history lowered to provider wire shapes (seed 002, yoi.md §3): pure projections.

Every lowering is a function of ``(items, pruned, vision)`` only: no ids, timestamps or ``detail``
values are invented, dicts are built in one fixed key order and ``pruned`` is only ever tested for
membership, so the JSON is byte-identical across calls and processes. A pruned result lowers as its
:func:`engine.sessions.pruning.project` (summary only, no images). The text of a result is
:func:`engine.sessions.items.result_text`; without vision its images are replaced by
:data:`OMITTED_NOTE` appended to that text, and no ``data:image`` URL is emitted anywhere.

* :func:`lower_responses` (OpenAI Responses ``input``): one input item per history item. A result's
  ``function_call_output.output`` is a string when it has no images (pruned or no vision included),
  else ``[input_text, input_image...]`` (one data URL per image, attachment order). No separate image
  message is ever emitted. Messages: user → ``user``/``input_text``, assistant →
  ``assistant``/``output_text``, system → ``developer``/``input_text``.
* :func:`lower_chat` (OpenAI Chat ``messages``): a maximal run of ToolCalls is one assistant message
  (``content: null``); each ToolResult is a ``tool`` message with string content; after each maximal
  run of ToolResults, one ``user`` message of the run's ``image_url`` parts (item, then attachment
  order; no text part), or none when the run has no images. An assistant Message is its own message
  (its text is not merged into a following tool-call message), so each item's lowering depends only on
  its run and a request's messages are a prefix of the next request's.
* :func:`lower_cascade_messages`: the Chat lowering, fed to ``engine.http.tool_history.lower_tool_turns``
  and ``engine.prompt.build.build_cascade_prompt``. Tool messages become ``<tool_result>`` text and the run's
  image message is an ordinary user turn of ``image_url`` parts, so the prompt builder attaches those
  images to field 6 under the history-image caps, ordinals and markers (or counts them dropped), exactly
  as a user's own images; when the run is the newest turn its images are the current turn's.

Tool-call ``arguments`` are sent as stored when they are a JSON object, else as ``"{}"`` (Yoi's
normalisation of legacy ``"null"`` and non-objects). ``is_error`` does not change the lowered shape
(Yoi's OpenAI lowerings send the text only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from engine.sessions.items import ImageAttachment, Item, Message, ToolCall, ToolResult, image_data_url, result_text
from engine.sessions.pruning import project

__all__ = [
    "OMITTED_NOTE",
    "Capabilities",
    "lower_cascade_messages",
    "lower_chat",
    "lower_responses",
    "normalize_arguments",
]

OMITTED_NOTE: Final = "\n[{n} image attachment(s) omitted: model does not support images]"

_RESPONSES_ROLE: Final = {"user": "user", "assistant": "assistant", "system": "developer"}
_RESPONSES_TEXT_TYPE: Final = {"user": "input_text", "assistant": "output_text", "system": "input_text"}

Json = dict[str, Any]


@dataclass(frozen=True)
class Capabilities:
    """What the upstream model accepts; ``vision`` decides whether result images are sent."""

    vision: bool


def normalize_arguments(arguments: str) -> str:
    """The stored string when it is a JSON object, else ``"{}"``."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "{}"
    return arguments if isinstance(parsed, dict) else "{}"


def _result_view(item: ToolResult, pruned: frozenset[str], vision: bool) -> tuple[str, tuple[ImageAttachment, ...]]:
    """``(text, images)`` a result sends: projected when pruned; without vision, no images and the note."""
    result = project(item, pruned)
    assert isinstance(result, ToolResult)
    text = result_text(result)
    if not result.attachments or vision:
        return text, result.attachments
    return text + OMITTED_NOTE.format(n=len(result.attachments)), ()


# --- OpenAI Responses -------------------------------------------------------------------------


def lower_responses(items: Iterable[Item], *, vision: bool, pruned: frozenset[str] = frozenset()) -> list[Json]:
    """The Responses ``input`` items of a history: exactly one per item, in history order."""
    return [_responses_item(item, vision, pruned) for item in items]


def _responses_item(item: Item, vision: bool, pruned: frozenset[str]) -> Json:
    if isinstance(item, Message):
        part = {"type": _RESPONSES_TEXT_TYPE[item.role], "text": item.text}
        return {"type": "message", "role": _RESPONSES_ROLE[item.role], "content": [part]}
    if isinstance(item, ToolCall):
        arguments = normalize_arguments(item.arguments)
        return {"type": "function_call", "call_id": item.call_id, "name": item.name, "arguments": arguments}
    return {"type": "function_call_output", "call_id": item.call_id, "output": _responses_output(item, vision, pruned)}


def _responses_output(item: ToolResult, vision: bool, pruned: frozenset[str]) -> str | list[Json]:
    text, images = _result_view(item, pruned, vision)
    if not images:
        return text
    return [{"type": "input_text", "text": text}, *map(_input_image, images)]


def _input_image(image: ImageAttachment) -> Json:
    return {"type": "input_image", "image_url": image_data_url(image)}


# --- OpenAI Chat Completions ------------------------------------------------------------------


def lower_chat(items: Iterable[Item], *, vision: bool, pruned: frozenset[str] = frozenset()) -> list[Json]:
    """The Chat ``messages`` of a history (see the module docstring for the grouping)."""
    return list(_chat_messages(items, vision, pruned))


def _chat_messages(items: Iterable[Item], vision: bool, pruned: frozenset[str]) -> Iterator[Json]:
    calls: list[Json] = []  # the pending run of tool calls
    images: list[Json] = []  # image parts of the pending run of tool results
    for item in items:
        if not isinstance(item, ToolResult) and images:
            yield _image_message(images)
            images = []
        if isinstance(item, ToolCall):
            calls.append(_chat_call(item))
            continue
        if calls:
            yield {"role": "assistant", "content": None, "tool_calls": calls}
            calls = []
        if isinstance(item, Message):
            yield {"role": item.role, "content": item.text}
            continue
        text, attached = _result_view(item, pruned, vision)
        yield {"role": "tool", "content": text, "tool_call_id": item.call_id}
        images.extend(_image_part(image) for image in attached)
    if calls:
        yield {"role": "assistant", "content": None, "tool_calls": calls}
    if images:
        yield _image_message(images)


def _chat_call(call: ToolCall) -> Json:
    function = {"name": call.name, "arguments": normalize_arguments(call.arguments)}
    return {"id": call.call_id, "type": "function", "function": function}


def _image_part(image: ImageAttachment) -> Json:
    return {"type": "image_url", "image_url": {"url": image_data_url(image)}}


def _image_message(parts: list[Json]) -> Json:
    return {"role": "user", "content": parts}


# --- Cascade ----------------------------------------------------------------------------------


def lower_cascade_messages(items: Iterable[Item], *, vision: bool, pruned: frozenset[str] = frozenset()) -> list[Json]:
    """Chat messages for the Cascade prompt builder (through ``lower_tool_turns``): the Chat lowering, so
    result images reach field 6 only through the builder's history-image selection (no second pipeline)."""
    return lower_chat(items, vision=vision, pruned=pruned)

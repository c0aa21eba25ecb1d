"""An OpenAI Chat conversation as durable session items, and its tool results lowered for the Cascade prompt.

Responses turns get here too: :func:`engine.http.responses_items.lower_items` turns their items into Chat
messages first (a ``function_call_output`` becomes a ``tool`` message whose ``input_image`` parts are
``image_url`` parts).

Conversion (:func:`session_items`, :func:`tool_result`):

* ``system`` and ``developer`` messages become system :class:`~engine.sessions.items.Message` items, ``user``
  and ``assistant`` messages their own role, with :func:`~engine.prompt.extract.content_to_string` as the text (user
  images are request content, not session detail: they stay placeholders here); an assistant's ``tool_calls``
  follow its text as :class:`~engine.sessions.items.ToolCall` items.
* A ``tool`` message is a :class:`~engine.sessions.items.ToolResult`. Without image parts its summary is exactly
  ``content_to_string(content)`` (what the prompt showed before durable attachments). With image parts, every
  ``image_url`` / ``input_image`` part holding a base64 ``data:image/...`` URL becomes an
  :class:`~engine.sessions.items.ImageAttachment` (the URL's MIME type, the decoded bytes, part order) and leaves
  the text; an http(s) image URL is never fetched: it stays in the summary as ``[image not fetched: URL]``; any
  other image part keeps its text placeholder. The remaining parts, rendered as ``content_to_string`` renders
  them, are the summary.

Lowering (:func:`cascade_messages`) is what the prompt builder replays: every message that is not a ``tool``
message is lowered by :func:`~engine.http.tool_history.lower_tool_turns` exactly as before, and every maximal
run of ``tool`` messages goes through :func:`~engine.sessions.lowering.lower_cascade_messages` (the session's
own lowering) and then ``lower_tool_turns``: one user turn of ``<tool_result>`` blocks, followed, when the run
has images, by one user turn of the run's ``image_url`` parts, so those images reach field 6 through the
builder's history-image selection (caps, ordinals, markers, counted drops). A run without images lowers to
the very messages ``lower_tool_turns`` gave before, so such conversations send byte-identical Sends.

One deliberate difference: when the run is the newest turn, its images join the ``<tool_result>`` turn (a text
part, then the image parts) instead of following as a turn of their own. The newest turn is what a resumed
cascade is sent on its own; a separate image turn would be sent without the tool results' text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from engine.http.tool_history import lower_tool_turns
from engine.prompt.extract import content_to_string, safe_block_to_string
from engine.sessions.items import ImageAttachment, Item, Message, ToolCall, ToolResult
from engine.sessions.lowering import lower_cascade_messages

__all__ = ["cascade_messages", "decode_image_data_url", "session_items", "tool_result", "tool_results"]

Json = dict[str, Any]

_WHITESPACE: Final = re.compile(r"\s+")
_IMAGE_PARTS: Final = frozenset({"image_url", "input_image"})


# ------------------------------------------------------------------------------------ conversion


def session_items(messages: Sequence[Mapping[str, Any]]) -> list[Item]:
    """The conversation as session items, in order (see the module docstring)."""
    items: list[Item] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            items.append(tool_result(message))
            continue
        text = content_to_string(message.get("content"))
        if role in ("system", "developer"):
            items.append(Message("system", text))
        elif role == "user":
            items.append(Message("user", text))
        elif role == "assistant":
            calls = [_tool_call(call) for call in message.get("tool_calls") or ()]
            if text or not calls:
                items.append(Message("assistant", text))
            items.extend(calls)
    return items


def tool_results(messages: Sequence[Mapping[str, Any]]) -> list[ToolResult]:
    """The ``tool`` messages of a conversation as results, in order."""
    return [tool_result(message) for message in messages if message.get("role") == "tool"]


def tool_result(message: Mapping[str, Any]) -> ToolResult:
    """One ``tool`` message as a result: its text as the summary, its data-URL images as attachments."""
    call_id = str(message.get("tool_call_id", ""))
    content = message.get("content")
    if not isinstance(content, list) or not any(_image_url_of(part) is not None for part in content):
        return ToolResult(call_id, content_to_string(content))
    texts: list[str] = []
    images: list[ImageAttachment] = []
    for part in content:
        url = _image_url_of(part)
        image = decode_image_data_url(url) if url is not None else None
        if image is not None:
            images.append(image)
        elif url is not None and url.startswith(("http://", "https://")):
            texts.append(f"[image not fetched: {url}]")
        else:
            texts.append(safe_block_to_string(part))
    return ToolResult(call_id, "".join(texts), attachments=tuple(images))


def decode_image_data_url(url: str) -> ImageAttachment | None:
    """``data:image/<type>[;params];base64,<data>`` (whitespace ignored) as an attachment; None for anything else."""
    if not url.startswith("data:"):
        return None
    header, comma, payload = url[5:].partition(",")
    params = header.split(";")
    if not comma or len(params) < 2 or params[-1].strip().lower() != "base64":
        return None
    try:
        data = base64.b64decode(_WHITESPACE.sub("", payload), validate=True)
        return ImageAttachment(params[0].strip().lower(), data)
    except (binascii.Error, ValueError):
        return None


def _image_url_of(part: object) -> str | None:
    """The URL of an ``image_url`` (``{url}`` or a string) or ``input_image`` part; None for other parts."""
    if not isinstance(part, Mapping) or part.get("type") not in _IMAGE_PARTS:
        return None
    raw = part.get("image_url")
    url = raw.get("url") if isinstance(raw, Mapping) else raw
    return url if isinstance(url, str) else None


def _tool_call(call: object) -> ToolCall:
    call = call if isinstance(call, Mapping) else {}
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    return ToolCall(str(call.get("id", "")), str(function.get("name", "")), str(function.get("arguments", "")))


# ------------------------------------------------------------------------------------ lowering


def cascade_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    vision: bool,
    durable: Mapping[str, ToolResult] | None = None,
    pruned: frozenset[str] = frozenset(),
) -> list[Json]:
    """The messages the Cascade prompt builder replays for ``messages``.

    ``durable``: the session's committed results by call id; a ``tool`` message whose call id is there is
    lowered as that result (the durable record), any other as :func:`tool_result` of the message. ``pruned``:
    the session's pruned call ids. ``vision``: whether the model takes images (else each result's images are
    replaced by the omitted-images note). The caller's messages are never mutated.
    """
    segments = list(_segments(messages))
    lowered: list[Json] = []
    for index, (is_run, segment) in enumerate(segments):
        if not is_run:
            lowered.extend(lower_tool_turns(segment))
            continue
        results = [_durable_or_own(message, durable) for message in segment]
        run = lower_tool_turns(lower_cascade_messages(results, vision=vision, pruned=pruned))
        if index == len(segments) - 1 and len(run) == 2:
            text_turn, image_turn = run
            parts = [{"type": "text", "text": text_turn["content"]}, *image_turn["content"]]
            run = [{"role": "user", "content": parts}]
        lowered.extend(run)
    return lowered


def _durable_or_own(message: Mapping[str, Any], durable: Mapping[str, ToolResult] | None) -> ToolResult:
    found = durable.get(str(message.get("tool_call_id", ""))) if durable is not None else None
    return found if found is not None else tool_result(message)


def _segments(messages: Sequence[Mapping[str, Any]]) -> Iterator[tuple[bool, list[Mapping[str, Any]]]]:
    """``(is_tool_run, messages)``: maximal runs of ``tool`` messages and the stretches between them."""
    current: list[Mapping[str, Any]] = []
    in_run = False
    for message in messages:
        is_tool = message.get("role") == "tool"
        if current and is_tool != in_run:
            yield in_run, current
            current = []
        current.append(message)
        in_run = is_tool
    if current:
        yield in_run, current

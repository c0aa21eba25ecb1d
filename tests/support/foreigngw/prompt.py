"""The first text item of a Send and the images of field 6.

A fresh cascade gets the whole framing::

    You are FGW, a helpful coding assistant.
    Identity: foreigngw/1.0 (model: <model>)
    <system text>
    <tool preamble>

    User: <history turn>

    Assistant: <history turn>

    User: <current text>

or, framed on one line (``FGW_FRAMING=one-line``), the turns as
``User: <history turn> | Assistant: <history turn> | User: <current text>``.
A resumed cascade gets only the current text. Bodies are never escaped. The history budget
(``CASCADE_MAX_HISTORY_BYTES``, UTF-16 units) keeps whole turns newest first, the newest history turn
always; a turn costs what it would cost wrapped in a ``<human>``/``<assistant>`` block with its
closing tag escaped (the unit the kit's budget model counts in), and the system text counts too.
History images are picked newest turn first, document order inside a turn, under the count cap and
then the byte budget; the attached ones replace their placeholder with a numbered marker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.foreigngw.entries import ASSISTANT, CALL, USER, Conversation, Entry, text_of
from tests.support.foreigngw.images import Picture, extract_image, is_image_like
from tests.support.foreigngw.markup import ToolSpec, preamble

INTRO = "You are FGW, a helpful coding assistant."
IDENTITY = "Identity: foreigngw/1.0 (model: {model})"
PLACEHOLDER = "[image not shown]"  # its own wording: no statement asks for the seed's
MARKER = "[Image #{n} attached to this request \u2014 from an earlier turn]"


@dataclass(frozen=True)
class Limits:
    max_images: int
    max_image_bytes: int
    max_history_bytes: int


@dataclass
class Built:
    """A Send's text and field 6, with what happened to the history images."""

    text: str
    images: list[Picture]
    attached: int = 0
    dropped: dict[str, int] = field(default_factory=dict)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def render_body(content: Any, markers: Mapping[int, int]) -> str:
    """A turn's text: its parts joined with '', image-like parts as the placeholder, or as the
    marker of their field-6 position (``markers``: part position -> N)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    parts = []
    for position, block in enumerate(content):
        if position in markers:
            parts.append(MARKER.format(n=markers[position]))
        elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif is_image_like(block):
            parts.append(PLACEHOLDER)
        elif isinstance(block, str):
            parts.append(block)
        else:
            parts.append(json.dumps(block, ensure_ascii=False))
    return "".join(parts)


def render_line(entry: Entry, markers: Mapping[int, int]) -> str:
    if entry.kind == USER:
        return f"User: {render_body(entry.content, markers)}"
    if entry.kind == ASSISTANT:
        return f"Assistant: {render_body(entry.content, markers)}"
    if entry.kind == CALL:
        return f"Assistant called {entry.name}({entry.arguments})"
    return f"Tool result ({entry.call_id}): {render_body(entry.content, {})}"


def _cost(entry: Entry) -> int:
    if entry.kind not in (USER, ASSISTANT):
        return utf16_len(render_line(entry, {}))
    tag = "human" if entry.kind == USER else "assistant"
    body = render_body(entry.content, {}).replace(f"</{tag}>", f"<\\/{tag}>")
    return utf16_len(f"<{tag}>\n{body}\n</{tag}>")


def first_kept(history: Sequence[Entry], system: str, budget: int) -> int:
    """The index of the oldest history entry the budget keeps (len(history) when there is none)."""
    used, first = utf16_len(system), len(history)
    for index in range(len(history) - 1, -1, -1):
        size = _cost(history[index])
        if used + size > budget and first < len(history):
            break
        used, first = used + size, index
    return first


def current_images(entry: Entry) -> list[Picture]:
    return [picture for picture in (extract_image(block) for block in _blocks(entry.content)) if picture]


def _pick(
    history: Sequence[Entry], first: int, limits: Limits, drops: dict[str, int]
) -> list[tuple[int, int, Picture]]:
    """History images attached, chronological: (entry index, part position, image)."""
    picked: list[tuple[int, int, Picture]] = []
    spent = 0
    for index in range(len(history) - 1, first - 1, -1):
        entry = history[index]
        if entry.kind not in (USER, ASSISTANT):
            continue
        for position, block in enumerate(_blocks(entry.content)):
            if not is_image_like(block):
                continue
            if len(picked) >= limits.max_images:
                drops["cap"] += 1
                continue
            if spent >= limits.max_image_bytes:
                drops["bytes"] += 1
                continue
            picture = extract_image(block)
            if picture is None:
                drops["unextractable"] += 1
            elif spent + len(picture.b64) > limits.max_image_bytes:
                drops["bytes"] += 1
            else:
                picked.append((index, position, picture))
                spent += len(picture.b64)
    return sorted(picked, key=lambda item: (item[0], item[1]))


def _image_parts(entries: Sequence[Entry]) -> int:
    return sum(
        1 for e in entries if e.kind in (USER, ASSISTANT) for block in _blocks(e.content) if is_image_like(block)
    )


def build_fresh(
    model: str,
    conversation: Conversation,
    tools: tuple[ToolSpec, ...],
    limits: Limits,
    *,
    attach_history: bool,
    one_line: bool = False,
) -> Built:
    """The full framing for a fresh cascade (the conversation has a current user entry); ``one_line``:
    the turns on one line, ``User: TEXT | Assistant: TEXT | User: TEXT``, not a block each."""
    entries = conversation.entries
    current = conversation.current_index()
    history, trailing = entries[:current], entries[current + 1 :]
    images = current_images(entries[current])
    first = first_kept(history, conversation.system, limits.max_history_bytes)
    drops = dict.fromkeys(("cap", "bytes", "unextractable", "truncated", "no_vision"), 0)
    drops["truncated"] = _image_parts(history[:first])
    picked: list[tuple[int, int, Picture]] = []
    if attach_history:
        picked = _pick(history, first, limits, drops)
    else:
        drops["no_vision"] = _image_parts(history[first:])
    markers: dict[int, dict[int, int]] = {}
    for number, (index, position, _) in enumerate(picked, start=len(images) + 1):
        markers.setdefault(index, {})[position] = number
    head = [INTRO, IDENTITY.format(model=model)]
    if conversation.system:
        head.append(conversation.system)
    if tools:
        head.append(preamble(tools))
    lines = [render_line(history[index], markers.get(index, {})) for index in range(first, len(history))]
    lines.append(f"User: {text_of(entries[current].content)}")
    lines.extend(render_line(entry, {}) for entry in trailing)
    text = "\n".join(head) + "\n\n" + (" | " if one_line else "\n\n").join(lines)
    return Built(text, images + [picture for _, _, picture in picked], len(picked), drops)


def build_resume(conversation: Conversation) -> Built:
    """What a resumed cascade gets: the current turn's text and images only."""
    current = conversation.entries[conversation.current_index()]
    return Built(text_of(current.content), current_images(current))

"""Durable session items shared by the session tests: deterministic images, a sample conversation with a
parallel batch, and a strategy over every item kind."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import strategies as st

from engine.session_items import History, ImageAttachment, Item, Message, ToolCall, ToolResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png(seed: int, size: int = 300) -> ImageAttachment:
    """A PNG-magic image of ``size`` deterministic pseudo-random bytes (binary, NULs and high bytes included)."""
    return ImageAttachment("image/png", PNG_MAGIC + random.Random(seed).randbytes(size - len(PNG_MAGIC)))


def sample_items() -> list[Item]:
    """A conversation with one parallel batch: an image-only result, a two-image result with content, a text one."""
    return [
        Message("system", "You are a careful agent."),
        Message("user", "Compare a.png and b.png, then read notes.txt."),
        ToolCall("call_a", "view_image", '{"path":"a.png"}'),
        ToolCall("call_b", "view_image", '{"path":"b.png"}'),
        ToolCall("call_n", "read_file", '{"path":"notes.txt"}'),
        ToolResult("call_a", "Attached image a.png (image/png, 300 bytes)", attachments=(png(1),)),
        ToolResult("call_b", "Attached 2 images", "both frames", attachments=(png(2), png(3, 500))),
        ToolResult("call_n", "Read notes.txt", "line one\nline two ünïcode ☃"),
        Message("assistant", "The images differ in the top-left corner."),
    ]


def history_state(history: History) -> tuple[tuple[Item, ...], frozenset[str]]:
    return history.snapshot()


def attachments_of(items: Sequence[Item]) -> list[tuple[ImageAttachment, ...]]:
    return [item.attachments for item in items if isinstance(item, ToolResult)]


_text = st.text(max_size=40)
_attachments = st.lists(
    st.builds(ImageAttachment, st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]), st.binary()),
    max_size=3,
).map(tuple)
items_strategy: st.SearchStrategy[Item] = st.one_of(
    st.builds(Message, st.sampled_from(["system", "user", "assistant"]), _text),
    st.builds(ToolCall, _text, _text, _text),
    st.builds(ToolResult, _text, _text, st.none() | _text, st.booleans(), _attachments),
)

"""Durable session items shared by the session tests: deterministic images, a sample conversation with a
parallel batch, strategies over every item kind and over whole sessions, and histories and messages of
exact sizes for the view and pruning limits."""

from __future__ import annotations

import itertools
import random
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from engine.sessions.items import History, ImageAttachment, Item, Message, ToolCall, ToolResult
from engine.sessions.views import SUMMARY_CAP, VIEW_MAX_ITEMS, exploration_view, view_bytes

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


# --- generated sessions (the lowering and pruning properties) ----------------------------------

MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT = st.text(max_size=12)
ATTACHMENTS = st.lists(
    st.builds(ImageAttachment, st.sampled_from(MIMES), st.binary(max_size=24)),
    max_size=3,
).map(tuple)
ARGUMENTS = st.sampled_from(["{}", '{"path":"a.png"}', "null", "[1]", "not json", '{"q": "\u00e9"}'])


@dataclass(frozen=True)
class Session:
    """A generated session: the items up to each request boundary, and a prune decision set."""

    segments: tuple[tuple[Item, ...], ...]
    pruned: frozenset[str]

    @property
    def items(self) -> list[Item]:
        return [item for segment in self.segments for item in segment]

    def requests(self) -> list[list[Item]]:
        """The history at each request: after a user message or after a whole run of results."""
        return [list(itertools.chain.from_iterable(self.segments[: n + 1])) for n in range(len(self.segments))]


@st.composite
def _tool_round(draw: st.DrawFn, first_id: int) -> list[Item]:
    round_items: list[Item] = [Message("assistant", draw(TEXT))] if draw(st.booleans()) else []
    calls = [
        ToolCall(f"call_{first_id + i}", draw(st.sampled_from(["ViewImage", "Read"])), draw(ARGUMENTS))
        for i in range(draw(st.integers(1, 3)))
    ]
    round_items += calls
    for call in draw(st.permutations(calls)):
        content = draw(st.none() | TEXT)
        round_items.append(ToolResult(call.call_id, draw(TEXT), content, draw(st.booleans()), draw(ATTACHMENTS)))
    return round_items


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    segments: list[tuple[Item, ...]] = []
    next_id = 0
    for turn in range(draw(st.integers(1, 3))):
        opening: list[Item] = [Message("system", draw(TEXT))] if turn == 0 and draw(st.booleans()) else []
        if turn and draw(st.booleans()):
            opening.append(Message("assistant", draw(TEXT)))
        segments.append((*opening, Message("user", draw(TEXT))))
        for _ in range(draw(st.integers(0, 3))):
            round_items = draw(_tool_round(next_id))
            next_id += 3
            segments.append(tuple(round_items))
    ids = sorted({item.call_id for segment in segments for item in segment if isinstance(item, ToolResult)})
    pruned = draw(st.frozensets(st.sampled_from(ids))) if ids else frozenset()
    return Session(tuple(segments), pruned)


# --- exact sizes (views and pruning at their limits) --------------------------------------------


def user_messages(count: int, text: str = "m") -> list[Item]:
    return [Message("user", text) for _ in range(count)]


def text_of_bytes(size: int) -> str:
    """At most SUMMARY_CAP characters whose UTF-8 is exactly ``size`` bytes (``size`` <= 2 * SUMMARY_CAP)."""
    wide = max(0, size - SUMMARY_CAP)
    return "é" * wide + "a" * (size - 2 * wide)


def history_of_view_size(target: int) -> History:
    """Full-length messages, then one whose text makes the whole view exactly ``target`` bytes (under 80 items)."""
    filler = "é" * SUMMARY_CAP
    count = 1
    while True:
        base = History([*user_messages(count - 1, filler), Message("user", "")])
        missing = target - view_bytes(exploration_view(base, max_bytes=10**9))
        if missing <= 2 * SUMMARY_CAP:
            assert missing >= 0
            assert count < VIEW_MAX_ITEMS
            return History([*user_messages(count - 1, filler), Message("user", text_of_bytes(missing))])
        count += 1


def text_of(tokens: int) -> str:
    return "x" * (4 * tokens)


def tail(tokens: int) -> Message:
    """A newest message worth exactly ``tokens``."""
    return Message("user", text_of(tokens))


def detailed(call_id: str, saved_tokens: int) -> ToolResult:
    """A result whose projection saves exactly ``saved_tokens`` (summary "abc" + "\\n" + content)."""
    return ToolResult(call_id, "abc", content=text_of(saved_tokens))


def run_sql(db: Path, statement: str, *params: object) -> None:
    """One statement on the session log's file behind its back, committed (another writer, a torn record)."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute(statement, params)
    finally:
        conn.close()

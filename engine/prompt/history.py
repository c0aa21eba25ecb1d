"""The replayed history of a fresh Cascade prompt: which earlier turns fit the budget, and their lines.

The rule (client.js, kept unchanged by seed 000 as ``buildCascadeHistoryEntries``): walk the history
turns newest first; a turn's line is ``<tag>\\n<escaped body>\\n</tag>``; the budget (UTF-16 units)
starts with the system text's length; the first line that would overflow stops the walk, except that
the newest history turn is always kept. Lengths are those of the plain ``contentToString`` bodies:
history-image markers are rendered afterwards, outside the budget.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.js import utf16_len
from engine.prompt.extract import content_to_string, safe_block_to_string
from engine.prompt.messages import Content, Message

log = logging.getLogger("engine.cascade")


@dataclass(frozen=True)
class Coverage:
    """Which of the caller's turns the prompt represents (``historyCoverage`` in client.js)."""

    dropped_turn_count: int
    first_included_turn_index: int
    total_turns: int


@dataclass(frozen=True)
class HistoryEntry:
    """One replayed turn: its index in the conversation, its tag, its content and pre-marker line."""

    index: int
    tag: str
    content: Content
    line: str


@dataclass(frozen=True)
class HistoryWindow:
    entries: tuple[HistoryEntry, ...]  # replayed turns, oldest first
    first_included: int
    total_turns: int

    @property
    def coverage(self) -> Coverage:
        return Coverage(self.first_included, self.first_included, self.total_turns)


def tag_for(role: str) -> str:
    return "human" if role == "user" else "assistant"


def escape_history_tag(text: str, tag: str) -> str:
    """Neutralises the closing tag of the same name only: ``</tag>`` becomes ``<\\/tag>``."""
    return text.replace(f"</{tag}>", f"<\\/{tag}>")


def render_line(tag: str, body: str) -> str:
    return f"<{tag}>\n{escape_history_tag(body, tag)}\n</{tag}>"


def kib_rounded(units: int) -> int:
    """``Math.round(units / 1024)`` for non-negative ints (halves go up, unlike Python's ``round``)."""
    return (2 * units + 1024) // 2048


def select_history_window(convo: Sequence[Message], sys_text: str, budget: int) -> HistoryWindow:
    """The turns before the newest one that fit ``budget``, counted from ``len16(sys_text)``.

    Logs ``Cascade: trimmed history at turn i/n (...KB kept, D turns dropped)`` with the true number
    of dropped turns (the baseline printed the number kept).
    """
    total = len(convo)
    kept: list[HistoryEntry] = []
    used = utf16_len(sys_text)
    first_included = 0
    for index in range(total - 2, -1, -1):
        message = convo[index]
        tag = tag_for(message.role)
        line = render_line(tag, content_to_string(message.content))
        size = utf16_len(line)
        if used + size > budget and kept:
            first_included = index + 1
            log.info(
                "Cascade: trimmed history at turn %d/%d (%dKB kept, %d turns dropped)",
                index,
                total,
                kib_rounded(used),
                first_included,
            )
            break
        kept.append(HistoryEntry(index, tag, message.content, line))
        used += size
        first_included = index
    kept.reverse()
    return HistoryWindow(tuple(kept), first_included, total)


def render_entry(entry: HistoryEntry, markers: Mapping[int, str]) -> str:
    """The entry's line, with ``markers[block index]`` replacing that block's text in place."""
    if not markers or isinstance(entry.content, str) or entry.content is None:
        return entry.line
    body = "".join(markers.get(i) or safe_block_to_string(block) for i, block in enumerate(entry.content))
    return render_line(entry.tag, body)

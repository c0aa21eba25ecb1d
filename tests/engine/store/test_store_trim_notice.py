"""Content trimming keeps the drop notices whole (issue 29 §4, STORE-7): a text that opens with the count
stage's or the byte stage's notices is halved as any text, but a cut keeps at least the notices. A cut
notice no longer matches the handler's strip pattern, so the turns it announced would be dropped
silently."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from engine.store.trim import (
    TRUNCATION_MARKER,
    StoreWriteRejected,
    dropped_turns_notice,
    trim_content_to_fit,
    trim_for_store,
)
from tests.engine.store.store_trim_support import leading_notices, user

COUNT_NOTICE = dropped_turns_notice(1, "messages")
BYTES_NOTICE = dropped_turns_notice(3, "bytes")
M = TRUNCATION_MARKER
FLOOR = len(M)  # the shortest cut of a noticed text is its notices and the marker


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [block["text"] for block in content if isinstance(block, dict) and "text" in block]
    return out


@pytest.mark.invariant("STORE-7")
@pytest.mark.parametrize("budget", range(1, 801))
def test_the_count_notice_survives_the_byte_stage_at_every_budget(
    budget: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's case: the notice goes on the newest message, the only one kept, which the byte stage
    then halves. At 414-475 bytes the old trim kept 97 characters of the notice: a silent drop."""
    caplog.set_level(logging.CRITICAL)
    messages = [user("q"), {"role": "assistant", "content": "A" * 1000}]
    try:
        outcome = trim_for_store(messages, max_messages=1, max_entry_bytes=budget)
    except StoreWriteRejected:
        return  # refusing the write is allowed (seed 003); storing the drop silently is not
    (kept,) = outcome.messages
    assert kept["content"].startswith(COUNT_NOTICE), kept["content"][:120]


@pytest.mark.invariant("STORE-7")
@pytest.mark.parametrize("where", ["string", "text block"])
@pytest.mark.parametrize("notices", [COUNT_NOTICE, BYTES_NOTICE + COUNT_NOTICE], ids=["one", "both stages"])
def test_halving_keeps_every_leading_notice_and_cuts_only_what_follows(where: str, notices: str) -> None:
    text = notices + "é" * 1000
    content: Any = text if where == "string" else [{"type": "text", "text": text}]
    (trimmed,), passes = trim_content_to_fit([{"role": "assistant", "content": content}], 1)
    (stored,) = _texts([trimmed])
    assert passes > 0
    assert leading_notices(stored) == notices
    assert stored.endswith(M)
    assert len(stored) < len(text)
    assert stored[len(notices) : -len(M)] == "é" * (len(stored) - len(notices) - len(M))


@pytest.mark.invariant("STORE-3")
@pytest.mark.parametrize(("after", "cut"), [(FLOOR - 1, False), (FLOOR, False), (FLOOR + 1, True)])
def test_a_noticed_text_is_cut_only_past_a_marker_after_its_notice(after: int, cut: bool) -> None:
    """A cut keeps at least the notice and adds the marker: a rest of a marker or less would not get
    shorter, so it stays whole; one unit over, it is cut to the notice and the marker."""
    text = COUNT_NOTICE + "x" * after
    (trimmed,), passes = trim_content_to_fit([user(text)], 1)
    if not cut:
        assert (trimmed["content"], passes) == (text, 0)
        return
    assert trimmed["content"] == COUNT_NOTICE + M
    assert len(trimmed["content"]) < len(text)


def test_a_long_noticed_text_is_halved_as_any_text_while_the_half_holds_the_notice() -> None:
    text = COUNT_NOTICE + "x" * 1000
    half = len(text) // 2
    budget = 64 + 2 * len("user") + 2 * (half + len(M))  # room for exactly one halving
    (trimmed,), passes = trim_content_to_fit([user(text)], budget)
    assert (trimmed["content"], passes) == (text[:half] + M, 1)

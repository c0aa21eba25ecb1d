"""The content stage's floors are lengths in UTF-16 units, not code points (seed 003 measures
``text.length``): texts of astral characters, lone surrogates, surrogate pairs held as two code
points and combining sequences, at each floor, one under it and one over it (issue 44).

Astral characters are where a count in code points goes wrong: 60 emoji are 60 code points but 120
units, a candidate that halving cannot shrink, so the write is refused (STORE-3); a trimmer that
counts code points sees no candidate and keeps the entry over its budget."""

from __future__ import annotations

import copy
import json

import pytest

from engine.js import utf16_len
from engine.store.trim import StoreWriteRejected, approx_bytes, trim_content_to_fit, trim_for_store
from tests.engine.store.store_trim_support import assistant_call, system, user

_PIECES = {
    "astral": "\U0001f600",
    "astral-mixed": "a\U0001d518\U00010348",
    "lone-surrogates": "\ud800b\udfff",
    "pair-as-two-code-points": "\ud83d\ude00",
    "combining": "e\u0301\u0323",
}


def _text(units: int, piece: str) -> str:
    """``piece`` repeated to exactly ``units`` UTF-16 units (an ``x`` where the next piece would overshoot)."""
    out, used = "", 0
    while used < units:
        step = piece if used + utf16_len(piece) <= units else "x"
        out, used = out + step, used + utf16_len(step)
    assert utf16_len(out) == units
    return out


@pytest.mark.invariant("STORE-3")
@pytest.mark.parametrize("shape", sorted(_PIECES))
@pytest.mark.parametrize("units", [82, 83])
def test_a_text_at_or_under_the_marker_floor_is_no_candidate(shape: str, units: int) -> None:
    messages = [user(_text(units, _PIECES[shape]))]
    kept, rewritten = trim_content_to_fit(messages, 64)
    assert (rewritten, kept) == (0, messages), "stored over the budget: nothing left to cut"


@pytest.mark.invariant("STORE-3")
@pytest.mark.parametrize("shape", sorted(_PIECES))
@pytest.mark.parametrize("units", [84, 120, 165, 166])
def test_a_text_over_the_marker_floor_that_halving_cannot_shrink_is_refused(shape: str, units: int) -> None:
    messages = [user(_text(units, _PIECES[shape]))]
    snapshot = copy.deepcopy(messages)
    # Halving keeps whole code points: an astral text may shrink by a unit first, then cannot.
    with pytest.raises(StoreWriteRejected, match="message 0, at \\['content'\\]\\) cannot shrink"):
        trim_content_to_fit(messages, 64)
    assert messages == snapshot


@pytest.mark.invariant("STORE-3")
def test_sixty_emoji_alone_over_the_budget_refuse_the_write() -> None:
    # The case: 60 code points, 120 units; the only candidate, and it cannot shrink.
    write = [system("be brief"), user("hi"), {"role": "assistant", "content": "\U0001f600" * 60}]
    with pytest.raises(StoreWriteRejected, match="its 120-unit value would become 143 units"):
        trim_for_store(write, max_messages=12, max_entry_bytes=200)


@pytest.mark.invariant("STORE-3")
@pytest.mark.parametrize("shape", sorted(_PIECES))
def test_one_over_the_halving_floor_is_cut_to_a_shorter_prefix(shape: str) -> None:
    text = _text(167, _PIECES[shape])
    kept, rewritten = trim_content_to_fit([user(text)], approx_bytes([user(text)]) - 1)
    assert rewritten == 1
    cut = kept[0]["content"]
    assert cut.endswith("[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]")
    prefix = cut[: len(cut) - 83]
    assert text.startswith(prefix)
    assert utf16_len(cut) < 167
    assert 82 <= utf16_len(prefix) <= 83  # half the units, one fewer where a pair would be split


@pytest.mark.invariant("STORE-1")
@pytest.mark.parametrize("units", [120, 121, 122])
def test_an_astral_json_document_is_replaced_only_over_121_units(units: int) -> None:
    head, tail = '{"a":"', '"}'
    body = _text(units - len(head) - len(tail), "\U0001f600")
    arguments = head + body + tail
    assert json.loads(arguments)
    kept, rewritten = trim_content_to_fit([assistant_call(arguments)], 64)
    assert rewritten == (units > 121)
    replaced = kept[0]["tool_calls"][0]["function"]["arguments"]
    assert (replaced == arguments) is (units <= 121)

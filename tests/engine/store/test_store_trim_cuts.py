"""Exact cuts of the content stage (engine.md section 3.A ``trimContentToFit``): where a halved string ends around
astral characters, surrogate pairs held as two code points and 16 384-code-point chunk boundaries; what a
rejection reports; how a rewrite is counted toward the fit; and when a cut ``arguments`` value counts as JSON."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.store.trim import (
    ARGUMENTS_TRUNCATION_JSON,
    TRUNCATION_MARKER,
    StoreWriteRejected,
    approx_bytes,
    trim_content_to_fit,
)
from tests.engine.store.store_trim_support import assistant_call, call, json_args, user

M = TRUNCATION_MARKER
EMOJI = "😀"  # one code point, two UTF-16 units


def cut_once(text: str) -> tuple[str, int]:
    """The content of ``user(text)`` trimmed one byte under its size (one halving), and the passes."""
    kept, passes = trim_content_to_fit([user(text)], approx_bytes([user(text)]) - 1)
    return kept[0]["content"], passes


# ------------------------------------------------------------------------------------ where a cut ends


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        # 32 770 units, keep 16 385: the first 16 384-code-point chunk is exactly 16 385 units and is kept whole
        (EMOJI + "a" * 16_383 + "b" * 16_385, EMOJI + "a" * 16_383),
        # the first chunk (16 384 units) fits; the next starts with an astral character that would overshoot by one
        ("a" * 16_384 + EMOJI + "b" * 16_384, "a" * 16_384),
    ],
    ids=["half-ends-on-a-chunk-boundary", "astral-character-opens-the-next-chunk"],
)
def test_a_cut_keeps_the_most_whole_code_points_within_half_across_chunk_boundaries(text: str, prefix: str) -> None:
    assert cut_once(text) == (prefix + M, 1)


def test_a_string_whose_half_falls_inside_an_astral_character_shrinks_below_167_units() -> None:
    # 166 units, keep 83: the emoji would end at unit 84, so 82 units are kept and 82 + 83 = 165 < 166.
    assert cut_once("a" * 82 + EMOJI + "a" * 82) == ("a" * 82 + M, 1)


@pytest.mark.parametrize(
    ("high", "low"),
    [(chr(0xD800), chr(0xDC00)), (chr(0xDBFF), chr(0xDFFF)), (chr(0xD83D), chr(0xDE00))],
    ids=["lowest-pair", "highest-pair", "emoji-pair"],
)
def test_a_cut_steps_back_off_a_surrogate_pair_held_as_two_code_points(high: str, low: str) -> None:
    # 200 units, keep 100: unit 100 is the pair's low half, so the pair goes and 99 code points stay.
    assert cut_once("a" * 99 + high + low + "a" * 99) == ("a" * 99 + M, 1)


@pytest.mark.parametrize("before", ["a", "~", "\udc00"], ids=["letter", "tilde", "lone-low"])
def test_a_lone_low_surrogate_after_a_non_high_surrogate_is_not_a_pair_to_step_back_from(before: str) -> None:
    text = "a" * 99 + before + "\udc00" + "a" * 99
    assert cut_once(text) == ("a" * 99 + before + M, 1)


# ------------------------------------------------------------------------------------ rejections


def test_a_rejection_reports_the_candidate_of_keep_units_plus_the_marker() -> None:
    # 165 units with the emoji at units 82-83: the first cut keeps 81 units (164 in all). The second halving keeps
    # 82 units of that value, reaching into the marker: 82 + 83 = 165, not shorter than 164.
    text = "a" * 81 + EMOJI + "a" * 82
    expected = (
        "the largest shrinkable string (message 0, at ['content']) cannot shrink:"
        " its 164-unit value would become 165 units"
    )
    with pytest.raises(StoreWriteRejected, match=f"^{re.escape(expected)}$"):
        trim_content_to_fit([user(text)], 64)


# ------------------------------------------------------------------------------------ counting toward the fit


@pytest.mark.parametrize(
    ("slack", "content", "passes"),
    [(0, "a" * 99 + M, 1), (-1, "a" * 91 + M, 2)],
    ids=["fits-after-one-cut", "one-byte-over-after-one-cut"],
)
def test_a_cut_moved_off_a_surrogate_pair_counts_its_real_length(slack: int, content: str, passes: int) -> None:
    # The first cut keeps 99 units (182 with the marker); the trim stops exactly when that fits.
    text = "a" * 99 + "\ud83d\ude00" + "a" * 99
    limit = approx_bytes([user("a" * 99 + M)]) + slack
    kept, rewritten = trim_content_to_fit([user(text)], limit)
    assert (kept, rewritten) == ([user(content)], passes)
    assert approx_bytes(kept) <= limit


@pytest.mark.parametrize(("slack", "passes"), [(0, 1), (-1, 2)], ids=["fits-after-it", "one-byte-over-after-it"])
def test_a_whole_arguments_replacement_counts_its_real_length(slack: int, passes: int) -> None:
    chat = "c" * 600
    messages = [assistant_call(json_args(1000)), user(chat)]
    replaced = [assistant_call(ARGUMENTS_TRUNCATION_JSON), user(chat)]
    limit = approx_bytes(replaced) + slack
    kept, rewritten = trim_content_to_fit(messages, limit)
    assert rewritten == passes
    assert kept[0] == assistant_call(ARGUMENTS_TRUNCATION_JSON)
    assert kept[1] == user(chat if passes == 1 else chat[:300] + M)
    assert approx_bytes(kept) <= limit


@pytest.mark.parametrize("field", ["id", "name", "arguments"])
def test_cutting_a_string_inside_a_charged_tool_call_field_counts_toward_the_fit(field: str) -> None:
    # id, function.name and function.arguments are charged whatever their shape, so one cut of the string they
    # hold is enough; counted as uncharged, the trim would keep cutting.
    def message(text: str) -> dict[str, Any]:
        tool_call: dict[str, Any] = {"type": "function", "function": {}}
        if field == "id":
            tool_call["id"] = {"k": text}
        else:
            tool_call["function"][field] = {"k": text}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}

    limit = approx_bytes([message("x" * 1000 + M)])
    kept, rewritten = trim_content_to_fit([message("x" * 2000)], limit)
    assert (kept, rewritten) == ([message("x" * 1000 + M)], 1)


# ------------------------------------------------------------------------------------ a cut arguments value


@pytest.mark.parametrize("head", ["x{", "X[", "Xa"], ids=["brace-second", "capital-x-bracket", "capital-x"])
def test_a_non_json_arguments_value_stays_prefix_cut_on_every_pass(head: str) -> None:
    # Its first character is not "{" or "[" (nor JS whitespace), so neither the value nor any cut of it is JSON.
    arguments = head + "a" * 998
    twice = arguments[:291] + M  # 1000 -> 500 + 83 = 583 -> 291 + 83
    limit = approx_bytes([{"role": "assistant", "content": None, "tool_calls": [call(twice)]}])
    kept, rewritten = trim_content_to_fit(
        [{"role": "assistant", "content": None, "tool_calls": [call(arguments)]}], limit
    )
    assert rewritten == 2
    assert kept[0]["tool_calls"][0]["function"]["arguments"] == twice

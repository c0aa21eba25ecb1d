"""Lengths at a floor (issue 44): the strategies draw texts of astral characters, lone surrogates and
combining sequences at each floor where a length in UTF-16 units meets one, one under it and one over
it: the store's content stage (STORE-3) and the IMG history budget (conformance/strategies/text.py)."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.models.img import history_line_units, model
from conformance.models.js_text import utf16_units
from conformance.strategies.img import at_history_floor, conversations
from conformance.strategies.store import floor_cases
from conformance.strategies.text import UNIT_SHAPES, WIRE_SAFE_SHAPES, around, text_of_units

_SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _is_surrogate(char: str) -> bool:
    return "\ud800" <= char <= "\udfff"


def test_around_gives_each_floor_then_one_under_and_one_over() -> None:
    assert around(83) == (83, 82, 84)
    assert around(83, 166) == (83, 82, 84, 166, 165, 167)


@pytest.mark.parametrize("shape", UNIT_SHAPES)
def test_each_shape_is_what_it_says_and_as_long_as_asked(shape: str) -> None:
    @_SETTINGS
    @given(st.integers(12, 200), st.data())
    def check(units: int, data: st.DataObject) -> None:
        text = data.draw(text_of_units(units, shape, "⟦m3⟧ "))
        assert utf16_units(text) == max(units, utf16_units("⟦m3⟧ "))
        body = text[len("⟦m3⟧ ") :]
        if shape == "astral":
            assert any(ord(c) > 0xFFFF for c in body)
            assert len(text) < utf16_units(text) or units <= 13  # fewer code points than units
        elif shape == "lone_surrogates":
            assert any(_is_surrogate(c) for c in body)
        elif shape == "combining":
            assert any(unicodedata.combining(c) for c in body)

    check()


def _floor_units(case: dict[str, Any]) -> int:
    answer = case["answer"]
    return utf16_units(answer["text"] if "text" in answer else answer["tool_call"]["arguments"])


class _OwnLimits:
    """A target taking each case's own store limits (the text reaches its code directly)."""

    def operations(self) -> set[str]:
        return {"store.open"}

    def capabilities(self, op: str) -> dict[str, Any]:
        return {"shapes": ["chat", "responses"]}


class _FixedLimits(_OwnLimits):
    """A gateway launched with a tiny entry budget: its answers cross the fake LS's UTF-8 wire."""

    def capabilities(self, op: str) -> dict[str, Any]:
        return {"fixed_limits": {"max_messages": 12, "max_entry_bytes": 300}, "shapes": ["responses"]}


def test_floor_lengths_are_each_floor_one_under_and_one_over() -> None:
    from conformance.strategies import store

    assert set(around(83, 166)) <= set(store._TEXT_FLOORS)
    assert set(around(83, 121)) <= set(store._DOCUMENT_FLOORS)


@_SETTINGS
@given(floor_cases(_OwnLimits()))  # type: ignore[arg-type]
def test_floor_cases_hold_texts_at_the_content_stage_floors(case: dict[str, Any]) -> None:
    units = _floor_units(case)
    assert 82 <= units <= 167
    assert case["limits"]["max_entry_bytes"] < 64 + 2 * units  # the answer alone is over the budget


@_SETTINGS
@given(floor_cases(_FixedLimits()))  # type: ignore[arg-type]
def test_floor_cases_for_a_launched_gateway_hold_no_lone_surrogates(case: dict[str, Any]) -> None:
    answer = case["answer"]
    said = answer["text"] if "text" in answer else answer["tool_call"]["arguments"]
    assert not any(_is_surrogate(c) for c in said)
    said.encode("utf-8")  # crosses a UTF-8 wire


def test_wire_safe_shapes_are_all_but_lone_surrogates() -> None:
    assert set(UNIT_SHAPES) - set(WIRE_SAFE_SHAPES) == {"lone_surrogates"}


@_SETTINGS
@given(st.data())
def test_a_history_budget_at_the_floor_keeps_those_turns_and_one_under_cuts_the_oldest(data: st.DataObject) -> None:
    messages = data.draw(conversations(min_turns=2, max_turns=6))
    env = data.draw(at_history_floor(messages))
    history = messages[:-1]
    sizes = [history_line_units(m) for m in reversed(history)]
    (name, value), *rest = env.items()
    assert not rest
    assert name == "CASCADE_MAX_HISTORY_BYTES"
    cumulative = [sum(sizes[: k + 1]) for k in range(len(sizes))]
    assert any(int(value) - total in (-1, 0, 1) for total in cumulative)
    expected = model({"messages": messages, "env": env, "tool_preamble": "", "native_mode": True})
    kept = len(history) - expected.first_included
    assert kept >= 1  # the newest history turn is always kept
    assert sum(sizes[:kept]) <= int(value) or kept == 1
    if kept < len(history):
        assert sum(sizes[: kept + 1]) > int(value)

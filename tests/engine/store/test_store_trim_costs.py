"""What the response store charges for a conversation and how often it measures it (engine.md section 3.A,
``approxBytes`` / ``strBytes``): nesting depth, tool-call fields of any shape, values of no JSON type, the
once-per-trim measuring of long strings, and the limits and mappings the entry points accept."""

from __future__ import annotations

import types
from typing import Any

import pytest

from engine.store import trim as store_trim
from engine.store.trim import (
    approx_bytes,
    cap_entry_bytes,
    dropped_turns_notice,
    trim_content_to_fit,
    trim_for_store,
    truncate_messages,
)
from tests.engine.store.store_trim_support import system, user

LEAF = "x" * 100  # 200 bytes


def nested_dicts(levels: int) -> Any:
    """``{"leaf": LEAF}`` under ``levels`` dicts: the leaf's dict is at depth ``levels`` of the value."""
    node: Any = {"leaf": LEAF}
    for _ in range(levels):
        node = {"k": node}
    return node


def nested_lists(levels: int) -> Any:
    """``[LEAF]`` under ``levels`` lists: the innermost list is at depth ``levels`` of the value."""
    node: Any = [LEAF]
    for _ in range(levels):
        node = [node]
    return node


# ------------------------------------------------------------------------------------ strBytes depth


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        (0, 32 + 200),
        (4, 4 * 32 + 32 + 200),  # the innermost list is at depth 4: still walked
        (5, 5 * 32 + 32),  # at depth 5 it is a flat 32, whatever it holds
        (6, 5 * 32 + 32),  # the list at depth 5 is flat: what it nests is not walked
    ],
)
def test_nested_arrays_cost_32_per_item_and_a_flat_32_past_depth_4(levels: int, expected: int) -> None:
    assert approx_bytes([{"content": nested_lists(levels)}]) == 64 + expected


@pytest.mark.parametrize("field", ["id", "name", "arguments"])
def test_a_tool_call_field_is_charged_from_depth_0_whatever_its_shape(field: str) -> None:
    # The mirror calls strBytes(tc.id), strBytes(fn.name), strBytes(fn.arguments): each value starts at depth 0,
    # so a dict four levels down is still walked (200) and one five levels down is a flat 32.
    for levels, cost in ((4, 200), (5, 32)):
        value = nested_dicts(levels)
        tool_call: dict[str, Any] = {"function": {}}
        if field == "id":
            tool_call["id"] = value
        else:
            tool_call["function"][field] = value
        assert approx_bytes([{"tool_calls": [tool_call]}]) == 64 + 96 + cost, (field, levels)


def test_a_tool_call_field_holding_a_list_is_charged_like_content() -> None:
    tool_call = {"id": ["ab"], "function": {"name": ["cd"], "arguments": [1]}}
    assert approx_bytes([{"tool_calls": [tool_call]}]) == 64 + 96 + (32 + 4) + (32 + 4) + (32 + 8)


@pytest.mark.parametrize("value", [b"bytes", {1, 2}, object()])
def test_a_value_of_no_json_type_is_charged_nothing(value: object) -> None:
    assert approx_bytes([{"content": value}]) == 64
    assert approx_bytes([{"content": [value]}]) == 64 + 32


# ------------------------------------------------------------------------------------ measuring once


class MeasureSpy:
    """Records every string of at least ``_CACHE_FROM`` code points that the trim measures."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.long: list[str] = []
        self._real = store_trim._utf16_units
        monkeypatch.setattr(store_trim, "_utf16_units", self)

    def __call__(self, text: str) -> int:
        if len(text) >= store_trim._CACHE_FROM:
            self.long.append(text)
        return self._real(text)


@pytest.mark.parametrize("length", [store_trim._CACHE_FROM, 100_000])
def test_a_long_string_is_measured_once_per_trim(monkeypatch: pytest.MonkeyPatch, length: int) -> None:
    # The byte stage, the content stage's total and its slot walk all need the length: one O(n) measurement.
    text = "é" * length
    spy = MeasureSpy(monkeypatch)
    outcome = trim_for_store([user(text)], max_messages=10, max_entry_bytes=10 * length)
    assert outcome.messages == [user(text)]
    assert len(spy.long) == 1
    assert spy.long[0] is text


def test_the_noticed_copy_of_a_long_string_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # The count stage prefixes an ASCII notice: the new length is the old one plus the notice's.
    text = "é" * 10_000
    spy = MeasureSpy(monkeypatch)
    outcome = trim_for_store([user("old"), user(text)], max_messages=1, max_entry_bytes=10**6)
    assert outcome.messages == [user(dropped_turns_notice(1, "messages") + text)]
    assert len(spy.long) == 1
    assert spy.long[0] is text, "the original is measured; its noticed copy is sized from it"


# ------------------------------------------------------------------------------------ entry points


def test_trim_content_to_fit_names_its_limit_when_rejecting_it() -> None:
    with pytest.raises(ValueError, match=r"^max_entry_bytes must be an integer of at least 1, got 0$"):
        trim_content_to_fit([user("x")], 0)


def test_an_untouched_mapping_comes_back_as_a_dict() -> None:
    frozen = types.MappingProxyType({"role": "user", "content": "hi"})
    outcome = trim_for_store([frozen], max_messages=10, max_entry_bytes=10**6)
    assert outcome.messages == [{"role": "user", "content": "hi"}]
    assert type(outcome.messages[0]) is dict
    kept, dropped = truncate_messages([frozen], 10)
    assert (kept, dropped) == ([{"role": "user", "content": "hi"}], 0)
    assert type(kept[0]) is dict


@pytest.mark.parametrize("count", [1, 2, 8])
def test_an_all_system_conversation_of_at_most_eight_is_kept_whole_even_over_the_budget(count: int) -> None:
    messages = [system(f"{i}" * 1000) for i in range(count)]
    kept, dropped = cap_entry_bytes(messages, 100)
    assert (kept, dropped) == (messages, 0)

"""The STORE strategies draw what their docstrings promise (conformance/strategies/store.py): the
floor cases of STORE-3 (an answer at the content stage's floors, under a budget it exceeds alone,
nothing else a store could cut) and the STORE-7 cases leading one text with both stages' notices
(checked against the reference's trimming, engine.store.trim, which the kit itself never asks)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from conformance.models.js_text import utf16_units
from conformance.models.store import (
    BYTE_NOTICE,
    NOTICE,
    TRUNCATION_MARKER,
    entry_bytes_bound,
    must_refuse,
    refusal_causes,
    text_of,
)
from conformance.strategies.store import (
    _both_notices_case,
    count_cases,
    crowded,
    floor_cases,
    plain_argument_cases,
    refusal_allowed,
    write_of,
)
from conformance.targets import load_target
from conformance.targets.reference.store_ops import answer_items
from engine.store import trim

_SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
_TARGET = load_target(None)


@_SETTINGS
@given(floor_cases(_TARGET))
def test_a_floor_case_is_an_answer_at_a_floor_over_the_budget_alone(case: dict[str, Any]) -> None:
    answer = case["answer"]
    said = answer["text"] if "text" in answer else answer["tool_call"]["arguments"]
    units = utf16_units(said)
    assert units in range(82, 168)
    assert case["limits"]["max_entry_bytes"] < 64 + 2 * units
    assert len(case["messages"]) + 1 <= case["limits"]["max_messages"]
    assert case["messages"][0]["role"] == "system"
    causes = refusal_causes(write_of(case))
    plain = "text" in answer and units > 83
    assert causes == (["/" + str(len(case["messages"])) + "/content"] if plain else [])
    assert (refusal_allowed(case) is not None) is plain
    # What seed 003 does with it: rejects a text of 84 to 166 units, keeps the rest.
    refused = must_refuse([*case["messages"], *answer_items(answer)], case["limits"]) is not None
    assert refused is (plain and units <= 166)


def test_floor_cases_are_drawn_only_where_a_fixed_budget_lets_an_answer_exceed_it() -> None:
    class Fixed:
        def __init__(self, budget: int) -> None:
            self.budget = budget

        def operations(self) -> set[str]:
            return {"store.open"}

        def capabilities(self, op: str) -> dict[str, Any]:
            return {"fixed_limits": {"max_messages": 12, "max_entry_bytes": self.budget}, "shapes": ["responses"]}

    assert repr(plain_argument_cases(Fixed(398))).startswith("one_of(")  # type: ignore[arg-type]
    assert repr(plain_argument_cases(Fixed(399))).startswith("argument_cases(")  # type: ignore[arg-type]


@_SETTINGS
@given(_both_notices_case())
def test_both_notices_lead_the_kept_system_text_and_a_halving_keeping_one_would_fit(case: dict[str, Any]) -> None:
    limits = case["limits"]
    write = [*case["messages"], *answer_items(case["answer"])]
    assert refusal_allowed(case) is not None  # the user message over the budget: a store may refuse it
    kept, by_count = trim.truncate_messages(write, limits["max_messages"])
    kept, by_bytes = trim.cap_entry_bytes(kept, limits["max_entry_bytes"])
    assert (len(kept), by_count, by_bytes) == (2, len(write) - limits["max_messages"], limits["max_messages"] - 2)
    text = kept[0]["content"]
    first = NOTICE.match(text)
    assert first is not None
    assert text.startswith(BYTE_NOTICE.format(count=by_bytes))
    second = NOTICE.match(text[first.end() :])
    assert second is not None
    assert int(second.group(1)) == by_count
    rest = utf16_units(text[first.end() + second.end() :])
    assert 43 <= rest <= 83  # within its notices and the marker: no store cuts it
    entry = trim.approx_bytes(kept)
    assert entry > limits["max_entry_bytes"]
    once = utf16_units(text) // 2 + len(TRUNCATION_MARKER)  # a halving keeping only the first notice
    twice = max(first.end(), once // 2) + len(TRUNCATION_MARKER)
    assert twice > first.end() + len(TRUNCATION_MARKER)  # still a start of the second notice
    assert entry - 2 * (utf16_units(text) - twice) <= limits["max_entry_bytes"]
    assert trim.trim_for_store(write, **limits).messages == kept  # the reference keeps it as it is


class _FixedLimits:
    """A target whose store limits are fixed (a gateway launched with them), taking Responses items."""

    def __init__(self, max_messages: int, max_entry_bytes: int) -> None:
        self.limits = {"max_messages": max_messages, "max_entry_bytes": max_entry_bytes}

    def operations(self) -> set[str]:
        return {"store.open"}

    def capabilities(self, op: str) -> dict[str, Any]:
        return {"fixed_limits": self.limits, "shapes": ["responses"]}


@pytest.mark.parametrize(
    ("cap", "budget", "expected"),
    [
        (12, 1024, False),  # caps up to 12 are the cases' own: drawn as always
        (13, 13 * 1024 - 1, True),  # one message under 1024 bytes each
        (13, 13 * 1024, False),  # exactly 1024 bytes a message: roomy
        (13, 13 * 1024 + 1, False),
        (400, 102400, True),  # a gateway at its usual defaults
    ],
)
def test_a_crowded_cap_is_one_over_12_with_under_1024_bytes_a_message(cap: int, budget: int, expected: bool) -> None:
    assert crowded({"max_messages": cap, "max_entry_bytes": budget}) is expected


@_SETTINGS
@given(count_cases(_FixedLimits(400, 102400)))  # type: ignore[arg-type]
def test_count_cases_at_the_default_caps_fit_the_budget_so_the_cap_alone_binds(case: dict[str, Any]) -> None:
    assert len(case["messages"]) + 1 in range(399, 406)
    assert entry_bytes_bound(write_of(case)) + 512 <= 102400
    texts = [text_of(message) or "" for message in case["messages"]]
    assert all(text.isascii() or text.startswith("⟦") for text in texts), texts[:3]
    assert "input_image" not in str(case["messages"])


@pytest.mark.parametrize(
    ("messages", "bound"),
    [
        ([], 2),  # the JSON "[]"
        # seed 003: 64, 2 a unit of "user" and "hi" (keys are not charged): 76; the JSON: 35 + 64 = 99.
        ([{"role": "user", "content": "hi"}], 99),
        # A long value: seed's 64 + 2 * (4 + 1000) = 2072 beats the JSON's 1033 + 64.
        ([{"role": "user", "content": "x" * 1000}], 64 + 2 * (4 + 1000)),
        # An array item costs 32, a scalar 8: 64 + 32 + 2 * 1 + 8 = 106; the JSON: 22 + 64 = 86.
        ([{"c": ["a"], "n": 7}], 106),
    ],
)
def test_the_entry_bound_is_the_larger_of_the_two_accountings(messages: list[Any], bound: int) -> None:
    assert entry_bytes_bound(messages) == bound


@pytest.mark.parametrize(("over", "judged"), [(-1, False), (0, True), (1, True)])
def test_the_count_properties_judge_a_case_only_when_its_bound_fits_the_budget(over: int, judged: bool) -> None:
    from conformance.properties.store import _APPENDED_ROOM, _over_budget

    messages = [{"role": "user", "content": f"⟦m{n}⟧ hi"} for n in range(3)]
    case: dict[str, Any] = {"messages": messages, "answer": {"text": "⟦m3⟧ ok"}}
    needed = entry_bytes_bound(write_of({**case, "limits": {}})) + _APPENDED_ROOM
    case["limits"] = {"max_messages": 2, "max_entry_bytes": needed + over}
    reason = _over_budget(case)
    assert (reason is None) is judged
    if not judged:
        assert reason == (
            f"the conversation is not far enough under the byte budget for the cap alone to bind: {needed} bytes by "
            f"the kit's bound against an entry budget of {needed - 1}; a gateway whose budget leaves fewer than about "
            f"{needed // 3} bytes a message cannot be checked at its cap of 2: launch it with a bigger entry budget "
            "(or a smaller cap) and declare it with --store-limits"
        )

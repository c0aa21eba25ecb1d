"""The STORE strategies draw what their docstrings promise (conformance/strategies/store.py): the
floor cases of STORE-3 (an answer at the content stage's floors, under a budget it exceeds alone,
nothing else a store could cut) and the STORE-7 cases leading one text with both stages' notices
(checked against the reference's trimming, engine.store.trim, which the kit itself never asks)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from conformance.models.js_text import utf16_units
from conformance.models.store import (
    BYTE_NOTICE,
    NOTICE,
    TRUNCATION_MARKER,
    must_refuse,
    refusal_causes,
)
from conformance.strategies.store import (
    _both_notices_case,
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
    assert units in range(83, 168)
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

"""STORE verdicts through the real runner: broken stores (tests/support/broken_stores.py) get the
verdict their defect deserves, and no more."""

from __future__ import annotations

import pytest

from conformance.runner import Result, Status
from tests.support.verdicts import run_on

BROKEN = "python:tests.support.broken_stores"


def _run(invariant: str, factory: str) -> Result:
    return run_on(f"{BROKEN}:{factory}", invariant)


@pytest.mark.parametrize("invariant", ["STORE-1", "STORE-4", "STORE-7"])
def test_the_seed_baseline_store_fails_the_rules_it_breaks(invariant: str) -> None:
    result = _run(invariant, "naive_store")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert result.failures
    assert all(f.case is not None for f in result.failures)


def test_the_seed_baseline_store_leaves_no_notice_whose_shape_store_6_could_judge() -> None:
    """Its drops leave no notice at all: STORE-4 fails for that; STORE-6, about a notice's shape,
    has nothing to judge (one invariant is not judged through another)."""
    result = _run("STORE-6", "naive_store")
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "the store left no notice whose shape could be judged" in result.message


@pytest.mark.parametrize("invariant", ["STORE-1", "STORE-2", "STORE-3"])
def test_a_store_dropping_the_oversized_calls_silently_fails_instead_of_escaping(invariant: str) -> None:
    """The calls a property needs are gone, and nothing says so: that is the violation, not a missing
    precondition (before, "not checkable: the store kept none of the oversized tool calls")."""
    result = _run(invariant, "drops_oversized_calls")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "dropped from the stored conversation without a notice" in result.message


def test_the_seed_baseline_store_still_keeps_entries_to_their_owner() -> None:
    assert _run("STORE-8", "naive_store").status == Status.PASS


def test_the_seed_baseline_fails_store_3_for_what_it_keeps_not_for_the_json_splice() -> None:
    """The baseline cuts JSON arguments too; STORE-3 judges only the other strings, which it cuts by
    the rules, so the JSON splice is reported by STORE-1 alone. What STORE-3 holds against it is the
    missing progress check: it keeps, over its budget, a write whose newest text cannot shrink, where
    seed 003 rejects the write."""
    result = _run("STORE-3", "naive_store")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "the store kept a write seed 003 rejects" in result.message
    assert "spliced" not in result.message


def test_a_store_sharing_entries_across_callers_fails_store_8() -> None:
    result = _run("STORE-8", "shares_entries")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "another caller read the entry" in result.message


def test_a_store_serving_its_notice_back_fails_store_7() -> None:
    result = _run("STORE-7", "serves_the_notice")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "carries the store's notice" in result.message


@pytest.mark.parametrize("invariant", ["STORE-4", "STORE-6"])
def test_a_store_hiding_its_warnings_passes_partially(invariant: str) -> None:
    result = _run(invariant, "hides_its_warnings")
    assert result.status == Status.PARTIAL, (result.status, result.message)
    assert "the warning of a drop" in result.message


@pytest.mark.parametrize("invariant", ["STORE-1", "STORE-3"])
def test_a_store_rejecting_writes_it_could_trim_fails(invariant: str) -> None:
    result = _run(invariant, "rejects_big_writes")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "rejected a conversation whose strings it could shrink" in result.message


@pytest.mark.parametrize(
    ("factory", "status"),
    [("refuses_under_the_tight_limit", Status.NOT_CHECKABLE), ("refuses_at_the_tight_limit", Status.FAIL)],
)
def test_a_refused_write_is_not_judged_only_under_the_tight_budget(factory: str, status: Status) -> None:
    """Under 4096 bytes a store may refuse a write holding a string it could fail to shrink (seed
    003): not judged, with the reason; at 4096 the same refusal of a write it could trim fails. (Each
    STORE-7 case holds a user message bigger than the budget.)"""
    result = _run("STORE-7", factory)
    assert result.status == status, (result.status, result.message)
    if status == Status.NOT_CHECKABLE:
        assert "the store refused a write at an entry budget under 4096 bytes" in result.message
        assert result.unjudged > 0, result
    else:
        assert "rejected a conversation whose strings it could shrink" in result.message


@pytest.mark.parametrize(
    ("factory", "reason"),
    [
        ("refuses_under_the_tight_limit", "the store rejected a write seed 003 keeps: none of its strings is longer"),
        ("refuses_at_the_tight_limit", "rejected a conversation whose strings it could shrink"),
    ],
)
def test_a_refused_write_without_a_string_that_could_fail_to_shrink_fails_under_any_budget(
    factory: str, reason: str
) -> None:
    """STORE-1's conversations of short texts and JSON arguments (replaced by a shorter document,
    never refused) hold no string a store could fail to shrink: seed 003 stores them, over the budget
    if need be, so refusing one fails even under 4096 bytes."""
    result = _run("STORE-1", factory)
    assert result.status == Status.FAIL, (result.status, result.message)
    assert reason in result.message


def test_a_target_without_a_store_cannot_check_store() -> None:
    result = run_on("python:tests.support.broken_targets:forgets_fields", "STORE-8")
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "store.put" in result.message


@pytest.mark.parametrize("invariant", ["STORE-1", "STORE-2", "STORE-3", "STORE-7"])
def test_a_budget_too_big_to_exceed_is_decided_before_anything_is_built(invariant: str) -> None:
    """A gateway at its shipped 32 MiB budget: each example would build and send up to 96 MB. The case
    is left unbuilt and the reason says how to launch it; the store never sees a put."""
    result = _run(invariant, "huge_fixed_budget")
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "entry budget of 33554432 bytes is over the 1048576 bytes the kit builds payloads beyond" in result.message
    assert "--store-limits max_messages=12,max_entry_bytes=64k" in result.message


DEFECTS = "python:tests.conformance.verdicts.store_defects_support"


@pytest.mark.parametrize(
    ("factory", "invariant", "reason"),
    [
        ("grows_small_documents", "STORE-3", "a truncation grew a value"),
        ("keeps_what_it_cannot_shrink", "STORE-3", "the store kept a write seed 003 rejects"),
        ("refuses_noticed_texts", "STORE-3", "the store rejected a write seed 003 keeps"),
        ("cuts_the_second_notice", "STORE-7", "a notice was cut, so the drop it reported is silent"),
    ],
)
def test_a_store_broken_at_a_floor_of_the_content_stage_fails(factory: str, invariant: str, reason: str) -> None:
    """The content stage's floors (a JSON document over 121 units, a text over 83, a noticed text over
    its notices and the marker), its progress check and its whole notices, each broken in the
    reference's own trimming (tests/conformance/verdicts/store_defects_support.py): the black box shows it."""
    result = run_on(f"{DEFECTS}:{factory}", invariant)
    assert result.status == Status.FAIL, (result.status, result.message)
    assert reason in result.message

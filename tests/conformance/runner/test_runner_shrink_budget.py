"""The shrink budget (issue 40 §3): past it, shrinking stops at the next example and each distinct
failure is reported with the smallest case found so far, said to be cut short; and what Hypothesis
reports through ``hypothesis.reporting`` goes to the result's warnings, never to the terminal. The
budget's clock is pinned at its limit, one under and one over; the runs are real, on toy properties."""

from __future__ import annotations

import gc
import math
import time
import warnings

import pytest
from hypothesis import strategies as st
from hypothesis.reporting import report

from conformance.properties import Case, Evidence
from conformance.runner import (
    DEFAULT_SHRINK_BUDGET_S,
    Failure,
    RunOptions,
    ShrinkBudget,
    Status,
    default_shrink_budget,
    run_property,
)
from tests.conformance.runner.runner_support import ToyTarget, toy_property

# --- the budget's clock ---------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("elapsed", "spent"),
    [
        (59.0, False),  # one under
        (math.nextafter(60.0, 0.0), False),
        (60.0, False),  # at the limit: not yet past it
        (math.nextafter(60.0, math.inf), True),
        (61.0, True),  # one over
    ],
)
def test_the_budget_is_spent_only_once_more_than_its_seconds_passed_since_the_first_failure(
    elapsed: float, spent: bool
) -> None:
    clock = FakeClock()
    budget = ShrinkBudget(60.0, clock)
    clock.now = 0.0
    budget.failed()
    clock.now = elapsed
    assert budget.spent() is spent


@pytest.mark.parametrize(("elapsed", "spent"), [(-1.0, False), (0.0, False), (1.0, True)])
def test_a_zero_budget_is_spent_as_soon_as_any_time_passed(elapsed: float, spent: bool) -> None:
    clock = FakeClock()
    budget = ShrinkBudget(0.0, clock)
    budget.failed()
    clock.now += elapsed
    assert budget.spent() is spent


def test_the_budget_counts_from_the_first_failure_not_a_later_one() -> None:
    clock = FakeClock()
    budget = ShrinkBudget(60.0, clock)
    clock.now = 0.0
    budget.failed()
    clock.now = 50.0
    budget.failed()
    clock.now = 61.0
    assert budget.spent()


def test_no_budget_or_no_failure_yet_is_never_spent() -> None:
    clock = FakeClock()
    unbounded, waiting = ShrinkBudget(None, clock), ShrinkBudget(0.0, clock)
    unbounded.failed()
    clock.now += 1e9
    assert (unbounded.spent(), waiting.spent()) == (False, False)


@pytest.mark.parametrize(("kind", "seconds"), [("exec", 60.0), ("http", 60.0), ("python", None)])
def test_exec_and_http_targets_get_a_60_s_budget_in_process_targets_none(kind: str, seconds: float | None) -> None:
    assert default_shrink_budget(kind) == seconds
    assert DEFAULT_SHRINK_BUDGET_S == 60.0


# --- runs cut short -------------------------------------------------------------------------------

# Lists of 5 to 30 numbers: nearly every one sums past 500, and shrinking one to the minimal
# [0, 0, 0, 0, 501] takes dozens of examples.
SUMS = st.lists(st.integers(0, 1000), min_size=5, max_size=30).map(lambda xs: {"xs": xs})
MINIMAL = {"xs": [0, 0, 0, 0, 501]}


class SlowSum:
    """A check that takes ``pause`` seconds per example and fails when the numbers sum past 500,
    remembering each case it failed on."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.failed_on: list[Case] = []

    def __call__(self, target: ToyTarget, case: Case, evidence: Evidence) -> None:
        time.sleep(self.pause)
        evidence.add("sum", sum(case["xs"]))
        if sum(case["xs"]) > 500:
            self.failed_on.append(case)
            raise AssertionError("the numbers sum past 500")


NOTE = "(shrinking cut short after {} s: the smallest case found so far)"


def test_shrinking_past_the_budget_reports_the_smallest_case_found_so_far_and_says_so() -> None:
    unbounded_check, cut_check = SlowSum(0.005), SlowSum(0.005)
    unbounded = run_property(toy_property(unbounded_check, SUMS), ToyTarget(), RunOptions(shrink_budget_s=None))
    cut = run_property(toy_property(cut_check, SUMS), ToyTarget(), RunOptions(shrink_budget_s=0.05))

    assert unbounded.failures == [Failure(Status.FAIL, "the numbers sum past 500", MINIMAL, {"sum": 501})]
    assert (cut.status, cut.line) == (Status.FAIL, "fail")
    smallest = cut_check.failed_on[-1]
    message = f"the numbers sum past 500 {NOTE.format('0.05')}"
    assert cut.failures == [
        Failure(Status.FAIL, message, smallest, {"sum": sum(smallest["xs"])}, shrunk=False, cut_short=True)
    ]
    assert smallest != MINIMAL
    assert (cut.message, cut.case) == (message, smallest)
    assert len(cut_check.failed_on) < len(unbounded_check.failed_on)
    assert cut.seconds < unbounded.seconds / 2, "cut short well before unbounded shrinking ends"


def test_a_zero_budget_stops_at_the_example_after_the_first_failure() -> None:
    check = SlowSum(0.001)
    target = ToyTarget()
    result = run_property(toy_property(check, SUMS), target, RunOptions(shrink_budget_s=0))
    (first,) = check.failed_on
    assert target.seen[-1] == first, "no example ran after the first failure"
    message = f"the numbers sum past 500 {NOTE.format('0')}"
    assert result.failures == [Failure(Status.FAIL, message, first, {"sum": sum(first["xs"])}, False, True)]
    assert result.examples == len(target.seen)


def test_each_distinct_failure_cut_short_keeps_its_own_latest_case() -> None:
    failed_on: dict[str, list[Case]] = {"even": [], "odd": []}

    def even_or_odd(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        time.sleep(0.001)
        total = sum(case["xs"])
        if total <= 500:
            return
        if total % 2 == 0:
            failed_on["even"].append(case)
            raise AssertionError("an even sum past 500")
        failed_on["odd"].append(case)
        raise ValueError("an odd sum past 500")

    check = toy_property(even_or_odd, SUMS, max_examples=100)
    result = run_property(check, ToyTarget(), RunOptions(shrink_budget_s=0.05))
    assert failed_on["even"], "both failures were found before the budget was spent"
    assert failed_on["odd"], "both failures were found before the budget was spent"
    crashed = "the kit's check raised ValueError: an odd sum past 500 (a kit bug: please report it with this case)"
    note = NOTE.format("0.05")
    shown = {f.message: (f.case, f.shrunk, f.cut_short) for f in result.failures}
    assert shown == {
        f"an even sum past 500 {note}": (failed_on["even"][-1], False, True),
        f"{crashed} {note}": (failed_on["odd"][-1], False, True),
    }
    assert result.status == Status.ERROR  # the check's own crash is an error, and an error wins


def test_the_final_replay_of_a_shrunk_failure_is_never_cut_short() -> None:
    """A single case: nothing to shrink, and Hypothesis replays the failure once more after the budget
    (0 s) is spent; that replay runs, and the failure is the minimal one."""
    calls: list[Case] = []

    def always_fails(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        calls.append(case)
        time.sleep(0.001)
        raise AssertionError("always")

    result = run_property(toy_property(always_fails, st.just({"n": 1})), ToyTarget(), RunOptions(shrink_budget_s=0))
    assert calls == [{"n": 1}, {"n": 1}]
    assert result.failures == [Failure(Status.FAIL, "always", {"n": 1}, {})]


def test_without_shrinking_the_budget_plays_no_part() -> None:
    check = SlowSum(0.001)
    result = run_property(toy_property(check, SUMS), ToyTarget(), RunOptions(shrink=False, shrink_budget_s=0))
    ((message, shrunk, cut_short),) = [(f.message, f.shrunk, f.cut_short) for f in result.failures]
    assert (message, shrunk, cut_short) == ("the numbers sum past 500", False, False)


# --- what Hypothesis reports ----------------------------------------------------------------------

SLOW_SHRINKING = (
    "WARNING: Hypothesis has spent more than five minutes working to shrink a failing test case, and stopped "
    "because it is making very slow progress.  When you re-run your tests, shrinking will resume and may take "
    "this long before aborting again.\n\nPLEASE REPORT THIS if you can provide a reproducing example, so that "
    "we can improve shrinking performance for everyone."
)


def test_what_hypothesis_reports_goes_to_the_results_warnings_never_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def reports(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        report(SLOW_SHRINKING)
        report("\nanother line Hypothesis reports")

    result = run_property(toy_property(reports, st.integers(0, 3).map(lambda n: {"n": n})), ToyTarget(), RunOptions())
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")
    first_line = SLOW_SHRINKING.splitlines()[0]
    assert result.warnings == [
        f"Hypothesis reported: {first_line[:300]}",
        "Hypothesis reported: another line Hypothesis reports",
    ]
    assert result.status == Status.PASS


def test_a_report_of_hypothesis_and_a_warning_are_both_kept() -> None:
    def warns_and_reports(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        warnings.warn("a target's own deprecation", DeprecationWarning, stacklevel=1)
        report("reported")

    result = run_property(toy_property(warns_and_reports, st.just({"n": 1})), ToyTarget(), RunOptions())
    assert result.warnings == ["DeprecationWarning: a target's own deprecation", "Hypothesis reported: reported"]


def test_a_resource_warning_of_whatever_the_garbage_collector_finds_is_no_warning_of_the_run() -> None:
    """Collected mid-run, a file an earlier test (or the kit) left open warns of itself: that is about this
    process, not about the property or the target, and it comes or not by the collector's timing."""

    def drops_an_open_file(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        leaked = open(__file__, encoding="utf-8")  # noqa: SIM115 - left open on purpose
        del leaked
        gc.collect()
        warnings.warn("a target's own deprecation", DeprecationWarning, stacklevel=1)

    result = run_property(toy_property(drops_an_open_file, st.just({"n": 1})), ToyTarget(), RunOptions())
    assert result.warnings == ["DeprecationWarning: a target's own deprecation"]

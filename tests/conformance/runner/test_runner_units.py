"""The runner's verdicts, pinned on toy properties against an in-memory target (fast): which status,
which message a user reads, which minimal case, how many examples, and the Hypothesis settings of
each profile. The end-to-end runs against the reference are test_runner.py's and test_verdicts.py's."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from conformance.catalogue import CATALOGUE, SelectionError
from conformance.errors import TargetError, TargetHung
from conformance.properties import Case, Evidence, Property, require
from conformance.runner import Failure, Result, RunOptions, Status, hypothesis_settings, replay_case, run, run_property
from conformance.targets import Target
from tests.conformance.runner.runner_support import ToyCheck, ToyTarget, numbers, passes, toy_property

# --- checks the toy properties run --------------------------------------------------------------


def too_big_from_5(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    evidence.add("n", case["n"])
    if case["n"] >= 5:  # raised, not asserted: pytest would rewrite an assert's message in this module
        raise AssertionError(f"n={case['n']} is too big")


def target_times_out_below_minus_5(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    evidence.add("n", case["n"])
    if case["n"] <= -5:
        raise TargetError(f"toy: ls.serve timed out after 5 s on n={case['n']}")


def both_ways(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    target_times_out_below_minus_5(target, case, evidence)
    too_big_from_5(target, case, evidence)


def first_seen_drops_counters_then_sizes(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    evidence.not_observed("drop counters" if len(target.seen) == 1 else "attachment sizes")


def never_resumes(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    require(False, "the target never resumed a cascade")


# --- statuses and the run line ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "shown", "ok", "passed"),
    [
        (Status.PASS, "pass", True, True),
        (Status.PARTIAL, "partial", True, True),
        (Status.FAIL, "fail", False, False),
        (Status.ERROR, "error", False, False),
        (Status.KNOWN_FAILURE, "known failure", True, False),
        (Status.UNEXPECTED_PASS, "known failure passed", False, False),
        (Status.NOT_CHECKABLE, "not checkable", True, False),
    ],
)
def test_each_status_says_whether_the_run_is_ok_and_the_invariant_passed(
    status: Status, shown: str, ok: bool, passed: bool
) -> None:
    assert (status.value, status.ok, status.passed) == (shown, ok, passed)


def _failures(kind: Status, count: int) -> list[Failure]:
    return [Failure(kind, f"failure {i}", {"n": i}, {}) for i in range(count)]


@pytest.mark.parametrize(
    ("status", "message", "failures", "line"),
    [
        (Status.PASS, "", [], "pass"),
        (
            Status.PARTIAL,
            "partial: drop counters not exposed by the target",
            [],
            "pass (partial: drop counters not exposed by the target)",
        ),
        (Status.FAIL, "failure 0", _failures(Status.FAIL, 1), "fail"),
        (Status.FAIL, "failure 0", _failures(Status.FAIL, 2), "fail (2 distinct failures)"),
        (Status.ERROR, "failure 0", _failures(Status.ERROR, 3), "error (3 distinct failures)"),
        (Status.NOT_CHECKABLE, "not checkable on this case: x", [], "not checkable"),
    ],
)
def test_the_run_line_shows_partial_parts_and_counts_distinct_failures(
    status: Status, message: str, failures: list[Failure], line: str
) -> None:
    assert Result(CATALOGUE["WIRE-1"], status, message, failures=failures).line == line


# --- the Hypothesis settings each profile and option yields --------------------------------------


@pytest.fixture(params=["default", "suite"])
def ambient_profile(request: pytest.FixtureRequest) -> Iterator[None]:
    """The Hypothesis profile around the run: Hypothesis' own default (a 200 ms deadline, a database
    in .hypothesis, 100 examples, an explain phase), as the command line runs with, or this test
    suite's (printing blobs): the runner's settings must inherit none of either."""
    previous = settings.get_current_profile_name()
    settings.load_profile(previous if request.param == "suite" else "default")
    try:
        yield
    finally:
        settings.load_profile(previous)


ALL_PHASES_BUT_EXPLAIN = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)


@pytest.mark.usefixtures("ambient_profile")
@pytest.mark.parametrize(
    ("options", "prop_examples", "examples", "derandomize"),
    [
        (RunOptions(), None, 40, True),
        (RunOptions(profile="ci"), 7, 7, True),
        (RunOptions(profile="ci", max_examples=5), None, 5, True),
        (RunOptions(profile="ci", max_examples=40), None, 40, True),
        (RunOptions(profile="ci", max_examples=41), None, 40, True),
        (RunOptions(profile="ci", max_examples=6), 7, 6, True),
        (RunOptions(profile="ci", max_examples=8), 7, 7, True),
        (RunOptions(profile="ci", seed=3), None, 40, False),
        (RunOptions(profile="thorough"), None, 300, False),
        (RunOptions(profile="thorough"), 7, 300, False),
        (RunOptions(profile="thorough", max_examples=299), None, 299, False),
        (RunOptions(profile="thorough", max_examples=1000), None, 300, False),
    ],
)
def test_each_profile_sets_its_examples_and_derandomizes_only_ci_without_a_seed(
    options: RunOptions, prop_examples: int | None, examples: int, derandomize: bool
) -> None:
    chosen = hypothesis_settings(options, toy_property(passes, max_examples=prop_examples))
    assert (chosen.max_examples, chosen.derandomize) == (examples, derandomize)
    assert chosen.database is None
    assert chosen.deadline is None
    assert chosen.print_blob is False
    assert set(chosen.suppress_health_check) == set(HealthCheck)
    assert tuple(chosen.phases) == ALL_PHASES_BUT_EXPLAIN


@pytest.mark.usefixtures("ambient_profile")
@pytest.mark.parametrize(
    ("profile", "seed", "kept"),
    [("ci", None, False), ("ci", 3, True), ("thorough", None, True), ("thorough", 3, True)],
)
def test_the_example_database_is_used_only_when_the_run_is_not_derandomized(
    tmp_path: Path, profile: str, seed: int | None, kept: bool
) -> None:
    chosen = hypothesis_settings(RunOptions(profile, seed, tmp_path), toy_property(passes))
    if kept:
        assert isinstance(chosen.database, DirectoryBasedExampleDatabase)
        assert Path(chosen.database.path) == tmp_path
    else:
        assert chosen.database is None


def test_an_unknown_profile_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^unknown profile 'fast'; use one of ci, thorough$"):
        hypothesis_settings(RunOptions(profile="fast"), toy_property(passes))


# --- run_property: verdicts of whole runs -------------------------------------------------------


def test_a_target_lacking_a_needed_operation_is_not_checkable_and_never_runs_the_check() -> None:
    prop = toy_property(passes, needs=("ls.serve", "engine.play_turns|gateway.chat", "ls.journal"))
    target = ToyTarget(frozenset({"ls.journal"}))
    for result in (run_property(prop, target, RunOptions()), replay_case(prop, target, {"n": 1})):
        assert result == Result(
            CATALOGUE["WIRE-1"],
            Status.NOT_CHECKABLE,
            "not checkable on this target: it lacks engine.play_turns or gateway.chat, ls.serve",
        )
    assert target.seen == []


def test_either_operation_of_a_need_meets_it() -> None:
    prop = toy_property(passes, numbers(0, 2), needs=("ls.serve", "engine.play_turns|gateway.chat"))
    result = run_property(prop, ToyTarget(frozenset({"ls.serve", "gateway.chat"})), RunOptions())
    assert result.status == Status.PASS


def test_a_property_every_example_passes_passes_counting_its_examples() -> None:
    target = ToyTarget()
    result = run_property(toy_property(passes, numbers(0, 2)), target, RunOptions())
    assert (result.status, result.message, result.case, result.evidence, result.failures) == (
        Status.PASS,
        "",
        None,
        {},
        [],
    )
    assert sorted(case["n"] for case in target.seen) == [0, 1, 2]
    assert result.examples == 3
    assert 0 < result.seconds < 10


def test_the_cases_are_drawn_for_the_target_the_property_runs_against() -> None:
    def one_case_per_operation(target: Target) -> st.SearchStrategy[Case]:
        return st.sampled_from(sorted(target.operations())).map(lambda op: {"op": op})

    target = ToyTarget(frozenset({"ls.serve", "ls.journal"}))
    result = run_property(toy_property(passes, one_case_per_operation), target, RunOptions())
    assert result.status == Status.PASS
    assert sorted(case["op"] for case in target.seen) == ["ls.journal", "ls.serve"]


@pytest.mark.parametrize(
    ("options", "prop_examples", "examples"), [(RunOptions(max_examples=3), None, 3), (RunOptions(), 4, 4)]
)
def test_a_run_stops_after_the_examples_its_settings_allow(
    options: RunOptions, prop_examples: int | None, examples: int
) -> None:
    target = ToyTarget()
    result = run_property(toy_property(passes, numbers(0, 1000), max_examples=prop_examples), target, options)
    assert result.status == Status.PASS
    assert len(target.seen) == result.examples == examples


def test_examples_whose_precondition_is_not_met_are_not_counted_as_checked() -> None:
    def odd_ones_unmet(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        if case["n"] % 2:
            evidence.not_observed("ignored: a part of an example that was not judged")
        require(case["n"] % 2 == 0, "odd examples cannot be judged")

    target = ToyTarget()
    result = run_property(toy_property(odd_ones_unmet, numbers(0, 9)), target, RunOptions())
    assert result.status == Status.PASS
    assert result.message == ""
    assert len(target.unmet) > 0
    assert result.examples == len(target.judged) == len(target.seen) - len(target.unmet) > 0


def test_a_property_no_example_could_judge_is_not_checkable_counting_each_reason() -> None:
    def first_never_resumed_then_no_image(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        first = len(target.seen) == 1
        require(False, "the target never resumed a cascade" if first else "no image in the history")

    target = ToyTarget()
    result = run_property(toy_property(first_never_resumed_then_no_image, numbers(0, 2)), target, RunOptions())
    # The reasons most frequent first; no example judged, every one counted as not judged.
    assert result == Result(
        CATALOGUE["WIRE-1"],
        Status.NOT_CHECKABLE,
        "not checkable on this target: in all 3 examples no image in the history (2 examples); "
        "the target never resumed a cascade",
        seconds=result.seconds,
        examples=0,
        unjudged=3,
        reasons={"the target never resumed a cascade": 1, "no image in the history": 2},
    )
    assert result.seconds > 0
    assert len(target.unmet) == 3


def test_a_single_example_not_met_is_not_checkable_with_its_bare_reason() -> None:
    result = run_property(toy_property(never_resumes, numbers(1, 1)), ToyTarget(), RunOptions())
    assert result.status == Status.NOT_CHECKABLE
    assert result.message == "not checkable on this target: in all 1 examples the target never resumed a cascade"
    assert (result.examples, result.refused, result.unjudged) == (0, 0, 1)


def test_parts_the_target_does_not_expose_make_a_partial_pass_naming_all_of_them_sorted() -> None:
    target = ToyTarget()
    prop = toy_property(first_seen_drops_counters_then_sizes, numbers(0, 2), invariant="IMG-3")
    result = run_property(prop, target, RunOptions())
    assert (result.invariant, result.status) == (CATALOGUE["IMG-3"], Status.PARTIAL)
    assert result.message == "partial: attachment sizes, drop counters not exposed by the target"
    assert result.line == "pass (partial: attachment sizes, drop counters not exposed by the target)"
    assert (result.examples, result.case, result.failures) == (3, None, [])
    assert 0 < result.seconds < 10


def test_a_partial_pass_counts_only_the_examples_it_judged() -> None:
    def odd_ones_unmet_even_ones_partial(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        require(case["n"] % 2 == 0, "odd examples cannot be judged")
        evidence.not_observed("drop counters")

    target = ToyTarget()
    result = run_property(toy_property(odd_ones_unmet_even_ones_partial, numbers(0, 9)), target, RunOptions())
    assert result.status == Status.PARTIAL
    assert result.message == "partial: drop counters not exposed by the target"
    assert result.examples == len(target.judged) == len(target.seen) - len(target.unmet) > 0
    assert len(target.unmet) > 0


def test_a_failing_property_fails_with_its_minimal_case_and_the_evidence_seen_on_it() -> None:
    target = ToyTarget()
    result = run_property(toy_property(too_big_from_5), target, RunOptions())
    failure = Failure(Status.FAIL, "n=5 is too big", {"n": 5}, {"n": 5})
    assert (result.status, result.message, result.case, result.evidence) == (
        Status.FAIL,
        "n=5 is too big",
        {"n": 5},
        {"n": 5},
    )
    assert result.failures == [failure]
    assert result.line == "fail"
    assert result.examples == len(target.seen) > 1
    assert 0 < result.seconds < 10


def test_without_shrinking_a_failure_keeps_the_example_generation_found() -> None:
    def too_big_from_50(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        if case["n"] >= 50:
            raise AssertionError(f"n={case['n']} is too big")

    shrunk = run_property(toy_property(too_big_from_50), ToyTarget(), RunOptions())
    target = ToyTarget()
    found = run_property(toy_property(too_big_from_50), target, RunOptions(shrink=False))
    assert [(f.case, f.shrunk) for f in shrunk.failures] == [({"n": 50}, True)]
    ((case, kept),) = [(f.case, f.shrunk) for f in found.failures]
    assert case is not None
    assert case != {"n": 50}, "generation alone does not hit the boundary here"
    assert (case["n"] >= 50, kept, found.status, found.line) == (True, False, Status.FAIL, "fail")
    # Every failing example the run tried is one generation drew: nothing crept towards n=50.
    assert all(seen["n"] > 50 for seen in target.seen if seen["n"] >= 50)


def test_a_huge_example_is_reported_without_hypothesis_warning_about_its_repr() -> None:
    def fails(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        raise AssertionError(f"{len(case['blob'])} characters")

    huge = st.just({"blob": "x" * 2_000_000})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_property(toy_property(fails, huge), ToyTarget(), RunOptions(shrink=False))
    assert result.status == Status.FAIL
    assert [str(w.message) for w in caught if "repr" in str(w.message)] == []


def test_an_assertion_without_a_message_fails_saying_assertion_failed() -> None:
    def bare(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        if case["n"] >= 5:
            raise AssertionError

    result = run_property(toy_property(bare), ToyTarget(), RunOptions())
    assert result.failures == [Failure(Status.FAIL, "assertion failed", {"n": 5}, {})]
    assert result.status == Status.FAIL


def test_a_misbehaving_target_is_an_error_not_a_failure() -> None:
    result = run_property(toy_property(target_times_out_below_minus_5), ToyTarget(), RunOptions())
    message = "the target misbehaved: toy: ls.serve timed out after 5 s on n=-5"
    assert (result.status, result.message, result.case) == (Status.ERROR, message, {"n": -5})
    assert result.failures == [Failure(Status.ERROR, message, {"n": -5}, {"n": -5})]


def test_a_hanging_target_stops_the_run_at_once_unshrunk_with_the_case_that_hung() -> None:
    def hangs_from_3(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        evidence.add("n", case["n"])
        if case["n"] >= 3:
            raise TargetHung(f"toy: no answer to ls.serve within 2 s on n={case['n']}")

    target = ToyTarget()
    result = run_property(toy_property(hangs_from_3, max_examples=100), target, RunOptions())
    hung_on = target.seen[-1]
    assert hung_on["n"] >= 3
    assert all(case["n"] < 3 for case in target.seen[:-1]), "no example after the hang"
    message = (
        f"the target misbehaved: toy: no answer to ls.serve within 2 s on n={hung_on['n']} "
        f"(the run stopped at example {len(target.seen)}, unshrunk: each further example may hang as long)"
    )
    assert result.failures == [Failure(Status.ERROR, message, hung_on, {"n": hung_on["n"]}, shrunk=False)]
    assert (result.status, result.examples) == (Status.ERROR, len(target.seen))


def test_a_crash_of_the_kits_own_check_is_an_error_asking_for_a_report() -> None:
    def reads_a_missing_key(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        evidence.add("journal", [])
        if case["n"] >= 3:
            raise KeyError("journal")

    result = run_property(toy_property(reads_a_missing_key), ToyTarget(), RunOptions())
    message = "the kit's check raised KeyError: 'journal' (a kit bug: please report it with this case)"
    assert result.failures == [Failure(Status.ERROR, message, {"n": 3}, {"journal": []})]
    assert (result.status, result.message, result.case) == (Status.ERROR, message, {"n": 3})


def test_a_strategy_that_crashes_before_any_case_is_an_error_without_a_case() -> None:
    def crashes(case: Case) -> Case:
        raise ZeroDivisionError("division by zero")

    target = ToyTarget()
    result = run_property(toy_property(passes, numbers().map(crashes)), target, RunOptions())
    message = "the kit's check raised ZeroDivisionError: division by zero (a kit bug: please report it with this case)"
    assert result.failures == [Failure(Status.ERROR, message, None, {})]
    assert (result.status, result.case, result.evidence, result.examples) == (Status.ERROR, None, {}, 0)
    assert target.seen == []


def test_distinct_failures_are_each_reported_with_their_minimal_case_and_an_error_wins() -> None:
    result = run_property(toy_property(both_ways), ToyTarget(), RunOptions())
    too_big = Failure(Status.FAIL, "n=5 is too big", {"n": 5}, {"n": 5})
    timed_out = Failure(
        Status.ERROR, "the target misbehaved: toy: ls.serve timed out after 5 s on n=-5", {"n": -5}, {"n": -5}
    )
    assert sorted(result.failures, key=lambda f: f.message) == [too_big, timed_out]
    first = result.failures[0]
    assert (result.status, result.message, result.case, result.evidence) == (
        Status.ERROR,
        first.message,
        first.case,
        first.evidence,
    )
    assert result.line == "error (2 distinct failures)"


def test_two_distinct_assertion_failures_fail_the_property() -> None:
    def too_big_or_too_small(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        if case["n"] <= -5:
            raise AssertionError(f"n={case['n']} is too small")
        too_big_from_5(target, case, evidence)

    result = run_property(toy_property(too_big_or_too_small), ToyTarget(), RunOptions())
    assert sorted((f.kind, f.message, f.case) for f in result.failures) == [
        (Status.FAIL, "n=-5 is too small", {"n": -5}),
        (Status.FAIL, "n=5 is too big", {"n": 5}),
    ]
    assert result.status == Status.FAIL
    assert result.line == "fail (2 distinct failures)"


BUGS = [type(f"Bug{n}", (AssertionError,), {}) for n in range(64)]


def test_each_of_64_distinct_failures_keeps_its_own_minimal_case() -> None:
    def a_bug_of_its_own(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        evidence.add("n", case["n"])
        raise BUGS[case["n"]](f"bug {case['n']}")

    target = ToyTarget()
    result = run_property(toy_property(a_bug_of_its_own, numbers(0, 63), max_examples=300), target, RunOptions())
    assert sorted((f.kind, f.message, f.case, f.evidence) for f in result.failures) == sorted(
        (Status.FAIL, f"bug {n}", {"n": n}, {"n": n}) for n in range(64)
    )
    assert result.line == "fail (64 distinct failures)"
    assert len(target.judged) > 64, "more failing examples than the runner remembers"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_is_no_verdict_it_stops_the_run(interrupt: type[BaseException]) -> None:
    def interrupted(target: ToyTarget, case: Case, evidence: Evidence) -> None:
        raise interrupt()

    prop = toy_property(interrupted)
    with pytest.raises(interrupt):
        run_property(prop, ToyTarget(), RunOptions())
    with pytest.raises(interrupt):
        replay_case(prop, ToyTarget(), {"n": 1})


def test_a_seeded_run_repeats_its_examples_and_another_seed_picks_others() -> None:
    def examples(seed: int) -> list[Case]:
        target = ToyTarget()
        run_property(toy_property(passes, numbers(0, 10**9)), target, RunOptions(seed=seed, max_examples=5))
        return target.seen

    assert examples(7) == examples(7)
    assert examples(7) != examples(8)


# --- replay_case: one saved case, without Hypothesis --------------------------------------------


def test_a_replayed_case_that_passes_passes_with_its_case() -> None:
    target = ToyTarget()
    result = replay_case(toy_property(too_big_from_5), target, {"n": 4})
    assert result == Result(CATALOGUE["WIRE-1"], Status.PASS, "", {"n": 4}, {}, result.seconds, 1, [])
    assert 0 < result.seconds < 10
    assert target.seen == [{"n": 4}]


def test_a_replayed_case_with_unexposed_parts_passes_partially() -> None:
    prop = toy_property(first_seen_drops_counters_then_sizes, invariant="IMG-3")
    result = replay_case(prop, ToyTarget(), {"n": 4})
    assert (result.invariant, result.status, result.message, result.case, result.examples) == (
        CATALOGUE["IMG-3"],
        Status.PARTIAL,
        "partial: drop counters not exposed by the target",
        {"n": 4},
        1,
    )
    assert 0 < result.seconds < 10


def test_a_replayed_case_whose_precondition_is_not_met_is_not_checkable_on_this_case() -> None:
    result = replay_case(toy_property(never_resumes), ToyTarget(), {"n": 4})
    assert result == Result(
        CATALOGUE["WIRE-1"],
        Status.NOT_CHECKABLE,
        "not checkable on this case: the target never resumed a cascade",
        {"n": 4},
        unjudged=1,
        reasons={"the target never resumed a cascade": 1},
    )


@pytest.mark.parametrize(
    ("check", "case", "failure"),
    [
        (too_big_from_5, {"n": 9}, Failure(Status.FAIL, "n=9 is too big", {"n": 9}, {"n": 9})),
        (
            target_times_out_below_minus_5,
            {"n": -7},
            Failure(
                Status.ERROR, "the target misbehaved: toy: ls.serve timed out after 5 s on n=-7", {"n": -7}, {"n": -7}
            ),
        ),
    ],
)
def test_a_replayed_case_that_fails_reports_its_failure_and_evidence(
    check: ToyCheck, case: Case, failure: Failure
) -> None:
    result = replay_case(toy_property(check), ToyTarget(), case)
    assert result == Result(
        CATALOGUE["WIRE-1"], failure.kind, failure.message, case, failure.evidence, result.seconds, 1, [failure]
    )
    assert 0 < result.seconds < 10


# --- run: every selected property, in order, with progress ---------------------------------------


def test_run_runs_each_property_in_order_reporting_progress() -> None:
    props = [toy_property(passes, numbers(0, 2)), toy_property(too_big_from_5, invariant="IMG-3")]
    progress: list[tuple[int, int, Property]] = []
    results = run(props, ToyTarget(), RunOptions(), lambda i, n, p: progress.append((i, n, p)))
    assert [(r.invariant.id, r.status) for r in results] == [("WIRE-1", Status.PASS), ("IMG-3", Status.FAIL)]
    assert progress == [(1, 2, props[0]), (2, 2, props[1])]
    assert [r.status for r in run(props, ToyTarget(), RunOptions())] == [Status.PASS, Status.FAIL]


# --- select: which properties a selection names ---------------------------------------------------


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, Property]:
    """A kit in which only WIRE-1, WIRE-3 and IMG-2 have a property."""
    chosen = {inv_id: toy_property(passes, invariant=inv_id) for inv_id in ("WIRE-1", "WIRE-3", "IMG-2")}
    monkeypatch.setattr("conformance.runner.properties", lambda: chosen)
    return chosen


def _ids(props: list[Property]) -> list[str]:
    return [prop.invariant.id for prop in props]


@pytest.mark.parametrize(
    ("only", "ids"),
    [
        (None, ["WIRE-1", "WIRE-3", "IMG-2"]),
        ([" img-2 ", "Wire-1"], ["WIRE-1", "IMG-2"]),
        (["wire"], ["WIRE-1", "WIRE-3"]),
        (["WIRE", "wire-3", "", "IMG"], ["WIRE-1", "WIRE-3", "IMG-2"]),
    ],
)
def test_a_selection_names_ids_or_families_in_any_case_in_catalogue_order(
    registry: dict[str, Property], only: list[str] | None, ids: list[str]
) -> None:
    from conformance.runner import select

    assert _ids(select(only)) == ids


@pytest.mark.parametrize(
    ("only", "message"),
    [
        (["wire-2"], "WIRE-2 has no property yet: not yet implemented in this kit; implemented: WIRE, IMG"),
        (["WIRE-1", "off"], "OFF has no property yet: not yet implemented in this kit; implemented: WIRE, IMG"),
        (
            ["wire-9"],
            "'wire-9' is neither an invariant ID nor a family (WIRE has WIRE-1..WIRE-4; families: WIRE, IMG, OFF, SO, "
            "ACC, STORE, ATT, TURN, SCOPE, REQ)",
        ),
    ],
)
def test_selecting_what_has_no_property_is_one_clear_line(
    registry: dict[str, Property], only: list[str], message: str
) -> None:
    from conformance.runner import select

    with pytest.raises(SelectionError) as raised:
        select(only)
    assert str(raised.value) == message

"""Run the catalogue's properties against a target and collect one result per invariant."""

from __future__ import annotations

import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, configuration, given, seed, settings
from hypothesis.control import current_build_context, currently_in_test_context
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.reporting import with_reporter

from conformance.catalogue import CATALOGUE, Invariant, SelectionError, resolve
from conformance.errors import PreconditionNotMet, TargetError, TargetHung
from conformance.profiles import PROFILES
from conformance.properties import Case, Evidence, Property, properties
from conformance.targets import Target


class Status(StrEnum):
    PASS = "pass"
    PARTIAL = "partial"  # passed on everything the target exposes; the message names what it does not
    FAIL = "fail"
    ERROR = "error"  # the target crashed, hung or broke the protocol (or the kit's own check crashed)
    KNOWN_FAILURE = "known failure"
    UNEXPECTED_PASS = "known failure passed"
    NOT_CHECKABLE = "not checkable"

    @property
    def ok(self) -> bool:
        return self in (Status.PASS, Status.PARTIAL, Status.KNOWN_FAILURE, Status.NOT_CHECKABLE)

    @property
    def passed(self) -> bool:
        return self in (Status.PASS, Status.PARTIAL)

    @property
    def word(self) -> str:
        """The status as one bare word for programs (junit.xml's ``status`` property): ``pass``, ``partial``,
        ``fail``, ``error``, ``not-checkable``, ``known-failure`` or ``unexpected-pass``; never the display line."""
        return "unexpected-pass" if self == Status.UNEXPECTED_PASS else self.value.replace(" ", "-")


@dataclass(frozen=True)
class Failure:
    """One distinct failure: its message, its minimal case and what the check saw on it."""

    kind: Status  # FAIL or ERROR
    message: str
    case: Case | None
    evidence: dict[str, Any]
    shrunk: bool = True  # False: the first failing example as found (--no-shrink, or a hang), or cut short
    # True: shrinking was cut short at the shrink budget; the case is the smallest found by then.
    cut_short: bool = False


@dataclass
class Result:
    invariant: Invariant
    status: Status
    message: str = ""
    case: Case | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    examples: int = 0
    failures: list[Failure] = field(default_factory=list)  # every distinct failure, the first one above
    # Examples drawn but not judged: refused by the target, and the others (precondition unmet,
    # rate-limited past the wait budget, a feature declined); ``reasons`` counts each distinct reason.
    refused: int = 0
    unjudged: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    # Warnings raised while the property ran (Hypothesis's, the target's) and what Hypothesis reported
    # (through hypothesis.reporting), each once: they go to the report, never to the terminal.
    warnings: list[str] = field(default_factory=list)
    # How often, and for how many seconds in all, the target made the kit wait (rate limits, pace):
    # part of ``seconds``, the gateway's time rather than the kit's.
    waits: int = 0
    waited_s: float = 0.0

    @property
    def judged(self) -> bool:
        """Whether the verdict says something about the invariant (not checkable says nothing)."""
        return self.status != Status.NOT_CHECKABLE

    @property
    def counts(self) -> str:
        """``12 judged, 3 refused, 5 not judged`` (the parts that are zero left out, but judged)."""
        parts = [f"{self.examples} judged"]
        if self.refused:
            parts.append(f"{self.refused} refused")
        if self.unjudged:
            parts.append(f"{self.unjudged} not judged")
        return ", ".join(parts)

    def reasons_text(self) -> str:
        """Why examples were not judged, most frequent first: ``reason (N examples); ...``."""
        return reasons_text(self.reasons)

    @property
    def line(self) -> str:
        """The verdict as the run line shows it: ``fail (2 distinct failures)``, ``pass (partial: ...)``."""
        if self.status == Status.PARTIAL:
            return f"pass ({self.message})"
        if len(self.failures) > 1:
            return f"{self.status.value} ({len(self.failures)} distinct failures)"
        return self.status.value


def reasons_text(reasons: dict[str, int], limit: int = 6) -> str:
    """``reason (N examples); ...``, most frequent first, at most ``limit`` distinct reasons."""
    ranked = sorted(reasons.items(), key=lambda item: -item[1])
    shown = [r if n == 1 else f"{r} ({n} examples)" for r, n in ranked[:limit]]
    more = len(ranked) - limit
    return "; ".join(shown) + (f"; and {more} other reason(s)" if more > 0 else "")


@dataclass(frozen=True)
class RunOptions:
    profile: str = "ci"
    seed: int | None = None
    database: Path | None = None
    # At most this many examples per property (a quick end-to-end pass, e.g. over HTTP); None: the profile's.
    max_examples: int | None = None
    # False: each failure is reported with the first example that showed it, not shrunk. Shrinking
    # replays the target hundreds of times; the verdict is the same either way.
    shrink: bool = True
    # Seconds of wall-clock time shrinking may take per invariant, counted from its first failing
    # example; past it each failure is reported with the smallest case found so far. None: no budget
    # (default_shrink_budget gives each kind of target its own).
    shrink_budget_s: float | None = None


DEFAULT_SHRINK_BUDGET_S = 60.0


def default_shrink_budget(target_kind: str) -> float | None:
    """The shrink budget of a kind of target when none is given: 60 s over ``exec:`` and ``http://``
    (each replay costs the gateway's round trips), none in process (``python:``, the reference)."""
    return DEFAULT_SHRINK_BUDGET_S if target_kind in ("exec", "http") else None


@dataclass
class ShrinkBudget:
    """How long shrinking may go on: ``seconds`` of wall-clock time from the first failing example
    (None: no limit). ``clock`` gives the time in seconds (injectable for tests)."""

    seconds: float | None
    clock: Callable[[], float] = time.monotonic
    first_failure_at: float | None = None

    def failed(self) -> None:
        """A failing example was seen: the first one starts the clock."""
        if self.first_failure_at is None:
            self.first_failure_at = self.clock()

    def spent(self) -> bool:
        """Whether more than ``seconds`` have passed since the first failing example."""
        if self.seconds is None or self.first_failure_at is None:
            return False
        return self.clock() - self.first_failure_at > self.seconds


def select(only: Iterable[str] | None) -> list[Property]:
    """The properties named by IDs or families in any case (``WIRE-1``, ``img-3``, ``Wire``); every
    implemented one when ``only`` is None.

    Raises SelectionError (a ValueError, one line) for a selection that names nothing (only blanks),
    for a name that is not in the catalogue, and for one whose invariants are all in the catalogue
    but have no property yet. A family with some properties selects those.
    """
    registered = properties()
    if only is None:
        return list(registered.values())
    wanted = [w.strip() for w in only if w.strip()]
    if not wanted:  # an option given empty (an unset "$IDS" in CI) must not quietly select everything
        raise SelectionError(
            "the selection names no invariant: give IDs or families, comma-separated (e.g. IMG,SO-1), "
            "or leave the option out for every one"
        )
    chosen: set[str] = set()
    for item in wanted:
        ids = resolve(item)
        implemented = [inv_id for inv_id in ids if inv_id in registered]
        if not implemented:
            name = ids[0] if len(ids) == 1 else CATALOGUE[ids[0]].family
            families = ", ".join(dict.fromkeys(prop.invariant.family for prop in registered.values()))
            raise SelectionError(
                f"{name} has no property yet: not yet implemented in this kit; implemented: {families}"
            )
        chosen.update(implemented)
    return [registered[i] for i in CATALOGUE if i in chosen]


@contextmanager
def hypothesis_storage(directory: Path) -> Iterator[None]:
    """Hypothesis keeps its storage (constants cache, unicode tables, a default example database)
    in ``directory`` while the block runs, instead of ``.hypothesis/`` in the current folder (a
    gateway's repository). The previous setting is restored: the run may be in a host process (the
    pytest plugin, tests, an embedding tool)."""
    previous: Path | None = vars(configuration).get("__hypothesis_home_directory")
    configuration.set_hypothesis_home_dir(directory.resolve())
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)


def hypothesis_settings(options: RunOptions, prop: Property) -> settings:
    if options.profile not in PROFILES:
        raise ValueError(f"unknown profile {options.profile!r}; use one of {', '.join(PROFILES)}")
    thorough = options.profile == "thorough"
    examples = 300 if thorough else (prop.max_examples or 40)
    if options.max_examples is not None:
        examples = min(examples, options.max_examples)
    derandomize = not thorough and options.seed is None
    # A derandomized run needs no database: the same inputs come back every time.
    database = DirectoryBasedExampleDatabase(str(options.database)) if options.database and not derandomize else None
    return settings(
        max_examples=examples,
        derandomize=derandomize,
        database=database,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, *([Phase.shrink] if options.shrink else [])],
    )


def run_property(
    prop: Property, target: Target, options: RunOptions, checkpoint: Callable[[], None] | None = None
) -> Result:
    """``checkpoint`` is called before each example; it stops the run by raising a BaseException (an
    interrupt the command noticed late). The result counts how often, and how long, the target made the
    kit wait while the property ran (:func:`_waits`)."""
    count, seconds = _waits(target)
    result = _judged(prop, target, options, checkpoint)
    now_count, now_seconds = _waits(target)
    result.waits, result.waited_s = now_count - count, now_seconds - seconds
    return result


def _waits(target: Target) -> tuple[int, float]:
    """The waits for the gateway so far (rate limits and the pace of an HTTP target; a target without
    a ``waited()`` never makes the kit wait)."""
    waited = getattr(target, "waited", None)
    if waited is None:
        return 0, 0.0
    tally = waited()
    return int(tally.count), float(tally.seconds)


def _judged(
    prop: Property, target: Target, options: RunOptions, checkpoint: Callable[[], None] | None = None
) -> Result:
    lacking = _lacking(prop, target)
    if lacking is not None:
        return lacking
    budget = ShrinkBudget(options.shrink_budget_s if options.shrink else None)
    seen = _Seen(budget)
    checkpoint = _within_budget(checkpoint, budget)

    # Hypothesis derives a derandomized run's examples from this function's source: a change to it
    # changes every example the ci profile draws. Keep what it does in the helpers it calls.
    def attempt(case: Case) -> None:
        if checkpoint is not None:
            checkpoint()
        seen.examples += 1
        evidence = Evidence()
        try:
            prop.check(target, case, evidence)
        except PreconditionNotMet as exc:
            seen.not_judged(exc)
        except TargetHung as exc:
            seen.remember(exc, case, evidence)
            raise _Stopped(exc) from exc
        except BaseException as exc:
            seen.remember(exc, case, evidence)
            raise
        else:
            seen.unobserved |= evidence.unobserved

    started = time.perf_counter()
    test = given(prop.cases(target))(attempt)
    test = hypothesis_settings(options, prop)(test)
    if options.seed is not None:
        test = seed(options.seed)(test)
    try:
        with (
            warnings.catch_warnings(record=True) as recorded,
            with_reporter(seen.reported.append),
            _examples_independent_of_loaded_modules(),
        ):
            seen.warnings = recorded
            warnings.simplefilter("always")
            # The collector warns of whatever unclosed resource it happens to collect mid-run: news about this
            # process, not about the property or the target, and there or not by the collector's timing.
            warnings.simplefilter("ignore", ResourceWarning)
            test()
    except _Stopped as stopped:
        hung = _failure(stopped.hang, *seen.behind(stopped.hang), shrunk=False)
        note = f" (the run stopped at example {seen.examples}, unshrunk: each further example may hang as long)"
        failure = replace(hung, message=hung.message + note)
        return seen.counted(_failed(prop, [failure], time.perf_counter() - started, seen.judged))
    except _OutOfBudget:
        note = f" (shrinking cut short after {budget.seconds:g} s: the smallest case found so far)"
        failures = [
            replace(failure, message=failure.message + note, cut_short=True)
            for failure in (_failure(*found, shrunk=False) for found in seen.latest_failures())
        ]
        return seen.counted(_failed(prop, failures, time.perf_counter() - started, seen.judged))
    except BaseException as raised:
        if not isinstance(raised, Exception):  # KeyboardInterrupt, SystemExit: not a verdict
            raise
        failures = [_failure(exc, *seen.behind(exc), shrunk=options.shrink) for exc in _leaves(raised)]
        return seen.counted(_failed(prop, failures, time.perf_counter() - started, seen.judged))
    seconds = time.perf_counter() - started
    if seen.examples and seen.judged == 0:
        message = f"not checkable on this target: in all {seen.examples} examples {reasons_text(seen.reasons)}"
        return seen.counted(Result(prop.invariant, Status.NOT_CHECKABLE, message, seconds=seconds))
    if seen.unobserved:
        message = _partial(seen.unobserved)
        return seen.counted(Result(prop.invariant, Status.PARTIAL, message, seconds=seconds, examples=seen.judged))
    return seen.counted(Result(prop.invariant, Status.PASS, seconds=seconds, examples=seen.judged))


@contextmanager
def _examples_independent_of_loaded_modules() -> Iterator[None]:
    """Hypothesis mixes constants it finds in the source of every local module loaded so far into what
    it draws. Which modules are loaded depends on the host process (the test order, an xdist worker,
    the user's own imports), so one derandomized run would draw different examples in different
    processes, and a verdict found in one would not come back in another. While a property runs the
    mining sees no local module (a private hook of Hypothesis: without it, generation is as Hypothesis
    makes it); the constants Hypothesis ships with are still drawn."""
    from hypothesis.internal.conjecture import providers

    mined = getattr(providers, "_get_local_constants", None)
    cache: Any = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if mined is None or cache is None or not hasattr(providers, "Constants"):
        yield
        return
    none_found = providers.Constants()
    providers._get_local_constants = lambda: none_found
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = mined
        cache.clear()


class _Stopped(BaseException):
    """Carries a hang out of Hypothesis at once. A BaseException, as an interrupt is: Hypothesis
    neither shrinks nor replays it, so no further example waits out the timeout."""

    def __init__(self, hang: TargetHung) -> None:
        super().__init__(str(hang))
        self.hang = hang


def _within_budget(checkpoint: Callable[[], None] | None, budget: ShrinkBudget) -> Callable[[], None]:
    """``checkpoint``, then a stop (:class:`_OutOfBudget`) once the shrink budget is spent; Hypothesis's
    final replay of a shrunk failure is never cut."""

    def check() -> None:
        if checkpoint is not None:
            checkpoint()
        if budget.spent() and not _final_replay():
            raise _OutOfBudget()

    return check


class _OutOfBudget(BaseException):
    """Stops Hypothesis when the shrink budget is spent, as :class:`_Stopped` does a hang: no
    further shrinking, and no replay."""


def _final_replay() -> bool:
    """Whether Hypothesis is replaying a minimal failure once more to report it (shrinking is
    over then: the budget does not cut it short)."""
    return currently_in_test_context() and bool(getattr(current_build_context(), "is_final", False))


# A failure's origin as Hypothesis tells distinct failures apart: the exception's type and the file
# and line that raised it.
_Origin = tuple[type[BaseException], str, int]


def _origin(exc: BaseException) -> _Origin:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc), "", 0
    return type(exc), frames[-1].filename, frames[-1].lineno or 0


_REASON_PREFIX = {
    "refused": "the target refused the input: ",
    "transient": "rate-limited past the wait budget: ",
    "declined": "the target declines the feature: ",
}


def _reason(exc: PreconditionNotMet) -> str:
    """Why an example was not judged, said with its kind (refused, rate-limited, declined)."""
    return _REASON_PREFIX.get(exc.kind, "") + exc.reason


class _Seen:
    """What the examples of one run showed: counts, unmet preconditions, unobserved parts, and the
    case and evidence behind each exception (Hypothesis re-raises the final, minimal ones)."""

    _KEEP = 64

    def __init__(self, budget: ShrinkBudget | None = None) -> None:
        self.budget = budget if budget is not None else ShrinkBudget(None)
        self.warnings: list[warnings.WarningMessage] = []
        self.reported: list[object] = []  # what Hypothesis reported (hypothesis.reporting)
        self.examples = 0
        self.refused = 0
        self.unjudged = 0
        self.reasons: dict[str, int] = {}
        self.unobserved: set[str] = set()
        self._raised: dict[int, tuple[BaseException, Case, Evidence]] = {}
        self._latest: dict[_Origin, tuple[BaseException, Case, Evidence]] = {}

    @property
    def judged(self) -> int:
        return self.examples - self.refused - self.unjudged

    def not_judged(self, exc: PreconditionNotMet) -> None:
        if exc.kind == "refused":
            self.refused += 1
        else:
            self.unjudged += 1
        reason = _reason(exc)
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def counted(self, result: Result) -> Result:
        """``result`` with this run's counts of examples not judged and why, and its warnings."""
        result.refused, result.unjudged, result.reasons = self.refused, self.unjudged, dict(self.reasons)
        texts = [*(_warning_text(w) for w in self.warnings), *(_reported_text(r) for r in self.reported)]
        result.warnings = list(dict.fromkeys(texts))
        return result

    def failed(self, exc: Exception, case: Case, evidence: Evidence) -> None:
        """A failing example. The latest of its origin stands for the smallest found so far: each one
        shrinking tries is smaller than the best before it."""
        self._latest[_origin(exc)] = (exc, case, evidence)

    def latest_failures(self) -> list[tuple[BaseException, Case, Evidence]]:
        """The latest failing example of each distinct failure, in the order they were first seen."""
        return list(self._latest.values())

    def remember(self, exc: BaseException, case: Case, evidence: Evidence) -> None:
        """The case and evidence behind ``exc``; a failing example (an Exception) also starts the
        shrink budget's clock and stands for the smallest case of its origin so far."""
        if isinstance(exc, Exception):
            self.failed(exc, case, evidence)
            self.budget.failed()
        self._raised[id(exc)] = (exc, case, evidence)
        while len(self._raised) > self._KEEP:  # only the final replays matter; they come last
            del self._raised[next(iter(self._raised))]

    def behind(self, exc: BaseException) -> tuple[Case | None, Evidence | None]:
        found = self._raised.get(id(exc))
        if found is None or found[0] is not exc:
            return None, None
        return found[1], found[2]


def _warning_text(caught: warnings.WarningMessage) -> str:
    """``HypothesisWarning: Generating overly large repr ...``, the first line and at most 300 characters."""
    return f"{caught.category.__name__}: {_first_line(str(caught.message))[:300]}"


def _reported_text(reported: object) -> str:
    """``Hypothesis reported: WARNING: Hypothesis has spent more than five minutes ...``, the first
    line that says something and at most 300 characters."""
    return f"Hypothesis reported: {_first_line(str(reported))[:300]}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _leaves(raised: BaseException) -> list[BaseException]:
    if isinstance(raised, BaseExceptionGroup):
        return [leaf for inner in raised.exceptions for leaf in _leaves(inner)]
    return [raised]


def _failure(exc: BaseException, case: Case | None, evidence: Evidence | None, *, shrunk: bool = True) -> Failure:
    items = evidence.items if evidence is not None else {}
    if isinstance(exc, TargetError):
        return Failure(Status.ERROR, f"the target misbehaved: {exc}", case, items, shrunk)
    if isinstance(exc, AssertionError):
        return Failure(Status.FAIL, str(exc) or "assertion failed", case, items, shrunk)
    message = f"the kit's check raised {type(exc).__name__}: {exc} (a kit bug: please report it with this case)"
    return Failure(Status.ERROR, message, case, items, shrunk)


def replay_case(prop: Property, target: Target, case: Case) -> Result:
    """Run one saved case, without Hypothesis."""
    lacking = _lacking(prop, target)
    if lacking is not None:
        return lacking
    evidence = Evidence()
    started = time.perf_counter()
    try:
        prop.check(target, case, evidence)
    except PreconditionNotMet as exc:
        seen = _Seen()
        seen.examples = 1
        seen.not_judged(exc)
        return seen.counted(
            Result(prop.invariant, Status.NOT_CHECKABLE, f"not checkable on this case: {_reason(exc)}", case)
        )
    except Exception as exc:
        return _failed(prop, [_failure(exc, case, evidence)], time.perf_counter() - started, 1)
    seconds = time.perf_counter() - started
    if evidence.unobserved:
        message = _partial(evidence.unobserved)
        return Result(prop.invariant, Status.PARTIAL, message, case=case, seconds=seconds, examples=1)
    return Result(prop.invariant, Status.PASS, case=case, seconds=seconds, examples=1)


def _lacking(prop: Property, target: Target) -> Result | None:
    """``not checkable`` when the target lacks an operation the property needs."""
    missing = prop.missing(target.operations())
    if not missing:
        return None
    lacks = ", ".join(need.replace("|", " or ") for need in missing)
    why = getattr(target, "why_lacking", None)  # a target that can say why it lacks them (an HTTP target)
    because = why(missing) if callable(why) else None
    reason = f"it lacks {lacks}" + (f": {because}" if because else "")
    return Result(prop.invariant, Status.NOT_CHECKABLE, f"not checkable on this target: {reason}")


def _partial(unobserved: set[str]) -> str:
    return f"partial: {', '.join(sorted(unobserved))} not exposed by the target"


def _failed(prop: Property, failures: list[Failure], seconds: float, examples: int) -> Result:
    status = Status.ERROR if any(f.kind == Status.ERROR for f in failures) else Status.FAIL
    first = failures[0]
    return Result(prop.invariant, status, first.message, first.case, first.evidence, seconds, examples, failures)


def run(
    props: list[Property],
    target: Target,
    options: RunOptions,
    progress: Callable[[int, int, Property], None] | None = None,
) -> list[Result]:
    results = []
    for index, prop in enumerate(props, start=1):
        if progress is not None:
            progress(index, len(props), prop)
        results.append(run_property(prop, target, options))
    return results

"""``cascade-mutations verify``: apply each named mutation in a disposable copy of the committed
tree, run only the spec's tests, and check that they catch it (or that a documented survivor
survives).

Verdicts are only given on trustworthy evidence: a clean tree, a green baseline with exactly the
declared pass count, every test run under every mutation, no setup or teardown errors and no skips
(a test that errors or skips under a mutation did not catch it), code imported from the copy and
no files changed behind the runner's back. Otherwise the run stops with exit 2. Static checks
(``static_check`` marker) are never run: they would fail on any edit to an anchored line.

With ``early_stop`` a mutation expected CAUGHT runs with ``--exitfirst``, the selection entries its
``expect_failing`` prefixes name first. Only for such a run "every test run" becomes: the tests
that ran are the selection's own collection order up to the one that failed, that collection is
the baseline's, every outcome is for a baseline test, and the run stopped because of exactly one
failure (exit 1). That failure, if an expected test, is the verdict's one killer (the "first
killer"); if not, the mutation is run again without ``--exitfirst`` and judged on full evidence. A
run that did not stop at a failure ran everything and is judged by the full rule; a mutation
expected to SURVIVE always runs the full selection.

Runs go to ``jobs`` disposable copies at once (each checked against the committed tree's snapshot
before and after every run); results are reported in spec order whatever order they finish in.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from mutations._parallel import Done, Task, run_child, run_ordered
from mutations._tree import NoVerdict as NoVerdict
from mutations._tree import applied, snapshot
from mutations._tree import hermetic_env as hermetic_env
from mutations.conformance_share import (
    ConformanceBaseline,
    ConformanceVerdict,
    engine_mutations,
    involved_invariants,
    run_baseline,
    run_mutation,
    verdict_line,
)
from mutations.spec import STATIC_CHECK_MARKER, Mutation, Spec, static_problems

EXIT_OK, EXIT_MISBEHAVED, EXIT_NO_VERDICT = 0, 1, 2


@dataclass(frozen=True)
class TestRun:
    exitstatus: int
    collected: int
    outcomes: dict[str, str]
    collect_errors: list[str]
    modules: dict[str, str | None]
    phase_errors: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    """The collected tests in run order (``--exitfirst`` runs only; the outcomes keep the order they ran in)."""

    def with_outcome(self, outcome: str) -> list[str]:
        return sorted(n for n, o in self.outcomes.items() if o == outcome)

    @property
    def evidence(self) -> set[str]:
        """The tests whose outcome counts: xfail/xpass are documented gaps, not evidence."""
        return {n for n, o in self.outcomes.items() if o not in ("xfailed", "xpassed")}

    @property
    def errors(self) -> list[str]:
        """Tests with an error in setup or teardown, whatever their call phase did: an error is not a
        failure, even next to one (pytest reports a failed call with a broken teardown as both)."""
        return sorted({n for n, o in self.outcomes.items() if o.startswith("error")} | set(self.phase_errors))


@dataclass(frozen=True)
class Verdict:
    spec: Spec
    mutation: Mutation
    caught: bool
    failing: list[str]
    behaved: bool
    why: str = ""
    first_killer: bool = False
    """The run stopped at its first killing test (``--exitfirst``): ``failing`` is that test only."""
    rerun: str = ""
    """Why the mutation was run again in full after an early-stopped run."""


@dataclass(frozen=True)
class SpecTime:
    spec: Spec
    wall_s: float
    """From the start of its baseline to the end of its last mutation (specs overlap with ``jobs`` > 1)."""
    baseline_s: float
    runs_s: float
    """The time its runs took, added up."""


@dataclass
class Outcome:
    verdicts: list[Verdict] = field(default_factory=list)
    times: list[SpecTime] = field(default_factory=list)
    wall_s: float = 0.0
    conformance: list[ConformanceVerdict] | None = None
    """Each engine mutation judged by the conformance suite; None when not measured."""

    @property
    def misbehaved(self) -> list[Verdict | ConformanceVerdict]:
        judged: list[Verdict | ConformanceVerdict] = [*self.verdicts, *(self.conformance or [])]
        return [v for v in judged if not v.behaved]


def verify(
    specs: list[Spec],
    root: Path,
    known_invariants: set[str],
    *,
    keep_going: bool = False,
    timeout_s: float = 900.0,
    jobs: int = 1,
    early_stop: bool = False,
    conformance: bool | Literal["only"] = False,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Run every mutation of every spec; raises NoVerdict when the evidence cannot be trusted.

    ``jobs`` copies run at once; ``early_stop`` (the command line's default) stops a mutation
    expected CAUGHT at its first killing test (see the module docstring). With ``conformance`` every
    engine mutation is also judged by the conformance suite (:mod:`mutations.conformance_share`);
    ``"only"`` judges nothing else."""
    began = time.monotonic()
    _refuse_dirty(root)
    problems = [f"{s.path.name}: {p}" for s in specs for p in static_problems(s, root, known_invariants)]
    if problems:
        raise NoVerdict("the specs have static problems:\n  " + "\n  ".join(problems))
    outcome = Outcome(conformance=[] if conformance else None)
    plan = _Plan(specs, timeout_s, early_stop, keep_going, conformance)
    with _disposable_copies(root, max(1, min(jobs, len(plan.tasks)))) as (copies, reference):
        plan.reference = reference
        report = _Report(plan, outcome, say)
        run_ordered(plan.tasks, copies, report.consume, plan.ends_run)
    outcome.wall_s = time.monotonic() - began
    return outcome


_Result = TestRun | Verdict | ConformanceBaseline | ConformanceVerdict
_Body = Callable[[Path, threading.Event], _Result]


class _Plan:
    """The tasks of a verify run in serial order: each spec's baseline, then its mutations."""

    def __init__(
        self,
        specs: list[Spec],
        timeout_s: float,
        early_stop: bool,
        keep_going: bool,
        conformance: bool | Literal["only"] = False,
    ) -> None:
        self.timeout_s, self.early_stop, self.keep_going = timeout_s, early_stop, keep_going
        self.reference = ""
        self.baselines: dict[int, TestRun] = {}
        self.suspect: set[Path] = set()  # copies whose last task ended without a result
        self.tasks: list[Task[_Result]] = []
        self.owner: list[tuple[int, Mutation | None]] = []  # per task: spec index, mutation (None: baseline)
        self.specs = specs
        for n, spec in enumerate(specs if conformance != "only" else []):
            first = len(self.tasks)
            self.tasks.append(Task(self._guarded(self._baseline(n))))
            self.owner.append((n, None))
            for mutation in spec.mutations:
                self.tasks.append(Task(self._guarded(self._mutation(n, mutation)), after=first))
                self.owner.append((n, mutation))
        self.spec_tasks = len(self.tasks)
        engine = engine_mutations(specs) if conformance else []
        if engine:  # after every spec: the conformance baseline, then each engine mutation
            invariants = involved_invariants(engine)
            first = len(self.tasks)
            baseline = partial(run_baseline, invariants, timeout_s=timeout_s)
            self.tasks.append(Task(self._guarded(self._unchanged(baseline))))
            for spec, mutation in engine:
                body = partial(run_mutation, spec, mutation, timeout_s=timeout_s)
                self.tasks.append(Task(self._guarded(self._unchanged(body)), after=first))

    def ends_run(self, result: _Result) -> bool:
        return isinstance(result, Verdict | ConformanceVerdict) and not result.behaved and not self.keep_going

    def _unchanged(self, body: Callable[[Path, threading.Event], _Result]) -> _Body:
        """``body``, refused when it leaves the copy changed (a conformance run must not write into the tree)."""

        def run(copy: Path, cancel: threading.Event) -> _Result:
            result = body(copy, cancel)
            if snapshot(copy) != self.reference:
                raise NoVerdict(f"a conformance run changed files in the copy {copy}; it must write outside the tree")
            return result

        return run

    def _guarded(self, body: _Body) -> _Body:
        """``body`` on a copy that matches the committed tree. A copy changed since its last run is
        refused, unless that run ended without a result (it gave no verdict, which ends the run after
        the earlier tasks, or was cancelled): then it is restored first."""

        def run(copy: Path, cancel: threading.Event) -> _Result:
            if snapshot(copy) != self.reference:
                if copy not in self.suspect:
                    raise NoVerdict(f"files in the disposable copy {copy} changed between two runs")
                _restore(copy, self.reference)
            self.suspect.discard(copy)
            try:
                return body(copy, cancel)
            except BaseException:
                self.suspect.add(copy)
                raise

        return run

    def _baseline(self, n: int) -> _Body:
        def run(copy: Path, cancel: threading.Event) -> _Result:
            spec = self.specs[n]
            baseline = _run_tests(spec, copy, self.timeout_s, cancel)
            _check_baseline(spec, baseline, copy)
            if snapshot(copy) != self.reference:
                raise NoVerdict(
                    f"{spec.path.name}: the baseline run changed files in the copy; the tests have side effects"
                )
            self.baselines[n] = baseline
            return baseline

        return run

    def _mutation(self, n: int, mutation: Mutation) -> _Body:
        def run(copy: Path, cancel: threading.Event) -> _Result:
            spec, baseline = self.specs[n], self.baselines[n]

            def unchanged() -> None:
                if snapshot(copy) != self.reference:
                    raise NoVerdict(f"{mutation.name}: files in the copy changed after the mutation was restored")

            verdict = _verify_mutation(
                spec, mutation, copy, baseline, self.timeout_s, cancel, self.early_stop, between=unchanged
            )
            unchanged()
            return verdict

        return run


class _Report:
    """Consumes results in serial order: prints them, records verdicts and per-spec times."""

    def __init__(self, plan: _Plan, outcome: Outcome, say: Callable[[str], None]) -> None:
        self.plan, self.outcome, self.say = plan, outcome, say
        self.spec_done: list[Done[_Result]] = []

    def consume(self, done: Done[_Result]) -> None:
        if done.index >= self.plan.spec_tasks:
            self._conformance(done.result)
            return
        n, mutation = self.plan.owner[done.index]
        spec = self.plan.specs[n]
        if mutation is None:
            assert isinstance(done.result, TestRun)
            self.spec_done = [done]
            self.say(f"{spec.path.name} ({spec.family}): baseline {' '.join(spec.tests)}")
            passed = len(done.result.with_outcome("passed"))
            self.say(f"  baseline {passed} passed (spec expects {spec.expect_baseline_pass})")
        else:
            assert isinstance(done.result, Verdict)
            self.spec_done.append(done)
            self.outcome.verdicts.append(done.result)
            self.say(_verdict_line(done.result))
        last = done.index + 1 == self.plan.spec_tasks or self.plan.owner[done.index + 1][0] != n
        stops = done.result is not None and self.plan.ends_run(done.result)
        if last or stops:
            self._spec_time(spec)

    def _conformance(self, result: _Result | None) -> None:
        if isinstance(result, ConformanceBaseline):
            self.say(f"conformance share: baseline {len(result.verdicts)} invariant(s) pass on the reference")
        elif isinstance(result, ConformanceVerdict):
            assert self.outcome.conformance is not None
            self.outcome.conformance.append(result)
            self.say(verdict_line(result))

    def _spec_time(self, spec: Spec) -> None:
        first = self.spec_done[0]
        time_ = SpecTime(
            spec=spec,
            wall_s=max(d.ended for d in self.spec_done) - min(d.started for d in self.spec_done),
            baseline_s=first.ended - first.started,
            runs_s=sum(d.ended - d.started for d in self.spec_done),
        )
        self.outcome.times.append(time_)
        mutations = len(self.spec_done) - 1
        self.say(
            f"  {spec.path.name}: wall time {format_seconds(time_.wall_s)} for the baseline and {mutations} "
            f"mutation(s) (baseline {format_seconds(time_.baseline_s)}, runs {format_seconds(time_.runs_s)} in all)"
        )


def format_seconds(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{seconds:.1f}s"


def first_killer_order(tests: tuple[str, ...], prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """``tests`` with the entries holding a test some prefix names first (in the prefixes' order)."""
    first: list[str] = []
    for prefix in prefixes:
        first += [t for t in tests if (t.startswith(prefix) or prefix.startswith(t)) and t not in first]
    return (*first, *(t for t in tests if t not in first))


def _names(mutation: Mutation, test: str) -> bool:
    return any(test.startswith(prefix) for prefix in mutation.expect_failing)


def _verify_mutation(
    spec: Spec,
    mutation: Mutation,
    copy: Path,
    baseline: TestRun,
    timeout_s: float,
    cancel: threading.Event | None = None,
    early_stop: bool = False,
    between: Callable[[], None] = lambda: None,
) -> Verdict:
    rerun = ""
    if early_stop and mutation.expect_caught:
        tests = first_killer_order(spec.tests, mutation.expect_failing)
        run = _mutated_run(spec, mutation, copy, timeout_s, cancel, tests, exitfirst=True)
        killer = _first_killer(mutation, run, baseline)
        if killer is None:
            return _judge(spec, mutation, run, baseline)
        if not mutation.expect_failing or _names(mutation, killer):
            return Verdict(spec, mutation, caught=True, failing=[killer], behaved=True, first_killer=True)
        between()
        rerun = f"first killer {killer} is not an expected test; re-run in full"
    run = _mutated_run(spec, mutation, copy, timeout_s, cancel, spec.tests, exitfirst=False)
    return _judge(spec, mutation, run, baseline, rerun)


def _mutated_run(
    spec: Spec,
    mutation: Mutation,
    copy: Path,
    timeout_s: float,
    cancel: threading.Event | None,
    tests: tuple[str, ...],
    *,
    exitfirst: bool,
) -> TestRun:
    with applied(mutation, copy):
        run = _run_tests(spec, copy, timeout_s, cancel, tests=tests, exitfirst=exitfirst)
    if run.collect_errors:  # pytest calls a run with collection errors "interrupted" (exit 2): this says why
        raise NoVerdict(
            f"{mutation.name}: the mutated run had collection errors, so it proves nothing; an error is not a "
            f"catch: {run.collect_errors[:4]}"
        )
    if run.exitstatus not in (0, 1):
        raise NoVerdict(
            f"{mutation.name}: pytest ended the mutated run with exit {run.exitstatus} "
            f"({_EXIT_MEANINGS.get(run.exitstatus, 'not a pytest exit status')}), so its outcomes are incomplete"
        )
    if run.errors:
        raise NoVerdict(
            f"{mutation.name}: the mutated run had setup errors (or errors in teardown), so it proves nothing; "
            f"an error is not a catch: {run.errors[:4]}"
        )
    if run.with_outcome("skipped"):
        raise NoVerdict(
            f"{mutation.name}: the mutated run skipped {run.with_outcome('skipped')[:4]}; a skip is not a catch"
        )
    return run


_EXIT_MEANINGS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


def _first_killer(mutation: Mutation, run: TestRun, baseline: TestRun) -> str | None:
    """The test an ``--exitfirst`` run stopped at, once its evidence holds; None when it did not stop
    at a failure (it then ran everything, and the full rule judges it)."""
    strangers = sorted(set(run.outcomes) - set(baseline.outcomes))
    if strangers:
        raise NoVerdict(f"{mutation.name}: the mutated run reported tests the baseline did not run: {strangers[:4]}")
    failing = run.with_outcome("failed")
    if run.exitstatus != 1 or len(failing) != 1:
        return None
    if set(run.order) != set(baseline.outcomes) or len(run.order) != len(baseline.outcomes):
        missing = sorted(set(baseline.outcomes) - set(run.order))[:4]
        raise NoVerdict(f"{mutation.name}: the mutated run did not collect the same tests (missing: {missing})")
    ran = list(run.outcomes)
    if ran != run.order[: len(ran)] or ran[-1] != failing[0]:
        raise NoVerdict(
            f"{mutation.name}: the early-stopped run is not its collection up to the first failure "
            f"({failing[0]}): tests were left out or ran after it"
        )
    return failing[0]


def _judge(spec: Spec, mutation: Mutation, run: TestRun, baseline: TestRun, rerun: str = "") -> Verdict:
    """The full rule: the run ran every baseline test."""
    if run.evidence != baseline.evidence:
        missing = sorted(baseline.evidence - run.evidence)[:4]
        raise NoVerdict(f"{mutation.name}: the mutated run did not run the same tests (missing: {missing})")
    failing = run.with_outcome("failed")
    caught = bool(failing)
    why = ""
    behaved = caught == mutation.expect_caught
    if behaved and caught and mutation.expect_failing and not any(_names(mutation, f) for f in failing):
        behaved = False
        why = f"caught, but by none of the expected tests {list(mutation.expect_failing)}"
    elif caught and not mutation.expect_caught:
        why = (
            f"stale survivor documentation: expected SURVIVED, got CAUGHT by {', '.join(failing[:3])}"
            f"{' ...' if len(failing) > 3 else ''}; the tests now catch it, so set expect_caught to true in "
            f"{spec.path.name} and drop its survivor_reason"
        )
    elif not behaved:
        why = "expected CAUGHT, got SURVIVED"
    return Verdict(spec, mutation, caught=caught, failing=failing, behaved=behaved, why=why, rerun=rerun)


def _verdict_line(v: Verdict) -> str:
    mark = " " if v.behaved else "✗"
    word = "CAUGHT 1st" if v.first_killer else f"CAUGHT {len(v.failing)}" if v.caught else "SURVIVED"
    lines = [f"{mark} {word:<10} {v.mutation.name}  [{', '.join(v.mutation.invariants)}]"]
    lines += [
        f"      ↳ {name}" + ("  (first killer: the run stopped here)" if v.first_killer else "")
        for name in v.failing[:4]
    ]
    if len(v.failing) > 4:
        lines.append(f"      ↳ ... and {len(v.failing) - 4} more")
    if v.rerun:
        lines.append(f"      · {v.rerun}")
    if v.why:
        lines.append(f"      ! {v.why}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- evidence


def _check_baseline(spec: Spec, run: TestRun, copy: Path) -> None:
    name = spec.path.name
    if run.collect_errors or run.errors or run.with_outcome("failed") or run.exitstatus != 0:
        bad = (run.collect_errors + run.errors + run.with_outcome("failed"))[:6]
        raise NoVerdict(
            f"{name}: the baseline is red (pytest exit {run.exitstatus}); every verdict would be meaningless: {bad}"
        )
    if run.with_outcome("skipped"):
        raise NoVerdict(f"{name}: the baseline skipped tests {run.with_outcome('skipped')[:4]}; a skip is not evidence")
    passed = len(run.with_outcome("passed"))
    if passed != spec.expect_baseline_pass:
        raise NoVerdict(
            f"{name}: the baseline passed {passed} tests but the spec expects {spec.expect_baseline_pass}; "
            "the suite changed or the spec is stale: update expect_baseline_pass after checking why"
        )
    for module, path in run.modules.items():
        if not (copy / module).is_dir():
            continue  # not part of the tree under test (e.g. the kit's own pytest plugin)
        if path is not None and not Path(path).resolve().is_relative_to(copy.resolve()):
            raise NoVerdict(
                f"{name}: the tests imported {module} from {path}, not from the copy; mutations would not be seen"
            )


def pytest_command(tests: tuple[str, ...], *options: str) -> list[str]:
    """The pytest command line of every run over a spec's selection: its tests, never the static
    checks (see :data:`mutations.spec.STATIC_CHECK_MARKER`), plus ``options``."""
    return [sys.executable, "-m", "pytest", *pytest_args(tests, *options)]


def pytest_args(tests: tuple[str, ...], *options: str) -> list[str]:
    """:func:`pytest_command`'s arguments to pytest."""
    return [
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        f"not {STATIC_CHECK_MARKER}",
        *options,
        *tests,
    ]


def _run_tests(
    spec: Spec,
    copy: Path,
    timeout_s: float,
    cancel: threading.Event | None = None,
    *,
    tests: tuple[str, ...] | None = None,
    exitfirst: bool = False,
) -> TestRun:
    with tempfile.TemporaryDirectory(prefix="cascade-mutations-summary-") as tmp:
        summary, collected, log = Path(tmp) / "summary.json", Path(tmp) / "collected.json", Path(tmp) / "pytest.log"
        extra = {"CASCADE_MUTATION_SUMMARY": str(summary)}
        options = ["-p", "mutations.plugins.summary", "-p", "mutations.plugins.netdeny"]
        if exitfirst:
            # The collect plugin records the collection order, so the runner can see where the run stopped.
            options += ["-p", "mutations.plugins.collect", "--exitfirst"]
            extra["CASCADE_MUTATION_COLLECT"] = str(collected)
        env = hermetic_env(copy, Path(tmp), **extra)
        command = pytest_command(spec.tests if tests is None else tests, *options)
        returncode = run_child(command, copy, env, timeout_s, cancel, log)
        output = log.read_text(encoding="utf-8", errors="replace")
        if returncode is None:
            raise NoVerdict(
                f"{spec.path.name}: the test run exceeded {timeout_s:.0f} s; raise --timeout or fix the hang"
            )
        if not summary.is_file():
            raise NoVerdict(
                f"{spec.path.name}: pytest wrote no summary (exit {returncode}); output ends:\n{output[-2000:]}"
            )
        data = json.loads(summary.read_text(encoding="utf-8"))
        if returncode != data["exitstatus"]:
            raise NoVerdict(
                f"{spec.path.name}: pytest's summary says exit {data['exitstatus']} but the process ended with "
                f"{_ended(returncode)}: it did not finish cleanly after its tests, so the outcomes are not trusted; "
                f"output ends:\n{output[-2000:]}"
            )
        order = list(json.loads(collected.read_text(encoding="utf-8"))["items"]) if collected.is_file() else []
    if "CASCADE-MUTATIONS-NETWORK-DENIED" in output:
        raise NoVerdict(f"{spec.path.name}: a test tried to reach the network beyond loopback")
    return TestRun(
        exitstatus=data["exitstatus"],
        collected=data["collected"],
        outcomes=data["outcomes"],
        collect_errors=data["collect_errors"],
        modules=data["modules"],
        phase_errors=data.get("errors", []),
        order=order,
    )


def _ended(returncode: int) -> str:
    return f"signal {-returncode}" if returncode < 0 else f"exit {returncode}"


def _refuse_dirty(root: Path) -> None:
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise NoVerdict(f"{root} is not a git checkout the runner can read: {exc}") from exc
    if status.strip():
        listed = "\n  ".join(status.strip().splitlines()[:10])
        raise NoVerdict(
            "the tree has uncommitted changes; mutations run against the committed tree, so commit or stash "
            f"first:\n  {listed}"
        )


@contextmanager
def _disposable_copies(root: Path, count: int) -> Iterator[tuple[list[Path], str]]:
    """``count`` clones of the committed tree (all at the commit checked out when the run began) and
    the snapshot every copy must match before and after each run."""
    tmp = Path(tempfile.mkdtemp(prefix="cascade-mutations-"))
    try:
        head = _git(root, "rev-parse", "HEAD").strip()
        copies = []
        for n in range(count):
            copy = tmp / f"repo-{n}"
            _git(root, "clone", "--quiet", "--local", "--no-hardlinks", "--no-checkout", str(root), str(copy))
            _git(copy, "checkout", "--quiet", "--detach", head)
            copies.append(copy)
        snapshots = {snapshot(copy) for copy in copies}
        if len(snapshots) != 1:
            raise NoVerdict("the disposable copies of the committed tree differ from one another")
        yield copies, snapshots.pop()
    except subprocess.CalledProcessError as exc:
        raise NoVerdict(f"could not make a disposable copy of {root}: {exc.stderr.strip()}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _restore(copy: Path, reference: str) -> None:
    """Put a copy left changed by a run without a result back to the committed tree, exactly."""
    _git(copy, "checkout", "--quiet", "--", ".")
    _git(copy, "clean", "-qfdx")
    if snapshot(copy) != reference:
        raise NoVerdict(f"the disposable copy {copy} changed and could not be restored to the committed tree")

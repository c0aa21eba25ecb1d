"""pytest plugin (entry point ``pytest11``): ``pytest --cascade-target T`` adds one test per
implemented invariant of the catalogue to the user's own run.

    pytest --cascade-target python:mygateway.conformance:make_target --cascade-only WIRE
    pytest --cascade-target "exec:node adapter.mjs" --cascade-known-failures known.yaml
    pytest --cascade-target http://127.0.0.1:0 --cascade-launch "my-gateway --port {port} --ls {ls_address}"

Without ``--cascade-target`` the plugin adds nothing. The options are validated once, in
``pytest_configure``: a target that cannot be loaded, an unknown or not yet implemented
``--cascade-only`` name, or an unreadable known-failures file is a ``pytest.UsageError`` (one
line, exit code 4), never a failure per item.

The suite is a real collector, a child of the session: its items have the node IDs
``cascade-conformance::WIRE-1`` (select with ``-k WIRE-1``, ``--deselect
cascade-conformance::WIRE-1`` or ``--cascade-only``). Verdicts:

- pass -> passed; partial (passed on everything the target exposes) -> passed, the message in the
  item's ``user_properties`` and in a ``cascade-conformance`` report section (``-rP`` shows it);
- fail -> failed, with the statement, the message and the minimal counterexample of each distinct
  failure;
- error (the target crashed, hung or broke the protocol) -> failed, saying the target errored;
- not checkable -> skipped with the reason;
- a listed known failure that fails -> xfail; one that passes -> failed: remove it from the list.

As ``cascade-conformance run`` does, the suite writes a case file per failure, ``report.md`` and
``junit.xml`` to ``--cascade-report`` (default ``reports/conformance``; under xdist the controller
writes the one report from the workers' verdicts), and a failing item ends with its replay command.

Ctrl-C and SIGTERM end the session as interrupted (pytest's exit code 2): the invariant in progress
gets no verdict, and the target is closed, whatever it launched reaped, before pytest exits.

Hypothesis keeps its storage (example database, constants cache) in ``--cascade-cache-dir``
(default ``<rootdir>/.cascade-cache``) while the suite's items run, never in ``.hypothesis/``
of the working directory; the user's own Hypothesis tests are left as they are.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.options import HTTP_FLAGS, PREFIXES, given_words, http_values
from conformance.profiles import PROFILES, shrink_budget

# pytest loads this plugin in every session of an environment where the kit is installed, with or
# without the 'conformance' extra: only a run with --cascade-target needs the suite's modules, so they
# are imported in pytest_configure of such a run, never here (Hypothesis alone costs every other
# pytest session over a second). Not even fakels: a project of the user's may have a package of that name.
if TYPE_CHECKING:
    from conformance.example_db import ExampleDatabase
    from conformance.interrupts import InterruptWatch
    from conformance.known_failures import KnownFailure
    from conformance.properties import Case, Property
    from conformance.report import RunInfo
    from conformance.runner import Result, RunOptions
    from conformance.targets import HttpOptions, Target

SUITE = "cascade-conformance"
SECTION = "cascade-conformance"
_MAX_SHOWN = 8000  # characters of one counterexample or evidence shown in a failure


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cascade-conformance")
    group.addoption(
        "--cascade-target",
        help="run the Cascade conformance suite against this target "
        "(python:PKG.MODULE:FACTORY, exec:COMMAND, http://HOST:PORT, or reference)",
    )
    group.addoption(
        "--cascade-only", help="comma-separated invariant IDs or families, in any case (default: every implemented)"
    )
    group.addoption("--cascade-profile", choices=PROFILES, default="ci", help="Hypothesis profile for the suite")
    group.addoption("--cascade-known-failures", help="JSON/YAML list of invariants expected to fail")
    group.addoption(
        "--cascade-no-shrink",
        action="store_true",
        default=None,
        help="report each failure with the first example that showed it, unshrunk (sooner over a slow gateway)",
    )
    group.addoption(
        "--cascade-shrink-budget",
        type=shrink_budget,
        metavar="S",
        help="seconds shrinking may take per invariant from its first failure, then the smallest case found so "
        "far is reported (default: 60 for exec: and http:// targets, no limit in process)",
    )
    group.addoption(
        "--cascade-report",
        help="where the suite writes report.md, junit.xml and a case file per failure, as cascade-conformance "
        "run does (default: reports/conformance)",
    )
    group.addoption(
        "--cascade-example-db",
        help="where failing examples are kept between runs, per target, and tried first, as cascade-conformance "
        "run --example-db does (default: REPORT/examples)",
    )
    group.addoption(
        "--cascade-cache-dir",
        help="where Hypothesis keeps its storage while the suite runs (default: <rootdir>/.cascade-cache)",
    )
    for flag in HTTP_FLAGS:
        group.addoption(flag.option("pytest"), **flag.declaration("pytest"))


_HTTP_OPTIONS = tuple(flag.option("pytest") for flag in HTTP_FLAGS)


@dataclass
class _Suite:
    """The validated options: what the collector yields and what each item runs against; then what the
    run has done so far (the controller's, or a single process's)."""

    target: Target
    props: list[Property]
    known: dict[str, KnownFailure]
    pinned: dict[str, Case]
    options: RunOptions
    cache_dir: Path
    watch: InterruptWatch
    report_dir: Path
    # The command-line words that reach the target, for case files and replay lines (the CLI's flags).
    target_words: tuple[str, ...]
    examples: ExampleDatabase
    info: RunInfo  # the report's header: the kit, the profile, when the session began, its command
    results: dict[str, Result] = field(default_factory=dict)  # each finished invariant's verdict, known failures read
    running: dict[str, None] = field(default_factory=dict)  # the invariants started and not yet finished
    stopped: str | None = None  # what ended the session early (the launched gateway ended), if that did


_SUITE_KEY = pytest.StashKey[_Suite]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "invariant(id): the catalogue invariant (e.g. WIRE-1) a test pins")
    spec = config.getoption("--cascade-target")
    if not spec:
        needing = (
            "--cascade-only",
            "--cascade-known-failures",
            "--cascade-no-shrink",
            "--cascade-shrink-budget",
            "--cascade-report",
            "--cascade-example-db",
            *_HTTP_OPTIONS,
        )
        given = [opt for opt in needing if config.getoption(opt) not in (None, "", [])]
        if given:
            verb = "needs" if len(given) == 1 else "need"
            raise pytest.UsageError(
                f"{' and '.join(given)} {verb} --cascade-target: the suite runs only against a target"
            )
        return
    try:
        from conformance.errors import TargetError, TargetSpecError
        from conformance.example_db import ExampleDatabase
        from conformance.report import RunInfo, kit_version, now_utc
        from conformance.run_reports import clear_report
        from conformance.runner import RunOptions, default_shrink_budget, select
        from conformance.targets import load_target
    except ModuleNotFoundError as exc:
        from fakels.distribution import extra_problem

        problem = extra_problem("conformance", "--cascade-target")
        if problem is None:  # not a missing extra: a real import error, shown as it is
            raise
        raise pytest.UsageError(problem) from exc
    only = config.getoption("--cascade-only")
    try:
        props = select(only.split(",") if only is not None else None)
    except (KeyError, ValueError) as exc:
        raise pytest.UsageError(f"--cascade-only: {_one_line(exc)}") from None
    known, pinned = _known_failures(config)
    cache_dir = _cache_dir(config)
    watch = _stop_signals_interrupt(config)
    try:
        target = load_target(spec, http=_http_options(config, spec))
    except TargetSpecError as exc:
        raise pytest.UsageError(f"--cascade-target: {_one_line(exc)}") from None
    except TargetError as exc:
        raise pytest.UsageError(f"--cascade-target: the target failed to start: {exc}") from None
    config.add_cleanup(target.close)
    budget = config.getoption("--cascade-shrink-budget")
    report = Path(config.invocation_params.dir, config.getoption("--cascade-report") or "reports/conformance")
    target_words = _target_words(config, spec)
    given_db = config.getoption("--cascade-example-db")
    examples = ExampleDatabase(
        Path(config.invocation_params.dir, given_db) if given_db else report / "examples", target_words
    )
    options = RunOptions(
        profile=config.getoption("--cascade-profile"),
        database=examples.hypothesis_folder,
        shrink=not config.getoption("--cascade-no-shrink"),
        shrink_budget_s=budget if budget is not None else default_shrink_budget(target.kind),
    )
    command = shlex.join(["pytest", *config.invocation_params.args])
    info = RunInfo(
        kit_version(), options.profile, options.seed, options.shrink, options.max_examples, now_utc(),
        shrink_budget_s=options.shrink_budget_s, command=command,
    )  # fmt: skip
    suite = _Suite(target, props, known, pinned, options, cache_dir, watch, report, target_words, examples, info)
    config.stash[_SUITE_KEY] = suite
    if not hasattr(config, "workerinput"):  # the controller (or the one process) writes the report, afresh
        clear_report(report)
        config.pluginmanager.register(_VerdictCollector(suite), "cascade-conformance-verdicts")


def _target_words(config: pytest.Config, spec: str) -> tuple[str, ...]:
    return ("--target", spec, *given_words("cli", lambda flag: config.getoption(flag.option("pytest"))))


def _stop_signals_interrupt(config: pytest.Config) -> InterruptWatch:
    """SIGTERM (what ``timeout`` and CI runners send) interrupts the session as Ctrl-C does, so pytest
    ends it as interrupted and the cleanups run: the target is closed and what it launched reaped.
    Only in a session that runs the suite; the handlers are restored at its end."""
    from conformance.interrupts import say_still_stopping, stop_signals_interrupt

    stack = contextlib.ExitStack()
    watch = stack.enter_context(stop_signals_interrupt(say_still_stopping))
    config.add_cleanup(stack.close)  # registered before the target's close: runs after it
    return watch


def _http_options(config: pytest.Config, spec: str) -> HttpOptions | None:
    values = http_values(lambda flag: config.getoption(flag.option("pytest")))
    cwd = values["launch_cwd"]
    values["launch_cwd"] = Path(config.invocation_params.dir, cwd) if cwd else None
    # Loaded here, not at start-up: the HTTP target imports fakels (see conformance.targets).
    from conformance.targets import http_options

    return http_options(spec, **values, prefix=PREFIXES["pytest"])


def _known_failures(config: pytest.Config) -> tuple[dict[str, KnownFailure], dict[str, Case]]:
    from conformance.cases import CaseFileError
    from conformance.known_failures import KnownFailuresError, load_known_failures, pinned_cases

    path = config.getoption("--cascade-known-failures")
    if not path:
        return {}, {}
    try:
        known = load_known_failures(Path(config.invocation_params.dir, path))
        pinned = pinned_cases(known)
    except (KnownFailuresError, CaseFileError) as exc:
        raise pytest.UsageError(f"--cascade-known-failures: {_one_line(exc)}") from None
    return known, pinned


def _cache_dir(config: pytest.Config) -> Path:
    given = config.getoption("--cascade-cache-dir")
    if given:
        return Path(config.invocation_params.dir, given).resolve()
    return config.rootpath / ".cascade-cache"


def _one_line(exc: BaseException) -> str:
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(text).split())


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """The suite joins the session's own collection as one more top-level collector."""
    report = yield
    if isinstance(collector, pytest.Session) and report.passed and _SUITE_KEY in collector.config.stash:
        report.result.append(CascadeSuite.from_parent(collector, name=SUITE, nodeid=SUITE))
    return report


class CascadeSuite(pytest.Collector):
    """The catalogue's selected invariants, one item each."""

    def collect(self) -> Iterator[pytest.Item]:
        suite = self.config.stash[_SUITE_KEY]
        for prop in suite.props:
            yield InvariantItem.from_parent(self, name=prop.invariant.id, prop=prop)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, SUITE


class CascadeFailure(AssertionError):
    """A verdict that fails the item; its text is the whole report (no traceback)."""


class InvariantItem(pytest.Item):
    def __init__(self, *, prop: Property, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prop = prop
        self.add_marker(pytest.mark.invariant(prop.invariant.id))

    def runtest(self) -> None:
        from conformance.errors import GatewayGone
        from conformance.judging import judge
        from conformance.known_failures import apply_known_failure
        from conformance.report import save_failure_cases
        from conformance.result_json import result_to_json
        from conformance.runner import hypothesis_storage

        suite = self.config.stash[_SUITE_KEY]
        inv_id = self.prop.invariant.id
        try:
            with hypothesis_storage(suite.cache_dir):
                result = judge(
                    self.prop,
                    suite.target,
                    suite.options,
                    pinned=suite.pinned.get(inv_id),
                    examples=suite.examples,
                    checkpoint=suite.watch.check,
                )
        except GatewayGone as gone:  # nothing judged since it ended can be trusted: the session ends, exit 2
            suite.stopped = f"stopped during {inv_id}: {gone}"
            pytest.exit(suite.stopped, returncode=pytest.ExitCode.INTERRUPTED)
        suite.watch.check()  # a verdict that came back after a stop signal is not to be trusted
        known = suite.known.get(inv_id)
        verdict = apply_known_failure(result, known)
        # The verdict rides on the item's report to whichever process writes the run's report (an xdist
        # controller too), even when the session is interrupted next.
        self.user_properties.append((_RESULT_PROPERTY, result_to_json(verdict)))
        saved = save_failure_cases([verdict], suite.report_dir, suite.target.description, suite.target_words)
        self._replays = [_replay_line(path, suite.target_words) for path in saved.get(inv_id, [])]
        self._judge(result, known)

    def _judge(self, result: Result, known: KnownFailure | None) -> None:
        """The pytest outcome of ``result``: the verdict with the known-failure list read
        (:func:`conformance.known_failures.apply_known_failure`), mapped status by status."""
        from conformance.known_failures import apply_known_failure
        from conformance.runner import Status

        message = result.message or ""
        inv = result.invariant
        self.user_properties += [("cascade_invariant", inv.id), ("cascade_verdict", result.status.value)]
        if message:
            self.user_properties.append(("cascade_message", message))
        if result.examples or result.refused or result.unjudged:
            self.user_properties.append(("cascade_examples", result.counts))
        if result.reasons:
            self.user_properties.append(("cascade_not_judged", result.reasons_text()))
        unexpected = f"{inv.id}: unexpected verdict {result.status.value!r}: {message}"
        if result.status in (Status.KNOWN_FAILURE, Status.UNEXPECTED_PASS):  # the runner never gives these
            raise CascadeFailure(unexpected)
        if result.status == Status.PARTIAL:
            self.add_report_section("call", SECTION, f"{inv.id} pass ({message})")
        verdict = apply_known_failure(result, known).status
        if verdict == Status.NOT_CHECKABLE:
            pytest.skip(message or "not checkable on this target")
        if verdict.passed:
            return
        if verdict == Status.UNEXPECTED_PASS:
            assert known is not None
            raise CascadeFailure(
                f"{inv.id} is listed as a known failure ({known.reason}) but passes: remove it from the list"
            )
        if verdict == Status.KNOWN_FAILURE:
            assert known is not None
            pytest.xfail(f"known failure ({known.reason}): {message.splitlines()[0] if message else ''}")
        if verdict == Status.FAIL:
            raise CascadeFailure(f"{inv.id}: {inv.statement}\n\n{_failures_text(result)}{self._replay_text()}")
        if verdict == Status.ERROR:
            listed = (
                f"\n\n(listed as a known failure ({known.reason}), but an error is not a verdict on the invariant)"
                if known is not None
                else ""
            )
            raise CascadeFailure(
                f"{inv.id}: the target errored (it crashed, hung or broke the protocol), so the invariant could "
                f"not be judged\n\n{_failures_text(result)}{self._replay_text()}{listed}"
            )
        raise CascadeFailure(unexpected)

    def _replay_text(self) -> str:
        replays = getattr(self, "_replays", [])
        return "".join(f"\n\nreplay: {line}" for line in replays)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:  # Any: pytest's TerminalRepr
        if isinstance(excinfo.value, CascadeFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{SUITE}::{self.prop.invariant.id}"


def _replay_line(case_path: Path, target_words: tuple[str, ...]) -> str:
    from conformance.program import kit_program
    from conformance.report import replay_for

    return replay_for(case_path, target_words, kit_program())


_RESULT_PROPERTY = "cascade_result"  # an item's verdict as JSON (conformance.result_json), taken off its report
_WORKER_STOPPED = "cascade_conformance_stopped"
_REPORTS_KEY = pytest.StashKey[list[Path]]()


class _VerdictCollector:
    """Registered in the process that writes the run's report (a single process, or an xdist controller):
    collects each invariant's verdict as its item's report brings it, from this process or a worker, and
    which invariants have started, for the report of a run stopped early."""

    def __init__(self, suite: _Suite) -> None:
        self._suite = suite

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if nodeid.startswith(f"{SUITE}::"):
            self._suite.running[nodeid.split("::", 1)[1]] = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Takes the verdict's JSON off the report's user properties (a junit.xml of the user's own does
        not get it)."""
        if report.when != "call":
            return
        properties = list(report.user_properties)
        carried = [value for name, value in properties if name == _RESULT_PROPERTY and isinstance(value, dict)]
        if not carried:
            return
        from conformance.result_json import result_from_json

        result = result_from_json(carried[0])
        self._suite.results[result.invariant.id] = result
        self._suite.running.pop(result.invariant.id, None)
        report.user_properties = [(name, value) for name, value in properties if name != _RESULT_PROPERTY]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """An xdist worker that ended the session early (its launched gateway ended) says why."""
        stopped = (getattr(node, "workeroutput", None) or {}).get(_WORKER_STOPPED)
        if stopped:
            self._suite.stopped = stopped


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite's reports, as ``cascade-conformance run`` writes them, in catalogue order, from every
    verdict that finished, also when the session was stopped early (then the report says so); an xdist worker
    leaves that to the controller."""
    config = session.config
    suite = config.stash.get(_SUITE_KEY, None)
    if suite is None:
        return
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_STOPPED] = suite.stopped
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or suite.watch.received or suite.stopped is not None
    if not suite.results and not interrupted:
        return
    from dataclasses import replace

    from conformance.catalogue import CATALOGUE
    from conformance.program import kit_program
    from conformance.report import target_callers
    from conformance.run_reports import RunRecord, run_exit_code, write_reports

    results = [suite.results[inv_id] for inv_id in CATALOGUE if inv_id in suite.results]
    stopped = None
    if interrupted:
        running = list(suite.running)
        where = f"during {', '.join(running)}" if running else "between invariants"
        finished = f"{len(results)} of {len(suite.props)} finished"
        stopped = f"{suite.stopped}; {finished}" if suite.stopped else f"interrupted {where}: {finished}"
    code = run_exit_code(
        results, stopped=interrupted, gone=suite.stopped is not None, interrupt_code=suite.watch.exit_code
    )
    record = RunRecord(
        results,
        suite.target.description,
        suite.target_words,
        replace(suite.info, interrupted=stopped),
        code,
        callers=target_callers(suite.target),
        program=kit_program(),
    )
    config.stash[_REPORTS_KEY] = write_reports(record, suite.report_dir).paths()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per invariant the run judged: its verdict, how many examples were judged, refused and
    not judged, and why (what `cascade-conformance run` prints; a skip reason alone hides the counts)."""
    rows = verdict_rows(terminalreporter.stats)
    if not rows:
        return
    terminalreporter.section(SECTION)
    width = max(len(inv_id) for inv_id, _ in rows)
    for inv_id, text in rows:
        terminalreporter.write_line(f"{inv_id:<{width}}  {text}")
    reports = terminalreporter.config.stash.get(_REPORTS_KEY, None)
    if reports:
        terminalreporter.write_line(f"reports: {' '.join(str(path) for path in reports)}")


def verdict_rows(stats: dict[str, list[Any]]) -> list[tuple[str, str]]:
    """``(ID, "pass (40 judged, 3 refused); not judged: ...")`` for each invariant item's call report
    in ``stats`` (the terminal reporter's, workers' reports included), in catalogue order."""
    from conformance.catalogue import CATALOGUE

    rows: dict[str, str] = {}
    for reports in stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            props = dict(getattr(report, "user_properties", None) or [])
            inv_id = props.get("cascade_invariant")
            if inv_id is None:
                continue
            text = str(props.get("cascade_verdict", ""))
            if "cascade_examples" in props:
                text += f" ({props['cascade_examples']})"
            if "cascade_not_judged" in props:
                text += f"; not judged: {props['cascade_not_judged']}"
            rows[str(inv_id)] = text
    order = {inv_id: index for index, inv_id in enumerate(CATALOGUE)}
    return sorted(rows.items(), key=lambda row: order.get(row[0], len(order)))


def _failures_text(result: Result) -> str:
    """Every distinct failure: its message, its minimal counterexample, what the check saw."""
    failures = list(getattr(result, "failures", None) or [])
    if not failures:
        return _one_failure(result.message, result.case, result.evidence)
    parts = [f"{len(failures)} distinct failures:"] if len(failures) > 1 else []
    for index, failure in enumerate(failures, start=1):
        text = _one_failure(
            failure.message, failure.case, failure.evidence, shrunk=failure.shrunk, cut_short=failure.cut_short
        )
        parts.append(f"--- failure {index} of {len(failures)} ---\n{text}" if len(failures) > 1 else text)
    return "\n\n".join(parts)


def _one_failure(
    message: str,
    case: Case | None,
    evidence: dict[str, Any] | None,
    *,
    shrunk: bool = True,
    cut_short: bool = False,
) -> str:
    from conformance.report import counterexample_heading

    heading = counterexample_heading(shrunk, cut_short).lower()
    text = f"{message}\n\n{heading}:\n{_shown(case) if case is not None else '(none recorded)'}"
    if evidence:
        text += f"\n\nwhat the check saw:\n{_shown(evidence)}"
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + f"\n... ({len(text) - _MAX_SHOWN} more characters)"

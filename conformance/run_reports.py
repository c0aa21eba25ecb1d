"""A judged run's reports, one writer for every front: ``cascade-conformance run``, ``replay`` and the pytest
plugin write the same ``report.md``, ``junit.xml``, ``results.json`` and case files from a :class:`RunRecord`,
with the same replay lines and the same exit status."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.program import EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE, PROGRAM
from conformance.report import (
    RunInfo,
    replay_for,
    save_failure_cases,
    write_junit,
    write_markdown,
)
from conformance.results_document import results_document, write_results
from conformance.runner import Result

# What a run writes in its report folder; a new run removes an earlier run's (and nothing else) first.
REPORT_FILES = ("report.md", "junit.xml", "results.json", "gateway-output.log")
CASES_FOLDER = "cases"


def clear_report(report_dir: Path) -> None:
    """The report folder as a new run must find it: what an earlier run wrote there (its reports, its case
    files) removed, so nothing of another run or another target is read as this one's. Other files stay."""
    for name in REPORT_FILES:
        (report_dir / name).unlink(missing_ok=True)
    cases = report_dir / CASES_FOLDER
    if cases.is_dir():
        for case in cases.glob("*.json"):
            case.unlink(missing_ok=True)  # another run clearing the same folder may be first


def run_exit_code(results: Sequence[Result], *, stopped: bool, gone: bool, interrupt_code: int) -> int:
    """What a run exits with: 2 when the launched gateway ended during it, the signal's code (130, 143)
    when it was stopped, 1 when a verdict was not as expected or nothing was judged at all, else 0."""
    if gone:
        return EXIT_USAGE
    if stopped:
        return interrupt_code
    if results and not any(r.judged for r in results):
        return EXIT_UNEXPECTED
    return EXIT_UNEXPECTED if any(not r.status.ok for r in results) else EXIT_OK


@dataclass(frozen=True)
class RunRecord:
    """What a judged run produced and how it was made. ``target_words``: the command-line words that reach
    the target (``--target`` and its options; none: the reference), kept in case files and replay lines."""

    results: Sequence[Result]  # in catalogue order
    target: str  # the target's description
    target_words: tuple[str, ...]
    info: RunInfo
    exit_code: int
    callers: str | None = None
    gateway_output: str | None = None  # what a launched gateway wrote to stdout and stderr
    program: str = PROGRAM

    @property
    def target_spec(self) -> str | None:
        return self.target_words[1] if len(self.target_words) > 1 else None

    @property
    def target_flags(self) -> str:
        """The target's options besides ``--target``, quoted, with a leading space (none: empty)."""
        flags = self.target_words[2:]
        return f" {shlex.join(flags)}" if flags else ""

    def replay(self, case_path: Path) -> str:
        """The command that replays ``case_path`` against this run's target."""
        return replay_for(case_path, self.target_words, self.program)


@dataclass(frozen=True)
class WrittenReports:
    markdown: Path
    junit: Path
    results: Path
    gateway_log: Path | None
    cases: dict[str, list[Path]]  # each invariant's case files, one per distinct failure with a case

    def paths(self) -> list[Path]:
        """The report files, as the ``reports:`` line lists them."""
        return [self.markdown, self.junit, self.results, *([self.gateway_log] if self.gateway_log else [])]


def write_reports(record: RunRecord, report_dir: Path) -> WrittenReports:
    """Every report of ``record`` in ``report_dir``: the case files, junit.xml, results.json, report.md and
    what a launched gateway wrote."""
    report_dir.mkdir(parents=True, exist_ok=True)
    gateway_log = None
    if record.gateway_output is not None:
        gateway_log = report_dir / "gateway-output.log"
        gateway_log.write_text(record.gateway_output, encoding="utf-8")
    results = list(record.results)
    cases = save_failure_cases(results, report_dir, record.target, record.target_words)
    junit = write_junit(results, report_dir / "junit.xml", record.target)
    document = results_document(
        results, target=record.target, info=record.info, cases=cases, replay=record.replay, exit_code=record.exit_code
    )
    results_file = write_results(report_dir / "results.json", document)
    markdown = write_markdown(
        results,
        report_dir / "report.md",
        record.target,
        record.target_spec,
        cases,
        record.target_flags,
        record.program,
        info=record.info,
        callers=record.callers,
        exit_code=record.exit_code,
    )
    return WrittenReports(markdown, junit, results_file, gateway_log, cases)

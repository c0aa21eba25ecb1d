"""Run reports: the per-invariant summary lines, JUnit XML, and a Markdown report with, for
each failure, the statement, the minimal counterexample, what the target saw, and the command
that replays exactly that case."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from conformance.cases import CaseFile, write_case
from conformance.program import PROGRAM
from conformance.properties import Case
from conformance.runner import Failure, Result, Status


def summary_line(result: Result) -> str:
    inv = result.invariant
    figures = f"{result.examples:>4} ex {result.seconds:6.2f}s" if result.examples else " " * 15
    return f"{inv.id:<8} {result.line:<20} {figures}  {_clip(inv.statement, 70)}"


def detail_line(result: Result) -> str | None:
    """The line under a summary line that says what was not judged and why (None: all judged)."""
    if result.status == Status.NOT_CHECKABLE:
        drawn = f"{result.refused} refused, {result.unjudged} not judged; " if result.refused else ""
        return f"{'':<9}{drawn}{result.message}"
    if not (result.refused or result.unjudged):
        return None
    return f"{'':<9}{result.counts}; not judged: {result.reasons_text()}"


def _clip(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters (with an ellipsis when cut)."""
    if len(text) <= width:
        return text
    head = text[:width]  # a word ending at width - 1 is whole when head ends with its space
    cut = head.rsplit(" ", 1)[0] if " " in head else text[: width - 1]
    return cut.rstrip(",;:") + "…"


def kit_version() -> str:
    """The installed kit's version, for the reports' headers."""
    try:
        return metadata.version(PROGRAM)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def now_utc() -> str:
    """Now, as the reports say when a run started: ISO 8601, UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunInfo:
    """What was run, for the report's header: the kit's version and the run's settings."""

    version: str
    profile: str
    seed: int | None  # None: the profile's own (derandomized for ci)
    shrink: bool
    max_examples: int | None  # None: the profile's
    started: str  # ISO 8601, UTC
    interrupted: str | None = None  # ``interrupted during SO-2: 1 of 7 finished``
    shrink_budget_s: float | None = None  # seconds shrinking may take per invariant; None: no budget
    command: str | None = None  # the command line the run was made with, every option as given
    replayed: str | None = None  # the case file a replay ran (no search: one example, as saved)

    def lines(self) -> list[str]:
        seed = f"seed {self.seed}" if self.seed is not None else "derandomized"
        examples = (
            f"at most {self.max_examples} examples" if self.max_examples is not None else "the profile's examples"
        )
        shrinking = "off" if not self.shrink else "on"
        if self.shrink and self.shrink_budget_s is not None:
            shrinking += f" (budget {self.shrink_budget_s:g} s)"
        run = (
            f"- Replayed: `{self.replayed}` (one saved case, no search)"
            if self.replayed is not None
            else f"- Profile: {self.profile} ({seed}), shrinking {shrinking}, {examples} per invariant"
        )
        return [
            f"- Kit: {PROGRAM} {self.version}",
            run,
            f"- Started: {self.started}",
            *(
                [f"- **Stopped early**: {self.interrupted}; the invariants not listed below were not run"]
                if self.interrupted
                else []
            ),
        ]


def target_callers(target: object) -> str | None:
    """Who the kit is on ``target`` (an HTTP target's callers line); None for other kinds."""
    callers = getattr(target, "callers", None)
    return callers if isinstance(callers, str) else None


def replay_command(case_path: Path, target: str | None, target_flags: str = "", program: str = PROGRAM) -> str:
    """The command that replays one case; ``target_flags``: how the target is reached besides
    ``--target`` (an HTTP target's --launch, --api-key, ...), already quoted; ``program``: the kit's
    command as the user can run it (quoted words)."""
    parts = ["replay", str(case_path)]
    if target:
        parts += ["--target", target]
    return f"{program} {shlex.join(parts)}{target_flags}"


def replay_for(case_path: Path, target_words: tuple[str, ...], program: str = PROGRAM) -> str:
    """The command that replays one case against the target ``target_words`` reach (``--target`` and its
    options; none: the reference): :func:`replay_command` of the same case and target."""
    return f"{program} {shlex.join(['replay', str(case_path), *target_words])}"


def counterexample_heading(shrunk: bool, cut_short: bool = False) -> str:
    """``Minimal counterexample``, or what the case is when it was not shrunk, or when shrinking was cut
    short at the shrink budget (the report's and the pytest plugin's wording)."""
    if cut_short:
        return "Smallest counterexample found before shrinking was cut short"
    return "Minimal counterexample" if shrunk else "Counterexample (as found, not shrunk)"


def distinct_failures(result: Result) -> list[Failure]:
    """Every distinct failure of ``result``; a failed result without any recorded: one made of its message."""
    if result.failures:
        return result.failures
    if result.status in (Status.FAIL, Status.ERROR, Status.KNOWN_FAILURE):
        return [Failure(result.status, result.message, result.case, result.evidence)]
    return []


def save_failure_cases(
    results: list[Result], report_dir: Path, target_description: str, target_args: tuple[str, ...] = ()
) -> dict[str, list[Path]]:
    """Every distinct failure with a case as a case file: ``cases/img-3.json``, ``cases/img-3-2.json``, ...
    ``target_args``: the command-line words that reached the target, kept so the case replays there."""
    saved: dict[str, list[Path]] = {}
    for result, failure, case, path in _case_files(results, report_dir):
        document = CaseFile(result.invariant.id, case, target_description, failure.message, target_args)
        saved.setdefault(result.invariant.id, []).append(write_case(path, document))
    return saved


def failure_case_paths(results: list[Result], report_dir: Path) -> dict[str, list[Path]]:
    """Where :func:`save_failure_cases` puts the case files of ``results``, without writing them (the
    pytest plugin's controller reports the files its xdist workers wrote)."""
    paths: dict[str, list[Path]] = {}
    for result, _, _, path in _case_files(results, report_dir):
        paths.setdefault(result.invariant.id, []).append(path)
    return paths


def _case_files(results: list[Result], report_dir: Path) -> Iterator[tuple[Result, Failure, Case, Path]]:
    """Each failure that has a case, with its file: ``cases/img-3.json``, ``cases/img-3-2.json``, ..."""
    for result in results:
        if result.status not in (Status.FAIL, Status.ERROR, Status.KNOWN_FAILURE):
            continue
        for number, failure in enumerate(distinct_failures(result), start=1):
            if failure.case is not None:
                stem = result.invariant.id.lower() + (f"-{number}" if number > 1 else "")
                yield result, failure, failure.case, report_dir / "cases" / f"{stem}.json"


def write_junit(results: list[Result], path: Path, target_description: str) -> Path:
    failures = sum(1 for r in results if r.status in (Status.FAIL, Status.UNEXPECTED_PASS))
    errors = sum(1 for r in results if r.status == Status.ERROR)
    skipped = sum(1 for r in results if r.status in (Status.NOT_CHECKABLE, Status.KNOWN_FAILURE))
    suite = ET.Element(
        "testsuite",
        name="cascade-conformance",
        tests=str(len(results)),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="target", value=target_description)
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"conformance.{result.invariant.family}",
            name=result.invariant.id,
            time=f"{result.seconds:.3f}",
        )
        properties = ET.SubElement(case, "properties")
        # ``status``: one word for programs; ``verdict``: the line a person reads, which may say more.
        ET.SubElement(properties, "property", name="status", value=result.status.word)
        ET.SubElement(properties, "property", name="verdict", value=result.line)
        if result.status in (Status.FAIL, Status.ERROR, Status.UNEXPECTED_PASS):
            tag = "error" if result.status == Status.ERROR else "failure"
            element = ET.SubElement(case, tag, message=result.line + ": " + _first_line(result.message))
            element.text = "\n\n".join(_failure_text(f) for f in distinct_failures(result)) or result.message
        elif result.status in (Status.NOT_CHECKABLE, Status.KNOWN_FAILURE):
            ET.SubElement(case, "skipped", message=f"{result.status.value}: {result.message}")
        elif result.status == Status.PARTIAL:
            ET.SubElement(case, "system-out").text = result.message
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _failure_text(failure: Failure) -> str:
    text = f"[{failure.kind.value}] {failure.message}"
    if failure.case is not None:
        text += "\n\ncase:\n" + _json(failure.case)
    return text


def write_markdown(
    results: list[Result],
    path: Path,
    target_description: str,
    target_spec: str | None,
    cases: dict[str, list[Path]],
    target_flags: str = "",
    program: str = PROGRAM,
    *,
    info: RunInfo | None = None,
    callers: str | None = None,
    exit_code: int | None = None,
) -> Path:
    """``callers``: who the kit was on the target (an HTTP target's keys, per-user signal and read scope);
    ``exit_code``: what the run exits with, for the summary line under the header. The sections of the
    failures come before those of the known failures, and those before the partial passes."""
    lines = ["# Conformance report", ""]
    if info is not None and info.command:
        lines += [f"- Command: `{info.command}`"]
    lines += [f"- Target: `{target_description}`"]
    if callers:
        lines += [f"- Callers: {callers}"]
    if info is not None:
        lines += info.lines()
    lines += ["", f"**{outcome_line(results, exit_code)}**", ""]
    lines += [
        "| invariant | result | judged | refused | not judged | seconds |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.invariant.id} | {_cell(r.line)} | {r.examples} | {r.refused} | {r.unjudged} | {r.seconds:.2f} |"
        for r in results
    ]
    for result in sorted((r for r in results if r.status in _SECTION_ORDER), key=lambda r: _SECTION_ORDER[r.status]):
        lines += _verdict_section(result, cases.get(result.invariant.id, []), target_spec, target_flags, program)
    lines += _not_judged_section(results)
    lines += _waiting_section(results)
    lines += _warnings_section(results)
    lines += ["", "## What each invariant states", ""]
    lines += [f"- **{r.invariant.id}** ({r.line}): {r.invariant.statement}" for r in results]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# Which verdicts get a section of their own, in this order: what needs fixing first.
_SECTION_ORDER = {
    Status.FAIL: 0,
    Status.ERROR: 0,
    Status.UNEXPECTED_PASS: 0,
    Status.KNOWN_FAILURE: 1,
    Status.PARTIAL: 2,
}


def counts_text(results: Sequence[Result]) -> str:
    """``51 invariant(s): 48 pass, 2 partial, 1 fail``, statuses in their declared order."""
    statuses = {r.status for r in results}
    counts = ", ".join(f"{sum(1 for r in results if r.status == s)} {s.value}" for s in Status if s in statuses)
    return f"{len(results)} invariant(s)" + (f": {counts}" if counts else "")


def outcome_line(results: Sequence[Result], exit_code: int | None) -> str:
    """The report's summary line: ``exit status 1: 51 invariant(s): 50 pass, 1 fail``."""
    return (f"exit status {exit_code}: " if exit_code is not None else "") + counts_text(results)


def _verdict_section(
    result: Result, saved: list[Path], target_spec: str | None, target_flags: str, program: str
) -> list[str]:
    """One verdict that is not a plain pass: its statement, then each distinct failure with its minimal
    counterexample, what the fake and the target saw, and the command that replays exactly that case."""
    inv = result.invariant
    lines = ["", f"## {inv.id}: {result.line}", "", f"> {inv.statement}"]
    failures = distinct_failures(result)
    if not failures:
        lines += ["", "```", result.message, "```"]
    for number, failure in enumerate(failures, start=1):
        if len(failures) > 1:
            lines += ["", f"### Failure {number} of {len(failures)} ({failure.kind.value})"]
        lines += ["", "```", failure.message, "```"]
        if failure.case is not None:
            heading = counterexample_heading(failure.shrunk, failure.cut_short)
            lines += ["", heading + ":", "", "```json", _json(failure.case), "```"]
        if failure.evidence:
            lines += ["", "What the fake and the target saw (decoded):", "", "```json", _json(failure.evidence), "```"]
        case_path = _case_for(saved, failures, number)
        if case_path is not None:
            command = replay_command(case_path, target_spec, target_flags, program)
            lines += ["", "Replay exactly this case:", "", "```", command, "```"]
    return lines


def _not_judged_section(results: list[Result]) -> list[str]:
    """Why each not-checkable or partial verdict, and every example not judged, was not judged."""
    lines: list[str] = []
    for result in results:
        why = []
        if result.status in (Status.NOT_CHECKABLE, Status.PARTIAL):
            why.append(result.message)
        if result.reasons and result.status != Status.NOT_CHECKABLE:
            why.append(f"{result.counts}; not judged: {result.reasons_text()}")
        if why:
            lines += [f"- **{result.invariant.id}** ({result.line.split(' (')[0]}): " + " ".join(why)]
    return ["", "## What was not judged", "", *lines] if lines else []


def waiting_line(results: list[Result]) -> str | None:
    """``time: 250.1 s, of which 180.0 s waiting for the gateway (42 waits) and 70.1 s the kit's own``;
    None when the gateway never made the kit wait."""
    waits = sum(r.waits for r in results)
    if not waits:
        return None
    total, waited = sum(r.seconds for r in results), sum(r.waited_s for r in results)
    return (
        f"time: {total:.1f} s, of which {waited:.1f} s waiting for the gateway ({waits} wait(s): rate limits and "
        f"pace) and {max(0.0, total - waited):.1f} s the kit's own"
    )


def _waiting_section(results: list[Result]) -> list[str]:
    """How often and how long each invariant waited for the gateway, apart from the kit's own time."""
    lines = [
        f"- **{r.invariant.id}**: {r.waits} wait(s), {r.waited_s:.1f} s of {r.seconds:.1f} s"
        for r in results
        if r.waits
    ]
    if not lines:
        return []
    return ["", "## Waiting for the gateway", "", f"{waiting_line(results)}.", "", *lines]


def _warnings_section(results: list[Result]) -> list[str]:
    """The warnings raised while each property ran (kept off the terminal), each once."""
    lines = [f"- **{r.invariant.id}**: {_cell(w)}" for r in results for w in r.warnings]
    return ["", "## Warnings while the properties ran", "", *lines] if lines else []


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _case_for(saved: list[Path], failures: list[Failure], number: int) -> Path | None:
    """The case file saved for failure ``number`` (failures without a case have no file)."""
    with_case = [i for i, f in enumerate(failures, start=1) if f.case is not None]
    return saved[with_case.index(number)] if number in with_case and len(saved) == len(with_case) else None


def _json(value: Any, limit: int = 20000) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"

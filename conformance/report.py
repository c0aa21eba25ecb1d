"""Run reports: the per-invariant summary lines, JUnit XML, and a Markdown report with, for
each failure, the statement, the minimal counterexample, what the target saw, and the command
that replays exactly that case."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from conformance.cases import CaseFile, write_case
from conformance.runner import Result, Status


def summary_line(result: Result) -> str:
    inv = result.invariant
    figures = f"{result.examples:>4} ex {result.seconds:6.2f}s" if result.examples else " " * 14
    return f"{inv.id:<8} {result.status.value:<20} {figures}  {inv.statement[:70]}"


def replay_command(case_path: Path, target: str | None) -> str:
    parts = ["cascade-conformance", "replay", str(case_path)]
    if target:
        parts += ["--target", target]
    return shlex.join(parts)


def save_failure_cases(results: list[Result], report_dir: Path, target_description: str) -> dict[str, Path]:
    saved = {}
    for result in results:
        if result.case is not None and result.status in (Status.FAIL, Status.KNOWN_FAILURE):
            path = report_dir / "cases" / f"{result.invariant.id.lower()}.json"
            saved[result.invariant.id] = write_case(
                path, CaseFile(result.invariant.id, result.case, target_description, result.message)
            )
    return saved


def write_junit(results: list[Result], path: Path, target_description: str) -> Path:
    failures = sum(1 for r in results if not r.status.ok)
    skipped = sum(1 for r in results if r.status in (Status.NOT_CHECKABLE, Status.KNOWN_FAILURE))
    suite = ET.Element(
        "testsuite",
        name="cascade-conformance",
        tests=str(len(results)),
        failures=str(failures),
        errors="0",
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
        if result.status == Status.FAIL or result.status == Status.UNEXPECTED_PASS:
            failure = ET.SubElement(case, "failure", message=result.message.splitlines()[0] if result.message else "")
            failure.text = result.message + ("\n\ncase:\n" + json.dumps(result.case, indent=2) if result.case else "")
        elif result.status in (Status.NOT_CHECKABLE, Status.KNOWN_FAILURE):
            ET.SubElement(case, "skipped", message=f"{result.status.value}: {result.message}")
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path


def write_markdown(
    results: list[Result], path: Path, target_description: str, target_spec: str | None, cases: dict[str, Path]
) -> Path:
    lines = [
        "# Conformance report",
        "",
        f"Target: `{target_description}`",
        "",
        "| invariant | result | examples | seconds |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r.invariant.id} | {r.status.value} | {r.examples} | {r.seconds:.2f} |" for r in results]
    for result in results:
        if result.status.ok and result.status != Status.KNOWN_FAILURE:
            continue
        inv = result.invariant
        lines += ["", f"## {inv.id}: {result.status.value}", "", f"> {inv.statement}", "", "```", result.message, "```"]
        if result.case is not None:
            lines += ["", "Minimal counterexample:", "", "```json", _json(result.case), "```"]
        if result.evidence:
            lines += ["", "What the target saw (decoded):", "", "```json", _json(result.evidence), "```"]
        if inv.id in cases:
            lines += ["", "Replay exactly this case:", "", "```", replay_command(cases[inv.id], target_spec), "```"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _json(value: Any, limit: int = 20000) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"

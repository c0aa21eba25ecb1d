"""The kill matrix: invariant ID -> mutations -> the tests that killed them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mutations.conformance_share import ConformanceVerdict
from mutations.runner import Verdict
from mutations.spec import Spec

_MARKER = re.compile(r"""invariant\(\s*["']([A-Z]+-[0-9]+)["']\s*\)""")


def invariants_with_tests(root: Path) -> set[str]:
    """Invariant IDs that some test under ``tests/`` is marked with."""
    found: set[str] = set()
    for path in (root / "tests").rglob("*.py"):
        found.update(_MARKER.findall(path.read_text(encoding="utf-8")))
    return found


def coverage_problems(specs: list[Spec], catalogue: set[str], tested: set[str]) -> list[str]:
    """An invariant with no mutation, or a mutation pinning an invariant no test states, is an error."""
    pinned = {inv for spec in specs for m in spec.mutations for inv in m.invariants}
    problems = [f"invariant {inv} has no mutation in any spec" for inv in sorted(catalogue - pinned)]
    problems += [
        f"invariant {inv} is pinned by a mutation but no test is marked with it" for inv in sorted(pinned - tested)
    ]
    return problems


def kill_matrix(
    verdicts: list[Verdict], conformance: list[ConformanceVerdict] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Per invariant, each mutation's verdict; ``conformance`` (engine mutations judged by the conformance
    suite) adds, per mutation, that suite's verdict: ``caught``, ``blind`` (documented) or ``missed``."""
    by_conformance = {(c.spec.path.name, c.mutation.name): c for c in conformance or []}
    matrix: dict[str, list[dict[str, Any]]] = {}
    for v in verdicts:
        judged = by_conformance.get((v.spec.path.name, v.mutation.name))
        for inv in v.mutation.invariants:
            matrix.setdefault(inv, []).append(
                {
                    "mutation": v.mutation.name,
                    "spec": v.spec.path.name,
                    "caught": v.caught,
                    "expected_caught": v.mutation.expect_caught,
                    "behaved": v.behaved,
                    "killed_by": v.failing,
                    "first_killer": v.first_killer,
                    "conformance": None if judged is None else _conformance_word(judged),
                }
            )
    return dict(sorted(matrix.items()))


def _conformance_word(judged: ConformanceVerdict) -> str:
    return "caught" if judged.caught else "blind" if judged.mutation.conformance_blind else "missed"


def render_markdown(matrix: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        "# Kill matrix",
        "",
        "A run stopped at its first killing test (`--exitfirst`) names that test only: *(first killer)*.",
        "",
        "The conformance column is `cascade-conformance run --only` on the mutated reference (engine mutations).",
        "",
        "| invariant | mutation | verdict | killed by (or first killer) | conformance |",
        "|---|---|---|---|---|",
    ]
    for inv, rows in matrix.items():
        for row in rows:
            verdict = ("CAUGHT" if row["caught"] else "SURVIVED") + ("" if row["behaved"] else " (unexpected)")
            killers = "<br>".join(f"`{t}`" for t in row["killed_by"][:6]) or "-"
            if row.get("first_killer"):
                killers += " *(first killer)*"
            lines.append(f"| {inv} | `{row['mutation']}` | {verdict} | {killers} | {row.get('conformance') or '-'} |")
    return "\n".join(lines) + "\n"


def write_report(matrix: dict[str, list[dict[str, Any]]], report_dir: Path) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    as_json = report_dir / "kill-matrix.json"
    as_md = report_dir / "kill-matrix.md"
    as_json.write_text(json.dumps(matrix, indent=2) + "\n", encoding="utf-8")
    as_md.write_text(render_markdown(matrix), encoding="utf-8")
    return [as_json, as_md]

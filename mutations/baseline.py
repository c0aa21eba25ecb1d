"""The cheap baseline guard: what a spec's test selection should pass, from collection alone.

``verify`` refuses a baseline whose pass count differs from ``expect_baseline_pass``, but only after
running every selected test. :func:`collect_selection` collects the same selection the same way
(``--collect-only``, static checks deselected) and counts the tests that will not pass because a
skip or xfail mark applies to them, so a stale count is caught in the normal suite in seconds.
What collection cannot see (a test that skips or xfails imperatively, a fixture that skips) still
shows up in ``verify``, which refuses skips outright.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mutations.runner import hermetic_env, pytest_args
from mutations.spec import Spec


class CollectError(RuntimeError):
    """The selection could not be collected cleanly; no count can be trusted."""


@dataclass(frozen=True)
class Selection:
    """A spec's selection as collected: node ID -> ``run``, ``xfail`` or ``skip``."""

    items: dict[str, str]

    def count(self, kind: str) -> int:
        return sum(1 for k in self.items.values() if k == kind)

    @property
    def expected_passes(self) -> int:
        """What a green baseline passes: every collected test but the xfail and skip ones."""
        return self.count("run")


def collect_selection(spec: Spec, root: Path, timeout_s: float = 300.0) -> Selection:
    """Collect ``spec``'s selection in ``root`` in a child pytest, as ``verify`` would select it."""
    return collect_selections([spec], root, timeout_s)[spec.path]


def collect_selections(specs: Sequence[Spec], root: Path, timeout_s: float = 300.0) -> dict[Path, Selection]:
    """Each spec's selection, collected in ``root`` as ``verify`` would select it: one child Python for
    all of them, one pytest session per spec (:mod:`mutations._collect_many`), so the test modules are
    imported once instead of once per spec."""
    with tempfile.TemporaryDirectory(prefix="cascade-mutations-collect-") as tmp:
        outs = [Path(tmp) / f"collected-{number}.json" for number in range(len(specs))]
        args = [pytest_args(spec.tests, "--collect-only", "-p", "mutations.plugins.collect") for spec in specs]
        jobs = [{"args": a, "out": str(out)} for a, out in zip(args, outs, strict=True)]
        listing = Path(tmp) / "jobs.json"
        listing.write_text(json.dumps(jobs), encoding="utf-8")
        command = [sys.executable, "-m", "mutations._collect_many", str(listing)]
        try:
            done = subprocess.run(
                command,
                cwd=root,
                env=hermetic_env(root, Path(tmp)),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            names = ", ".join(spec.path.name for spec in specs)
            raise CollectError(f"{names}: collecting the selection took over {timeout_s:.0f} s") from None
        tail = (done.stdout + done.stderr)[-2000:]
        return {spec.path: _read_selection(spec, out, tail) for spec, out in zip(specs, outs, strict=True)}


def _read_selection(spec: Spec, out: Path, tail: str) -> Selection:
    exit_file = out.with_name(out.name + ".exit")
    returncode = int(exit_file.read_text(encoding="utf-8")) if exit_file.is_file() else None
    if not out.is_file():
        raise CollectError(f"{spec.path.name}: collection wrote nothing (pytest exit {returncode}):\n{tail}")
    data = json.loads(out.read_text(encoding="utf-8"))
    if data["collect_errors"] or returncode != 0:
        raise CollectError(
            f"{spec.path.name}: the selection does not collect cleanly (pytest exit {returncode}, errors in "
            f"{data['collect_errors'][:4]}):\n{tail}"
        )
    items: dict[str, str] = data["items"]
    return Selection(items=items)


def baseline_problems(spec: Spec, selection: Selection) -> list[str]:
    """Why ``verify`` would refuse ``spec``'s baseline, as far as collection can tell."""
    problems: list[str] = []
    skipped = sorted(n for n, kind in selection.items.items() if kind == "skip")
    if skipped:
        problems.append(
            f"{spec.path.name}: {len(skipped)} selected tests carry a skip that applies ({skipped[:3]}); "
            "`cascade-mutations verify` refuses a baseline that skips: deselect them or lift the skip"
        )
    expected = selection.expected_passes
    if expected != spec.expect_baseline_pass:
        shown = spec.path.relative_to(Path.cwd()) if spec.path.is_relative_to(Path.cwd()) else spec.path
        problems.append(
            f"{spec.path.name}: expect_baseline_pass is {spec.expect_baseline_pass}, but its test selection "
            f"collects {len(selection.items)} tests ({selection.count('xfail')} xfail, {len(skipped)} skipped), "
            f"so a green baseline passes {expected} and `cascade-mutations verify` would refuse it (no verdict). "
            f"If the selection changed on purpose, set expect_baseline_pass to {expected} in {shown} and "
            f"confirm with `cascade-mutations verify {shown}`; otherwise find the test that went missing "
            "or appeared."
        )
    return problems

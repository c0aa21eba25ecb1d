"""Mutation spec files: loading, schema validation and the static checks that need no run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

SPEC_DIR = Path(__file__).resolve().parent

STATIC_CHECK_MARKER = "static_check"
"""The pytest marker of checks that read the repository instead of running its code: the specs'
anchors and counts, configuration, generated files. Such a check fails on any edit to a line it
reads, so under a mutation it would pass for a catch: mutation runs (``cascade-mutations`` and
mutmut) deselect it with ``-m "not static_check"``, and no spec may select a file holding one."""

_STATIC_CHECK_USE = re.compile(rf"\bmark\.{STATIC_CHECK_MARKER}\b")


class SpecError(ValueError):
    """A spec file is unreadable or does not match the schema."""


@dataclass(frozen=True)
class Mutation:
    name: str
    invariants: tuple[str, ...]
    file: str
    anchor: str
    replacement: str
    expect_caught: bool
    expect_failing: tuple[str, ...] = ()
    description: str = ""
    survivor_reason: str = ""
    conformance_blind: str = ""
    """Why ``cascade-conformance run`` (a black box) cannot catch this engine mutation; empty: it must."""


@dataclass(frozen=True)
class Spec:
    path: Path
    family: str
    tests: tuple[str, ...]
    expect_baseline_pass: int
    mutations: tuple[Mutation, ...]


def spec_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        resources.files("mutations").joinpath("spec.schema.json").read_text(encoding="utf-8")
    )
    return schema


def default_spec_paths() -> list[Path]:
    """Every spec shipped under ``mutations/specs/``, one per invariant family."""
    return sorted((SPEC_DIR / "specs").glob("*.json"))


def load_spec(path: Path) -> Spec:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    errors = sorted(jsonschema.Draft202012Validator(spec_schema()).iter_errors(document), key=lambda e: list(e.path))
    if errors:
        lines = [f"{path}: {len(errors)} problem(s):"]
        lines += [f"  at {'/'.join(map(str, e.absolute_path)) or '<top level>'}: {e.message}" for e in errors[:10]]
        raise SpecError("\n".join(lines))
    mutations = tuple(
        Mutation(
            name=m["name"],
            invariants=tuple(m["invariants"]),
            file=m["file"],
            anchor=m["anchor"],
            replacement=m["replacement"],
            expect_caught=m["expect_caught"],
            expect_failing=tuple(m.get("expect_failing", ())),
            description=m.get("description", ""),
            survivor_reason=m.get("survivor_reason", ""),
            conformance_blind=m.get("conformance_blind", ""),
        )
        for m in document["mutations"]
    )
    return Spec(
        path=path,
        family=document["family"],
        tests=tuple(document["tests"]),
        expect_baseline_pass=document["expect_baseline_pass"],
        mutations=mutations,
    )


def static_check_files(selected: str, root: Path) -> list[str]:
    """The Python files under a test selection entry (a file, a folder, or a node ID in a file) that
    apply the ``static_check`` marker (``pytest.mark.static_check`` written in the file itself)."""
    path = root / selected.split("::", 1)[0]
    if path.is_dir():
        candidates = sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    elif path.is_file():
        candidates = [path]
    else:
        return []
    return [
        p.relative_to(root).as_posix()
        for p in candidates
        if _STATIC_CHECK_USE.search(p.read_text(encoding="utf-8", errors="replace"))
    ]


def static_problems(spec: Spec, root: Path, known_invariants: set[str]) -> list[str]:
    """Everything wrong with ``spec`` that can be seen without running a test."""
    problems: list[str] = []
    names = [m.name for m in spec.mutations]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"mutation name {name!r} is used more than once")
    for test in spec.tests:
        test_file = test.split("::", 1)[0]
        if not (root / test_file).is_file() and ("::" in test or not (root / test_file).is_dir()):
            problems.append(f"test file {test_file} does not exist")
        static = static_check_files(test, root)
        if static:
            problems.append(
                f"the test selection {test!r} includes static checks ({', '.join(static[:3])}): a static check "
                "fails on any edit to a line it reads, so it would pass for a catch; select behavioural tests only "
                f"(static checks carry the {STATIC_CHECK_MARKER} marker and never run under a mutation)"
            )
    for m in spec.mutations:
        where = f"mutation {m.name!r}"
        if m.replacement == m.anchor:
            problems.append(f"{where}: replacement equals the anchor, so nothing would change")
        for inv in m.invariants:
            if inv not in known_invariants:
                problems.append(f"{where}: invariant {inv} is not in the catalogue")
            elif not inv.startswith(spec.family + "-"):
                problems.append(f"{where}: invariant {inv} belongs to another family than {spec.family}")
        if m.conformance_blind and not m.file.startswith("engine/"):
            problems.append(
                f"{where}: conformance_blind is for mutations of the reference engine (engine/), not {m.file}"
            )
        target = root / m.file
        if not target.is_file():
            problems.append(f"{where}: file {m.file} does not exist")
            continue
        hits = target.read_bytes().count(m.anchor.encode("utf-8"))
        if hits != 1:
            problems.append(f"{where}: the anchor occurs {hits} times in {m.file}; it must occur exactly once")
        for failing in m.expect_failing:
            if not any(failing.startswith(t) or t.startswith(failing.split("::", 1)[0]) for t in spec.tests):
                problems.append(f"{where}: expect_failing {failing!r} is outside the spec's tests")
    return problems

"""Mutation specs for throw-away toy trees, shared by the meta-tests of the mutation runner and of
the baseline guard (tests/mutations/)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def toy_mutation(name: str, anchor: str, replacement: str, caught: bool = True, **extra: Any) -> dict[str, Any]:
    """A WIRE-1 mutation of ``fakels/toy.py``; a survivor gets a documented reason."""
    item = {
        "name": name,
        "invariants": ["WIRE-1"],
        "file": "fakels/toy.py",
        "anchor": anchor,
        "replacement": replacement,
        "expect_caught": caught,
        **extra,
    }
    if not caught:
        item["survivor_reason"] = "describe() is only smoke-tested here; the premise is documented in the test."
    return item


TOY_PYTEST_INI = "[pytest]\naddopts = -p no:hypothesispytest\n"


def write_toy_spec(
    root: Path,
    mutations: list[dict[str, Any]],
    baseline: int,
    tests: tuple[str, ...] = ("tests/test_toy.py",),
    name: str = "spec.json",
) -> Path:
    """``root/<name>``: a WIRE spec selecting ``tests`` that expects ``baseline`` passes."""
    spec = {
        "schema": 1,
        "family": "WIRE",
        "tests": list(tests),
        "expect_baseline_pass": baseline,
        "mutations": mutations,
    }
    path = root / name
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def commit_toy_repo(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> text) under ``root`` and commit everything there in a new repository.

    The toy project has no Hypothesis tests, so its ``pytest.ini`` (unless ``files`` brings one) turns
    Hypothesis's pytest plugin off: that plugin imports Hypothesis at the end of every session, over a
    second of each of the many runs these tests make."""
    files = {"pytest.ini": TOY_PYTEST_INI, **files}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy"],
    ):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)
    return root

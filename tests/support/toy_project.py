"""The toy project of the mutation runner's meta-tests (tests/mutations/): one base tree, ``fakels/toy.py``
with ``add`` and ``describe`` and ``tests/test_toy.py`` testing them, that each test module extends with
its own hooks (more functions, tests, a conftest, a stand-in CLI), and the WIRE specs that mutate it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TOY_MODULE = """def add(a, b):
    return a + b


def describe(n):
    return "even" if n % 2 == 0 else "odd"
"""

TOY_TESTS = """from fakels.toy import add, describe


def test_adds():
    assert add(2, 3) == 5


def test_adds_negatives():
    assert add(-2, -3) == -5


def test_describe_runs():
    assert describe(3) in ("even", "odd")
"""

# The base module's mutation anchors: add()'s sum (with the mutation that fails test_adds) and describe()'s test.
ADD_SUBTRACTS = ("return a + b", "return a - b")
DESCRIBE = '"even" if n % 2 == 0 else "odd"'

TOY_PYTEST_INI = "[pytest]\naddopts = -p no:hypothesispytest\n"


def toy_files(module: str = TOY_MODULE, tests: str | None = TOY_TESTS, package: str = "fakels") -> dict[str, str]:
    """The base tree (relative path -> text): ``<package>/toy.py`` holding ``module``, and ``tests/test_toy.py``
    holding ``tests`` unless that is None."""
    files = {f"{package}/__init__.py": "", f"{package}/toy.py": module}
    if tests is not None:
        files["tests/test_toy.py"] = tests
    return files


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


def write_toy_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> text) under ``root``.

    The toy project has no Hypothesis tests, so its ``pytest.ini`` (unless ``files`` brings one) turns
    Hypothesis's pytest plugin off: that plugin imports Hypothesis at the end of every session, over a
    second of each of the many runs these tests make."""
    for relative, text in {"pytest.ini": TOY_PYTEST_INI, **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def commit_toy_repo(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` under ``root`` (as :func:`write_toy_tree`) and commit everything there in a new repository."""
    write_toy_tree(root, files)
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy"],
    ):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)
    return root


def toy_repo(
    root: Path,
    mutations: list[dict[str, Any]],
    baseline: int,
    *,
    module: str = TOY_MODULE,
    tests: str = TOY_TESTS,
    more: Mapping[str, str] | None = None,
    package: str = "fakels",
) -> Path:
    """A new committed repository at ``root``: the base tree (:func:`toy_files`) with ``module`` and ``tests``,
    the files of ``more``, and ``spec.json`` with ``mutations`` expecting ``baseline`` passes of tests/test_toy.py."""
    root.mkdir()
    write_toy_spec(root, mutations, baseline)
    return commit_toy_repo(root, toy_files(module, tests, package) | dict(more or {}))

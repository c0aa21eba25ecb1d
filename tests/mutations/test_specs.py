"""Static checks of every mutation spec, in the normal suite: schema, anchors that occur exactly
once, files and tests that exist, selections without static checks, replacements that change
something, and coverage: every invariant with a test is pinned by a mutation and every pinned
invariant has a test. Marked static_check: every test here reads the real specs or the tree, so any
edit to an anchored line fails them; mutation runs never count them. The unit tests of the checker
itself, on synthetic specs, are in test_spec_checker.py and test_baseline_guard.py, unmarked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE
from conformance.properties import properties
from mutations.matrix import coverage_problems, invariants_with_tests
from mutations.spec import STATIC_CHECK_MARKER, default_spec_paths, load_spec, static_check_files, static_problems

ROOT = Path(__file__).resolve().parents[2]
SPECS = default_spec_paths()
CHECKER_UNIT_TESTS = ("tests/mutations/test_spec_checker.py", "tests/mutations/test_baseline_guard.py")

pytestmark = pytest.mark.static_check


def test_there_is_a_spec_per_family() -> None:
    families = {load_spec(p).family for p in SPECS}
    assert families == {prop.invariant.family for prop in properties().values()}  # implemented families


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_spec_has_no_static_problem(path: Path) -> None:
    assert static_problems(load_spec(path), ROOT, set(CATALOGUE)) == []


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_every_seed_defect_is_expected_caught_or_documented(path: Path) -> None:
    for mutation in load_spec(path).mutations:
        assert mutation.expect_caught or len(mutation.survivor_reason) >= 20, mutation.name


def test_every_invariant_is_pinned_and_every_pin_has_a_test() -> None:
    specs = [load_spec(p) for p in SPECS]
    assert coverage_problems(specs, set(properties()), invariants_with_tests(ROOT)) == []  # implemented ones


def test_the_checkers_own_unit_tests_are_no_static_checks() -> None:
    """They build their specs and trees in tmp_path: marking them would leave the checker untested under
    every mutation run. The marker's text in the file is what a spec's selection is refused for, and
    the collected marks (however applied) are what ``-m "not static_check"`` deselects."""
    for module in CHECKER_UNIT_TESTS:
        assert (ROOT / module).is_file(), module
        assert static_check_files(module, ROOT) == [], f"{module} applies the {STATIC_CHECK_MARKER} marker"
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    marked = subprocess.run(
        [*collect, "-m", STATIC_CHECK_MARKER, *CHECKER_UNIT_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert marked.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, f"marked {STATIC_CHECK_MARKER}:\n{marked.stdout}"
    assert "deselected" in marked.stdout, marked.stdout + marked.stderr

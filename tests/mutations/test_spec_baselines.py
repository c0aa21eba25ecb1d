"""The cheap guard against a stale ``expect_baseline_pass``, applied to the real specs: each spec's
selection is collected (not run) the way ``cascade-mutations verify`` selects it, and the tests that
will pass (every collected test but those a skip or xfail mark applies to) must number exactly what
the spec expects. Marked static_check: every test here reads the repository's specs, so it is never
evidence for a mutation. The guard's own unit tests, on toy trees, are in test_baseline_guard.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutations.baseline import Selection, baseline_problems, collect_selections
from mutations.spec import default_spec_paths, load_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = default_spec_paths()

pytestmark = pytest.mark.static_check


@pytest.fixture(scope="module")
def selections() -> dict[Path, Selection]:
    """Every spec's selection, collected in one child Python (the modules imported once)."""
    return collect_selections([load_spec(path) for path in SPECS], ROOT)


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_expected_baseline_matches_the_collected_selection(path: Path, selections: dict[Path, Selection]) -> None:
    spec = load_spec(path)
    problems = baseline_problems(spec, selections[spec.path])
    assert not problems, "\n".join(problems)

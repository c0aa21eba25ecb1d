"""Static checks of every mutation spec, in the normal suite: schema, anchors that occur exactly
once, files and tests that exist, selections without static checks, replacements that change
something, and coverage: every invariant with a test is pinned by a mutation and every pinned
invariant has a test. Marked static_check: they read the specs and the tree, so any edit to an
anchored line fails them; mutation runs never count them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE
from conformance.properties import properties
from mutations.matrix import coverage_problems, invariants_with_tests
from mutations.spec import STATIC_CHECK_MARKER, SpecError, default_spec_paths, load_spec, static_problems

ROOT = Path(__file__).resolve().parents[2]
SPECS = default_spec_paths()

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


def test_the_schema_rejects_what_it_should(tmp_path: Path) -> None:
    good = json.loads(SPECS[0].read_text(encoding="utf-8"))
    cases = {
        "unknown key": {**good, "extra": 1},
        "survivor without reason": {**good, "mutations": [{**good["mutations"][0], "expect_caught": False}]},
        "reason on a caught one": {**good, "mutations": [{**good["mutations"][0], "survivor_reason": "x" * 30}]},
        "string boolean": {**good, "mutations": [{**good["mutations"][0], "expect_caught": "true"}]},
        "option-like test": {**good, "tests": ["-p no:x"]},
    }
    for name, document in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(SpecError):
            load_spec(path)


def test_static_problems_are_found(tmp_path: Path) -> None:
    spec = load_spec(SPECS[0])
    broken = spec.mutations[0]
    twice = replace(spec, mutations=(broken, replace(broken, anchor="import", replacement="x"), broken))
    problems = static_problems(twice, ROOT, set(CATALOGUE))
    assert any("used more than once" in p for p in problems)
    assert any("occurs" in p and "exactly once" in p for p in problems)
    unknown = replace(spec, mutations=(replace(broken, invariants=("WIRE-99",)),))
    assert any("not in the catalogue" in p for p in static_problems(unknown, ROOT, set(CATALOGUE)))
    same = replace(spec, mutations=(replace(broken, replacement=broken.anchor),))
    assert any("replacement equals the anchor" in p for p in static_problems(same, ROOT, set(CATALOGUE)))


@pytest.mark.parametrize(
    "selected", ["tests/mutations/test_specs.py", "tests/mutations/test_specs.py::test_there_is_a_spec_per_family"]
)
def test_a_selection_holding_static_checks_is_a_static_problem(selected: str) -> None:
    spec = load_spec(SPECS[0])
    problems = static_problems(replace(spec, tests=(*spec.tests, selected)), ROOT, set(CATALOGUE))
    assert [p for p in problems if "static checks" in p] == [
        f"the test selection {selected!r} includes static checks (tests/mutations/test_specs.py): a static check "
        "fails on any edit to a line it reads, so it would pass for a catch; select behavioural tests only "
        f"(static checks carry the {STATIC_CHECK_MARKER} marker and never run under a mutation)"
    ]

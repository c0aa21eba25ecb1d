"""Unit tests of the spec loader and the static checker (mutations/spec.py) on synthetic specs and a
tiny tree in tmp_path. They read nothing of the repository, so they are no static checks: mutation
runs keep them and a spec may select them (tests/mutations/test_specs.py pins that)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mutations.spec import STATIC_CHECK_MARKER, Spec, SpecError, load_spec, static_check_files, static_problems
from tests.support.toy_project import DESCRIBE, TOY_MODULE, toy_files, toy_mutation, write_toy_spec, write_toy_tree

KNOWN = {"WIRE-1", "WIRE-2", "SO-1"}

# The base module with two imports: an anchor that occurs twice.
IMPORTING_TOY = "import json\nimport sys\n\n\n" + TOY_MODULE

BEHAVIOURAL_TESTS = """from fakels.toy import describe


def test_describe():
    assert describe(3) == "odd"
"""

# Written through the constant so that this file itself never holds the marker's text.
STATIC_TESTS = f"""import pytest


@pytest.mark.{STATIC_CHECK_MARKER}
def test_reads_the_tree():
    assert "odd" in open("fakels/toy.py").read()
"""

ODD_IS_EVEN = toy_mutation("odd-is-even", DESCRIBE, '"even"', expect_failing=["tests/test_toy.py::test_describe"])


def _toy_tree(root: Path) -> Path:
    """``root`` with a module to mutate, a behavioural test of it and a static check reading it."""
    more = {
        "tests/test_static.py": STATIC_TESTS,
        "tests/__pycache__/test_stale.py": STATIC_TESTS,  # never a selection: caches are skipped
    }
    return write_toy_tree(root, toy_files(IMPORTING_TOY, BEHAVIOURAL_TESTS) | more)


def _toy_spec(root: Path) -> Spec:
    """A spec of the toy tree with no static problem."""
    return load_spec(write_toy_spec(_toy_tree(root), [ODD_IS_EVEN], baseline=1))


def test_the_schema_rejects_what_it_should(tmp_path: Path) -> None:
    good_path = write_toy_spec(tmp_path, [ODD_IS_EVEN], baseline=1, name="good.json")
    assert load_spec(good_path).mutations[0].name == "odd-is-even"  # each case below breaks one thing only
    good = json.loads(good_path.read_text(encoding="utf-8"))
    cases = {
        "unknown key": {**good, "extra": 1},
        "survivor without reason": {**good, "mutations": [{**good["mutations"][0], "expect_caught": False}]},
        "reason on a caught one": {**good, "mutations": [{**good["mutations"][0], "survivor_reason": "x" * 30}]},
        "string boolean": {**good, "mutations": [{**good["mutations"][0], "expect_caught": "true"}]},
        "blind without a reason": {**good, "mutations": [{**good["mutations"][0], "conformance_blind": "short"}]},
        "option-like test": {**good, "tests": ["-p no:x"]},
    }
    for name, document in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(SpecError):
            load_spec(path)


def test_an_unreadable_or_malformed_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.json: cannot read: No such file or directory"):
        load_spec(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(SpecError, match=r"broken\.json: not valid JSON: Expecting property name .* at line 1"):
        load_spec(tmp_path / "broken.json")


def test_static_problems_are_found(tmp_path: Path) -> None:
    spec = _toy_spec(tmp_path)
    assert static_problems(spec, tmp_path, KNOWN) == []
    broken = spec.mutations[0]
    twice = replace(spec, mutations=(broken, replace(broken, anchor="import", replacement="x"), broken))
    assert static_problems(twice, tmp_path, KNOWN) == [
        "mutation name 'odd-is-even' is used more than once",
        "mutation 'odd-is-even': the anchor occurs 2 times in fakels/toy.py; it must occur exactly once",
    ]
    unknown = replace(spec, mutations=(replace(broken, invariants=("WIRE-99",)),))
    assert static_problems(unknown, tmp_path, KNOWN) == [
        "mutation 'odd-is-even': invariant WIRE-99 is not in the catalogue"
    ]
    same = replace(spec, mutations=(replace(broken, replacement=broken.anchor),))
    assert static_problems(same, tmp_path, KNOWN) == [
        "mutation 'odd-is-even': replacement equals the anchor, so nothing would change"
    ]


@pytest.mark.parametrize(
    ("spec_change", "mutation_change", "problem"),
    [
        ({"tests": ("tests/test_toy.py", "tests/test_gone.py")}, {}, "test file tests/test_gone.py does not exist"),
        ({}, {"invariants": ("SO-1",)}, "mutation 'odd-is-even': invariant SO-1 belongs to another family than WIRE"),
        ({}, {"file": "fakels/gone.py"}, "mutation 'odd-is-even': file fakels/gone.py does not exist"),
        (
            {},
            {"anchor": "absent", "replacement": "x"},
            "mutation 'odd-is-even': the anchor occurs 0 times in fakels/toy.py; it must occur exactly once",
        ),
        (
            {},
            {"expect_failing": ("tests/test_other.py::test_describe",)},
            "mutation 'odd-is-even': expect_failing 'tests/test_other.py::test_describe' is outside the spec's tests",
        ),
        (
            {},
            {"conformance_blind": "a black box cannot see the fake's own code"},
            "mutation 'odd-is-even': conformance_blind is for mutations of the reference engine (engine/), not "
            "fakels/toy.py",
        ),
    ],
    ids=[
        "missing-test-file",
        "other-family",
        "missing-file",
        "absent-anchor",
        "expect-failing-outside",
        "blind-fakels",
    ],
)
def test_each_other_static_problem_is_named(
    tmp_path: Path, spec_change: dict[str, Any], mutation_change: dict[str, Any], problem: str
) -> None:
    spec = _toy_spec(tmp_path)
    changed = replace(spec, mutations=(replace(spec.mutations[0], **mutation_change),), **spec_change)
    assert static_problems(changed, tmp_path, KNOWN) == [problem]


@pytest.mark.parametrize(
    ("selected", "found"),
    [
        ("tests/test_static.py", ["tests/test_static.py"]),
        ("tests/test_static.py::test_reads_the_tree", ["tests/test_static.py"]),
        ("tests", ["tests/test_static.py"]),
        ("tests/test_toy.py", []),
        ("tests/test_gone.py", []),
    ],
)
def test_static_check_files_finds_the_files_applying_the_marker(
    tmp_path: Path, selected: str, found: list[str]
) -> None:
    assert static_check_files(selected, _toy_tree(tmp_path)) == found


@pytest.mark.parametrize("selected", ["tests/test_static.py", "tests/test_static.py::test_reads_the_tree"])
def test_a_selection_holding_static_checks_is_a_static_problem(tmp_path: Path, selected: str) -> None:
    spec = _toy_spec(tmp_path)
    problems = static_problems(replace(spec, tests=(*spec.tests, selected)), tmp_path, KNOWN)
    assert [p for p in problems if "static checks" in p] == [
        f"the test selection {selected!r} includes static checks (tests/test_static.py): a static check "
        "fails on any edit to a line it reads, so it would pass for a catch; select behavioural tests only "
        f"(static checks carry the {STATIC_CHECK_MARKER} marker and never run under a mutation)"
    ]

"""Unit tests of the baseline guard (mutations/baseline.py) on toy trees in tmp_path: what a
selection collects, which tests xfail or skip marks take out of the expected passes, and how a stale
``expect_baseline_pass`` is reported. They read nothing of the repository, so they are no static
checks (the guard applied to the real specs is test_spec_baselines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutations.baseline import CollectError, Selection, baseline_problems, collect_selection, collect_selections
from mutations.spec import STATIC_CHECK_MARKER, Spec, load_spec
from tests.support.toy_project import toy_mutation, write_toy_spec, write_toy_tree

MARKED_TESTS = f"""import sys

import pytest


def test_plain():
    pass


@pytest.mark.xfail(reason="a documented gap")
def test_gap():
    assert False


@pytest.mark.xfail(False, reason="the condition does not hold here")
def test_conditional_xfail_that_does_not_apply():
    pass


@pytest.mark.xfail("sys.platform == 'no-such-platform'", reason="a string condition")
def test_string_condition_that_does_not_apply():
    pass


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.xfail(reason="two is a gap")), 3])
def test_parametrized(n):
    assert n != 2


@pytest.mark.xfail(reason="the whole class is a gap")
class TestGaps:
    def test_one(self):
        assert False

    def test_two(self):
        assert False


@pytest.mark.{STATIC_CHECK_MARKER}
def test_reads_the_tree():
    pass
"""

SKIPPING = """import pytest


@pytest.mark.skipif(True, reason="never here")
def test_skipped():
    pass


def test_runs():
    pass
"""


def _toy(tmp_path: Path, expected: int, tests: str = MARKED_TESTS) -> Spec:
    write_toy_tree(tmp_path, {"tests/test_toy.py": tests})
    write_toy_spec(tmp_path, [toy_mutation("m", "a", "b")], expected)
    return load_spec(tmp_path / "spec.json")


def test_xfails_and_static_checks_are_counted_exactly(tmp_path: Path) -> None:
    spec = _toy(tmp_path, expected=5)
    selection = collect_selection(spec, tmp_path)
    assert (len(selection.items), selection.count("xfail"), selection.count("skip")) == (9, 4, 0)
    assert sorted(n.split("::", 1)[1] for n, kind in selection.items.items() if kind == "xfail") == [
        "TestGaps::test_one",
        "TestGaps::test_two",
        "test_gap",
        "test_parametrized[2]",
    ]
    assert not any("test_reads_the_tree" in n for n in selection.items), "static checks are deselected"
    assert baseline_problems(spec, selection) == []


@pytest.mark.parametrize("stale", [4, 6])
def test_a_stale_count_names_the_spec_both_numbers_and_the_fix(tmp_path: Path, stale: int) -> None:
    spec = _toy(tmp_path, expected=stale)
    (problem,) = baseline_problems(spec, collect_selection(spec, tmp_path))
    assert problem.startswith(f"spec.json: expect_baseline_pass is {stale}, but its test selection collects 9 tests")
    assert "(4 xfail, 0 skipped), so a green baseline passes 5" in problem
    assert "set expect_baseline_pass to 5 in" in problem
    assert "cascade-mutations verify" in problem


def test_a_skip_that_applies_is_reported(tmp_path: Path) -> None:
    spec = _toy(tmp_path, expected=1, tests=SKIPPING)
    (problem,) = baseline_problems(spec, collect_selection(spec, tmp_path))
    assert "1 selected tests carry a skip that applies" in problem
    assert "refuses a baseline that skips" in problem


def test_a_selection_that_does_not_collect_gives_no_count(tmp_path: Path) -> None:
    spec = _toy(tmp_path, expected=1, tests="import no_such_module_anywhere\n")
    with pytest.raises(CollectError, match="does not collect cleanly"):
        collect_selection(spec, tmp_path)


def test_selection_counts() -> None:
    selection = Selection(items={"a": "run", "b": "xfail", "c": "skip", "d": "run"})
    assert (selection.expected_passes, selection.count("xfail"), selection.count("skip")) == (2, 1, 1)


def test_specs_collected_in_one_process_select_what_each_selects_alone(tmp_path: Path) -> None:
    """The shared child Python is no shortcut: each later session collects afresh from the modules the
    first one imported, its own selection only, its marks evaluated again."""
    write_toy_tree(tmp_path, {"tests/test_toy.py": MARKED_TESTS, "tests/test_other.py": SKIPPING})
    whole = load_spec(write_toy_spec(tmp_path, [toy_mutation("m", "a", "b")], 5, name="whole.json"))
    some = load_spec(
        write_toy_spec(
            tmp_path,
            [toy_mutation("m", "a", "b")],
            1,
            tests=("tests/test_toy.py::test_parametrized", "tests/test_other.py"),
            name="some.json",
        )
    )
    together = collect_selections([whole, some], tmp_path)
    alone = {spec.path: collect_selection(spec, tmp_path) for spec in (whole, some)}
    assert together == alone
    assert sorted(together[some.path].items.values()) == ["run", "run", "run", "skip", "xfail"]

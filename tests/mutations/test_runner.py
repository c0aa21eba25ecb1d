"""Meta-tests of the mutation runner on a tiny throw-away repository: it catches, it honours
documented survivors, and it refuses to give a verdict on untrustworthy evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mutations.cli import main as cascade_mutations
from mutations.runner import EXIT_NO_VERDICT, NoVerdict, verify
from mutations.spec import STATIC_CHECK_MARKER, load_spec
from tests.support.toy_project import TOY_MODULE, TOY_TESTS, toy_mutation, toy_repo

XFAIL_TEST = """

import pytest


@pytest.mark.xfail(reason="a documented gap", strict=False)
def test_gap():
    assert add(1, 1) == 3
"""

KNOWN = {"WIRE-1", "WIRE-2"}


def _repo(tmp_path: Path, mutations: list[dict[str, Any]], baseline: int = 3, tests: str = TOY_TESTS) -> Path:
    return toy_repo(tmp_path / "toy", mutations, baseline, tests=tests)


def _verify(root: Path, **kwargs: Any) -> Any:
    return verify([load_spec(root / "spec.json")], root, KNOWN, say=lambda _line: None, **kwargs)


def test_caught_and_documented_survivor_both_behave(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        [
            toy_mutation(
                "add-subtracts", "return a + b", "return a - b", expect_failing=["tests/test_toy.py::test_adds"]
            ),
            toy_mutation("describe-always-even", '"even" if n % 2 == 0 else "odd"', '"even"', caught=False),
        ],
    )
    outcome = _verify(root)
    assert [(v.mutation.name, v.caught, v.behaved) for v in outcome.verdicts] == [
        ("add-subtracts", True, True),
        ("describe-always-even", False, True),
    ]
    assert outcome.verdicts[0].failing == ["tests/test_toy.py::test_adds", "tests/test_toy.py::test_adds_negatives"]
    assert (root / "fakels" / "toy.py").read_text(encoding="utf-8") == TOY_MODULE, (
        "the user's tree must never be touched"
    )


def test_a_survivor_that_should_be_caught_misbehaves(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("describe-always-odd", '"even" if n % 2 == 0 else "odd"', '"odd"')])
    outcome = _verify(root)
    assert [v.behaved for v in outcome.verdicts] == [False]
    assert outcome.misbehaved[0].why == "expected CAUGHT, got SURVIVED"


def test_caught_by_the_wrong_tests_misbehaves(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        [
            toy_mutation(
                "add-subtracts", "return a + b", "return a - b", expect_failing=["tests/test_toy.py::test_describe"]
            ),
        ],
    )
    assert "by none of the expected tests" in _verify(root).misbehaved[0].why


def test_stops_at_the_first_misbehaving_mutation_unless_keep_going(tmp_path: Path) -> None:
    mutations = [
        toy_mutation("describe-always-odd", '"even" if n % 2 == 0 else "odd"', '"odd"'),
        toy_mutation("add-subtracts", "return a + b", "return a - b"),
    ]
    root = _repo(tmp_path, mutations)
    assert len(_verify(root).verdicts) == 1
    assert len(_verify(root, keep_going=True).verdicts) == 2


def test_refuses_a_dirty_tree(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")])
    (root / "fakels" / "toy.py").write_text(TOY_MODULE + "\n# edited\n", encoding="utf-8")
    with pytest.raises(NoVerdict, match="uncommitted changes"):
        _verify(root)


def test_refuses_a_miscounted_baseline(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")], baseline=4)
    with pytest.raises(NoVerdict, match="passed 3 tests but the spec expects 4"):
        _verify(root)


def test_refuses_a_baseline_with_more_passes_than_expected(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")], baseline=2)
    with pytest.raises(NoVerdict, match="passed 3 tests but the spec expects 2"):
        _verify(root)


def test_refuses_a_red_baseline(tmp_path: Path) -> None:
    red = TOY_TESTS + "\n\ndef test_red():\n    assert add(1, 1) == 3\n"
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")], tests=red)
    with pytest.raises(NoVerdict, match="the baseline is red"):
        _verify(root)


def test_a_mutation_that_breaks_collection_is_no_verdict(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("syntax-error", "return a + b", "return a +")])
    with pytest.raises(NoVerdict, match="had collection errors"):
        _verify(root)


def test_refuses_an_anchor_that_is_not_there(tmp_path: Path) -> None:
    root = _repo(tmp_path, [toy_mutation("nowhere", "return a * b", "return a - b")])
    with pytest.raises(NoVerdict, match="occurs 0 times"):
        _verify(root)


def test_a_test_reaching_beyond_loopback_is_no_verdict(tmp_path: Path) -> None:
    net = (
        TOY_TESTS
        + "\n\ndef test_net():\n    import socket\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
    )
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")], tests=net, baseline=4)
    with pytest.raises(NoVerdict, match="tried to reach the network beyond loopback"):
        _verify(root)


def test_expected_failures_are_neither_counted_nor_a_verdict(tmp_path: Path) -> None:
    xfail = TOY_TESTS + XFAIL_TEST
    root = _repo(tmp_path, [toy_mutation("add-subtracts", "return a + b", "return a - b")], tests=xfail)
    outcome = _verify(root)
    assert [(v.caught, v.behaved) for v in outcome.verdicts] == [(True, True)]
    assert "tests/test_toy.py::test_gap" not in outcome.verdicts[0].failing


# A mutation that makes a selected test skip or error proves nothing about that test: no verdict,
# never CAUGHT, even when other tests fail. Each toy suite is green unmutated; "describe-always-odd"
# and "add-subtracts" break describe() and add().

SKIPS_IN_CALL = """

import pytest


def test_describe_even():
    if describe(2) != "even":
        pytest.skip("describe() looks broken, so this test steps aside")
    assert describe(2) == "even"
"""

SKIPS_IN_SETUP = """

import pytest


@pytest.fixture
def even_two():
    if describe(2) != "even":
        pytest.skip("describe() looks broken, so the fixture steps aside")
    return 2


def test_describe_even(even_two):
    assert describe(even_two) == "even"
"""

ERRORS_IN_SETUP = """

import pytest


@pytest.fixture
def checked_add():
    assert add(1, 1) == 2, "the fixture checks add() before handing it out"
    return add


def test_with_checked_add(checked_add):
    assert checked_add(0, 0) == 0
"""

FAILS_AND_ERRORS_IN_TEARDOWN = """

import pytest


@pytest.fixture
def adder():
    yield add
    assert add(1, 1) == 2, "the teardown checks add() again"


def test_with_adder(adder):
    assert adder(2, 3) == 5
"""

DESCRIBE_ALWAYS_ODD = ("describe-always-odd", '"even" if n % 2 == 0 else "odd"', '"odd"')
ADD_SUBTRACTS = ("add-subtracts", "return a + b", "return a - b")


@pytest.mark.parametrize(
    ("extra_tests", "mutation", "message"),
    [
        (SKIPS_IN_CALL, DESCRIBE_ALWAYS_ODD, r"skipped \['tests/test_toy.py::test_describe_even'\]; a skip is not"),
        (SKIPS_IN_SETUP, DESCRIBE_ALWAYS_ODD, r"skipped \['tests/test_toy.py::test_describe_even'\]; a skip is not"),
        (ERRORS_IN_SETUP, ADD_SUBTRACTS, r"setup errors.*test_with_checked_add"),
        (FAILS_AND_ERRORS_IN_TEARDOWN, ADD_SUBTRACTS, r"errors in teardown.*test_with_adder"),
    ],
    ids=["skip-in-call", "skip-in-setup", "error-in-setup", "failure-and-error-in-teardown"],
)
def test_a_mutation_that_makes_a_test_skip_or_error_is_no_verdict(
    tmp_path: Path, extra_tests: str, mutation: tuple[str, str, str], message: str
) -> None:
    root = _repo(tmp_path, [toy_mutation(*mutation)], baseline=4, tests=TOY_TESTS + extra_tests)
    with pytest.raises(NoVerdict, match=message):
        _verify(root, keep_going=True)


def test_the_command_line_gives_no_verdict_on_a_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _repo(tmp_path, [toy_mutation(*DESCRIBE_ALWAYS_ODD)], baseline=4, tests=TOY_TESTS + SKIPS_IN_CALL)
    assert cascade_mutations(["--root", str(root), "verify", str(root / "spec.json")]) == EXIT_NO_VERDICT
    captured = capsys.readouterr()
    assert "cascade-mutations: no verdict: describe-always-odd: the mutated run skipped" in captured.err
    assert "CAUGHT" not in captured.out


def test_refuses_a_selection_that_includes_static_checks(tmp_path: Path) -> None:
    """A test that reads the source "catches" every edit to the anchored line, here one that no
    behavioural test sees (describe() is only smoke-tested): it must not be allowed to."""
    reads_the_tree = (
        "\n\nimport pytest\n\n\n"
        f"@pytest.mark.{STATIC_CHECK_MARKER}\n"
        "def test_reads_the_tree():\n"
        """    assert '"even" if n % 2 == 0 else "odd"' in open('fakels/toy.py').read()\n"""
    )
    describe_always_even = toy_mutation("describe-always-even", '"even" if n % 2 == 0 else "odd"', '"even"')
    root = _repo(tmp_path, [describe_always_even], baseline=4, tests=TOY_TESTS + reads_the_tree)
    with pytest.raises(NoVerdict, match="includes static checks"):
        _verify(root)

"""Meta-tests of the mutation runner on a tiny throw-away repository: it catches, it honours
documented survivors, and it refuses to give a verdict on untrustworthy evidence."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mutations.runner import NoVerdict, verify
from mutations.spec import load_spec

TOY = """def add(a, b):
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

XFAIL_TEST = """

import pytest


@pytest.mark.xfail(reason="a documented gap", strict=False)
def test_gap():
    assert add(1, 1) == 3
"""

KNOWN = {"WIRE-1", "WIRE-2"}


def _mutation(name: str, anchor: str, replacement: str, caught: bool = True, **extra: Any) -> dict[str, Any]:
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


def _repo(tmp_path: Path, mutations: list[dict[str, Any]], baseline: int = 3, tests: str = TOY_TESTS) -> Path:
    root = tmp_path / "toy"
    (root / "fakels").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "fakels" / "__init__.py").write_text("", encoding="utf-8")
    (root / "fakels" / "toy.py").write_text(TOY, encoding="utf-8")
    (root / "tests" / "test_toy.py").write_text(tests, encoding="utf-8")
    spec = {
        "schema": 1,
        "family": "WIRE",
        "tests": ["tests/test_toy.py"],
        "expect_baseline_pass": baseline,
        "mutations": mutations,
    }
    (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy"],
    ):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)
    return root


def _verify(root: Path, **kwargs: Any) -> Any:
    return verify([load_spec(root / "spec.json")], root, KNOWN, say=lambda _line: None, **kwargs)


def test_caught_and_documented_survivor_both_behave(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        [
            _mutation("add-subtracts", "return a + b", "return a - b", expect_failing=["tests/test_toy.py::test_adds"]),
            _mutation("describe-always-even", '"even" if n % 2 == 0 else "odd"', '"even"', caught=False),
        ],
    )
    outcome = _verify(root)
    assert [(v.mutation.name, v.caught, v.behaved) for v in outcome.verdicts] == [
        ("add-subtracts", True, True),
        ("describe-always-even", False, True),
    ]
    assert outcome.verdicts[0].failing == ["tests/test_toy.py::test_adds", "tests/test_toy.py::test_adds_negatives"]
    assert (root / "fakels" / "toy.py").read_text(encoding="utf-8") == TOY, "the user's tree must never be touched"


def test_a_survivor_that_should_be_caught_misbehaves(tmp_path: Path) -> None:
    root = _repo(tmp_path, [_mutation("describe-always-odd", '"even" if n % 2 == 0 else "odd"', '"odd"')])
    outcome = _verify(root)
    assert [v.behaved for v in outcome.verdicts] == [False]
    assert outcome.misbehaved[0].why == "expected CAUGHT, got SURVIVED"


def test_caught_by_the_wrong_tests_misbehaves(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        [
            _mutation(
                "add-subtracts", "return a + b", "return a - b", expect_failing=["tests/test_toy.py::test_describe"]
            ),
        ],
    )
    assert "by none of the expected tests" in _verify(root).misbehaved[0].why


def test_stops_at_the_first_misbehaving_mutation_unless_keep_going(tmp_path: Path) -> None:
    mutations = [
        _mutation("describe-always-odd", '"even" if n % 2 == 0 else "odd"', '"odd"'),
        _mutation("add-subtracts", "return a + b", "return a - b"),
    ]
    root = _repo(tmp_path, mutations)
    assert len(_verify(root).verdicts) == 1
    assert len(_verify(root, keep_going=True).verdicts) == 2


def test_refuses_a_dirty_tree(tmp_path: Path) -> None:
    root = _repo(tmp_path, [_mutation("add-subtracts", "return a + b", "return a - b")])
    (root / "fakels" / "toy.py").write_text(TOY + "\n# edited\n", encoding="utf-8")
    with pytest.raises(NoVerdict, match="uncommitted changes"):
        _verify(root)


def test_refuses_a_miscounted_baseline(tmp_path: Path) -> None:
    root = _repo(tmp_path, [_mutation("add-subtracts", "return a + b", "return a - b")], baseline=4)
    with pytest.raises(NoVerdict, match="passed 3 tests but the spec expects 4"):
        _verify(root)


def test_refuses_a_red_baseline(tmp_path: Path) -> None:
    red = TOY_TESTS + "\n\ndef test_red():\n    assert add(1, 1) == 3\n"
    root = _repo(tmp_path, [_mutation("add-subtracts", "return a + b", "return a - b")], tests=red)
    with pytest.raises(NoVerdict, match="the baseline is red"):
        _verify(root)


def test_a_mutation_that_breaks_collection_is_no_verdict(tmp_path: Path) -> None:
    root = _repo(tmp_path, [_mutation("syntax-error", "return a + b", "return a +")])
    with pytest.raises(NoVerdict, match="collection or setup errors"):
        _verify(root)


def test_refuses_an_anchor_that_is_not_there(tmp_path: Path) -> None:
    root = _repo(tmp_path, [_mutation("nowhere", "return a * b", "return a - b")])
    with pytest.raises(NoVerdict, match="occurs 0 times"):
        _verify(root)


def test_a_test_reaching_beyond_loopback_is_no_verdict(tmp_path: Path) -> None:
    net = (
        TOY_TESTS
        + "\n\ndef test_net():\n    import socket\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"
    )
    root = _repo(tmp_path, [_mutation("add-subtracts", "return a + b", "return a - b")], tests=net, baseline=4)
    with pytest.raises(NoVerdict, match="tried to reach the network beyond loopback"):
        _verify(root)


def test_expected_failures_are_neither_counted_nor_a_verdict(tmp_path: Path) -> None:
    xfail = TOY_TESTS + XFAIL_TEST
    root = _repo(tmp_path, [_mutation("add-subtracts", "return a + b", "return a - b")], tests=xfail)
    outcome = _verify(root)
    assert [(v.caught, v.behaved) for v in outcome.verdicts] == [(True, True)]
    assert "tests/test_toy.py::test_gap" not in outcome.verdicts[0].failing

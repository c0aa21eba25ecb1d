"""Every outcome path of the mutation runner, each through the real ``cascade-mutations verify`` on a
tiny committed project: expect_caught true/false x caught/survived/no verdict, and every way pytest
can end a mutated run without a trustworthy outcome (exit 2, 3, 4, 5, a crash after its summary, a
timeout). A run that did not end cleanly never yields a verdict from the outcomes it did record.

The toy's hooks call into ``fakels/toy.py`` after the last test (``finish``) and at shutdown
(``shutdown``), so one mutation can both fail a test and end the run badly: the outcomes then look
complete (a test failed, every other ran), and only the exit status tells that they are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mutations.cli import main as cascade_mutations
from mutations.runner import EXIT_MISBEHAVED, EXIT_NO_VERDICT, EXIT_OK
from tests.support.toy_project import TOY_MODULE, TOY_TESTS, toy_mutation, toy_repo

# The base module with os imported, and the functions the hooks below call (each a mutation's target).
TOY = (
    "import os\n\n\n"
    + TOY_MODULE
    + """

def finish():
    return None


def shutdown():
    return None


def keep(items):
    return items


def pause():
    return None
"""
)

CONFTEST = """import pytest

from fakels import toy


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    try:
        return (yield)
    finally:
        toy.finish()  # after the last test, also when --exitfirst stopped the loop


def pytest_collection_modifyitems(items):
    items[:] = toy.keep(items)


def pytest_unconfigure(config):
    toy.shutdown()
"""

TESTS = (
    TOY_TESTS
    + """

from fakels.toy import pause


def test_pauses():
    pause()
"""
)

SUBTRACTS = ("    return a + b\n", "    return a - b\n")


def _subtracts_and(anchor: str, replacement: str) -> tuple[str, str]:
    """A mutation that fails test_adds and also changes ``anchor`` (a later function) to ``replacement``:
    one anchor spanning both, so the run's outcomes hold a catch whatever happens after."""
    start = TOY.index(SUBTRACTS[0])
    end = TOY.index(anchor) + len(anchor)
    span = TOY[start:end]
    return span, span.replace(SUBTRACTS[0], SUBTRACTS[1]).replace(anchor, replacement)


BAD_ENDINGS = {
    "interrupted-exit-2": (
        _subtracts_and("def finish():\n    return None", "def finish():\n    raise KeyboardInterrupt"),
        "pytest ended the mutated run with exit 2 (interrupted)",
    ),
    "internal-error-exit-3": (
        _subtracts_and("def finish():\n    return None", "def finish():\n    raise RuntimeError('hook broke')"),
        "pytest ended the mutated run with exit 3 (internal error)",
    ),
    "usage-error-exit-4": (
        _subtracts_and(
            "def finish():\n    return None",
            "def finish():\n    import pytest\n    raise pytest.UsageError('bad option')",
        ),
        "pytest ended the mutated run with exit 4 (usage error)",
    ),
    "no-tests-exit-5": (
        ("def keep(items):\n    return items", "def keep(items):\n    return []"),
        "pytest ended the mutated run with exit 5 (no tests collected)",
    ),
    "killed-after-its-summary": (
        _subtracts_and("def shutdown():\n    return None", "def shutdown():\n    os.kill(os.getpid(), 9)"),
        "pytest's summary says exit 1 but the process ended with signal 9",
    ),
}


def _verify(tmp_path: Path, mutations: list[dict[str, Any]], *options: str) -> int:
    root = toy_repo(tmp_path / "toy", mutations, baseline=4, module=TOY, tests=TESTS, more={"conftest.py": CONFTEST})
    return cascade_mutations(["--root", str(root), "verify", "--jobs", "1", *options, str(root / "spec.json")])


@pytest.mark.parametrize(
    ("caught", "mutation", "exit_code", "line"),
    [
        (True, SUBTRACTS, EXIT_OK, "  CAUGHT 1st the-mutation  [WIRE-1]"),
        (True, ('"even" if n % 2 == 0 else "odd"', '"odd"'), EXIT_MISBEHAVED, "! expected CAUGHT, got SURVIVED"),
        (False, ('"even" if n % 2 == 0 else "odd"', '"odd"'), EXIT_OK, "  SURVIVED   the-mutation  [WIRE-1]"),
        (
            False,
            SUBTRACTS,
            EXIT_MISBEHAVED,
            "! stale survivor documentation: expected SURVIVED, got CAUGHT by tests/test_toy.py::test_adds, "
            "tests/test_toy.py::test_adds_negatives; the tests now catch it, so set expect_caught to true in "
            "spec.json and drop its survivor_reason",
        ),
    ],
    ids=["expected-caught-caught", "expected-caught-survived", "survivor-survived", "survivor-caught"],
)
def test_each_verdict_and_its_exit_code(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caught: bool,
    mutation: tuple[str, str],
    exit_code: int,
    line: str,
) -> None:
    assert _verify(tmp_path, [toy_mutation("the-mutation", *mutation, caught=caught)]) == exit_code
    out = capsys.readouterr().out
    assert line in out
    assert ("did NOT behave" in out) == (exit_code == EXIT_MISBEHAVED)
    assert ("behaved as expected" in out) == (exit_code == EXIT_OK)


@pytest.mark.parametrize("caught", [True, False], ids=["expected-caught", "survivor"])
@pytest.mark.parametrize("ending", sorted(BAD_ENDINGS))
def test_a_run_that_did_not_end_cleanly_is_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ending: str, caught: bool
) -> None:
    """Expected CAUGHT runs stop at the first failure (``--exitfirst``); survivors run in full. Either way
    the tests that ran hold a failure (but for exit 5), so only the exit status stands between them
    and a verdict."""
    (anchor, replacement), message = BAD_ENDINGS[ending]
    assert _verify(tmp_path, [toy_mutation(ending, anchor, replacement, caught=caught)]) == EXIT_NO_VERDICT
    captured = capsys.readouterr()
    assert f"cascade-mutations: no verdict: {ending}: {message}" in captured.err or (
        f"cascade-mutations: no verdict: spec.json: {message}" in captured.err
    ), captured.err
    assert "CAUGHT" not in captured.out
    assert "SURVIVED" not in captured.out


@pytest.mark.parametrize("caught", [True, False], ids=["expected-caught", "survivor"])
def test_a_run_over_the_timeout_is_no_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str], caught: bool) -> None:
    # 6 s: the toy baseline takes about half a second; the hanging run is ended at the timeout either way.
    hangs = toy_mutation("hangs", "def pause():\n    return None", "def pause():\n    os.system('sleep 600')", caught)
    assert _verify(tmp_path, [hangs], "--timeout", "6") == EXIT_NO_VERDICT
    captured = capsys.readouterr()
    assert "cascade-mutations: no verdict: spec.json: the test run exceeded 6 s" in captured.err
    assert "CAUGHT" not in captured.out
    assert "SURVIVED" not in captured.out

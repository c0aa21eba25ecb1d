"""The conformance share through the real ``cascade-mutations verify``: every verdict path of an
engine mutation judged by the conformance suite (caught, documented blind, missed, stale blind, an
``error`` that is no catch) and every way that stage refuses a verdict (a red baseline, a run that
crashed, hung or wrote into the tree).

The toy project brings its own ``conformance/cli.py``: the runner starts ``python -m conformance.cli
run --only ... --report ...`` in the copy, so this stand-in (whose verdicts come from the toy engine
in the copy) is what it judges, as the kit's CLI is in the real tree. That the kit's real report
reads the same way is pinned by the last test, on the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mutations.cli import main as cascade_mutations
from mutations.conformance_share import _junit_verdicts
from mutations.runner import EXIT_MISBEHAVED, EXIT_NO_VERDICT, EXIT_OK
from tests.support.toy_project import ADD_SUBTRACTS, TOY_MODULE, toy_mutation, toy_repo

# The base module as the engine's, with what its mutations need and the stand-in CLI's hook.
ENGINE = (
    "import os\nimport time\n\n\n"
    + TOY_MODULE
    + """

def after_run():
    return None
"""
)

# WIRE-1 fails when add() is wrong, WIRE-2 errs when describe() raises; the exit code is the kit's.
STAND_IN_CLI = """import sys
from pathlib import Path

from engine import toy


def verdict(invariant):
    if invariant == "WIRE-1":  # a partial pass, and a catch with two distinct failures
        return "partial" if toy.add(2, 3) == 5 else "fail"
    try:
        toy.describe(2)
    except Exception:
        return "error"
    return "pass"


args = sys.argv[1:]
assert args[0] == "run" and "--no-shrink" in args, args
only = args[args.index("--only") + 1].split(",")
report = Path(args[args.index("--report") + 1])
report.mkdir(parents=True)
verdicts = {invariant: verdict(invariant) for invariant in only}
# What a person reads beside the status word: the share must read the word (the kit's own junit.xml does the same).
display = {"fail": "fail (2 distinct failures)", "partial": "pass (partial: the journal, not exposed)"}
cases = "".join(
    f'<testcase classname="conformance.WIRE" name="{inv}"><properties>'
    f'<property name="status" value="{v}" /><property name="verdict" value="{display.get(v, v)}" />'
    "</properties></testcase>"
    for inv, v in verdicts.items()
)
(report / "junit.xml").write_text(f'<testsuite name="cascade-conformance">{cases}</testsuite>', encoding="utf-8")
toy.after_run()
sys.exit(0 if set(verdicts.values()) <= {"pass", "partial"} else 1)
"""

TESTS = """from engine.toy import add, describe


def test_adds():
    assert add(2, 3) == 5


def test_describes():
    assert describe(2) == "even"
"""

RAISES = ('return "even" if n % 2 == 0 else "odd"', "raise ValueError(n)")
BLIND = "The stand-in suite cannot see this one: it is documented so in the spec."


def _engine_mutation(name: str, mutation: tuple[str, str], invariant: str = "WIRE-1", **extra: Any) -> dict[str, Any]:
    return toy_mutation(name, *mutation, file="engine/toy.py", invariants=[invariant], **extra)


def _toy(tmp_path: Path, mutations: list[dict[str, Any]], engine: str = ENGINE) -> Path:
    more = {
        "fakels/__init__.py": "",
        "conformance/__init__.py": "",
        "conformance/cli.py": STAND_IN_CLI,
        # The kit's pytest11 entry point names conformance.pytest_plugin, which the toy's package now shadows.
        "conformance/pytest_plugin.py": "",
    }
    return toy_repo(tmp_path / "toy", mutations, baseline=2, module=engine, tests=TESTS, more=more, package="engine")


def _verify(tmp_path: Path, mutations: list[dict[str, Any]], *options: str, engine: str = ENGINE) -> int:
    root = _toy(tmp_path, mutations, engine)
    argv = ["--root", str(root), "verify", "--jobs", "1", "--keep-going", *options, str(root / "spec.json")]
    return cascade_mutations(argv)


def test_each_conformance_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mutations = [
        _engine_mutation("caught", ADD_SUBTRACTS),
        _engine_mutation("blind", RAISES, "WIRE-2", conformance_blind=BLIND),
        _engine_mutation("missed-error-is-no-catch", RAISES, "WIRE-2", description="an error verdict"),
        _engine_mutation("stale-blind", ADD_SUBTRACTS, conformance_blind=BLIND, description="caught after all"),
    ]
    assert _verify(tmp_path, mutations, "--conformance-only") == EXIT_MISBEHAVED
    out = capsys.readouterr().out
    assert "conformance share: baseline 2 invariant(s) pass on the reference" in out
    assert "  CAUGHT     caught  [WIRE-1 fail]" in out
    assert "  BLIND      blind  [WIRE-2 error]" in out
    assert (
        "✗ MISSED     missed-error-is-no-catch  [WIRE-2 error]\n"
        "      ! cascade-conformance run --only WIRE-2 does not catch it (WIRE-2 error): extend the property or its "
        "strategy until it fails, or say in conformance_blind why a black box cannot see it"
    ) in out
    assert (
        "✗ CAUGHT     stale-blind  [WIRE-1 fail]\n"
        "      ! stale conformance_blind: cascade-conformance run now fails WIRE-1; drop conformance_blind from "
        "stale-blind in spec.json"
    ) in out
    assert (
        "conformance share: 2 of 4 engine mutation(s) caught by cascade-conformance run (50 %); "
        "1 documented as blind to a black box"
    ) in out
    assert "2 of 4 verdict(s) did NOT behave as expected:" in out
    assert "kill matrix" not in out, "a share-only run writes no kill matrix over the last one"


def test_a_full_verify_judges_both_and_prints_the_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mutations = [_engine_mutation("caught", ADD_SUBTRACTS), _engine_mutation("blind", RAISES, conformance_blind=BLIND)]
    assert _verify(tmp_path, mutations) == EXIT_OK
    out = capsys.readouterr().out
    assert "  WIRE-1: caught -> tests/test_toy.py::test_adds (first killer); conformance: caught" in out
    assert "  WIRE-1: blind -> tests/test_toy.py::test_describes (first killer); conformance: blind" in out
    assert "conformance share: 1 of 2 engine mutation(s) caught by cascade-conformance run (50 %)" in out
    assert "all 4 verdict(s) behaved" not in out
    assert "all 2 mutation(s) behaved as expected" in out
    matrix = json.loads((tmp_path / "toy" / "reports" / "mutations" / "kill-matrix.json").read_text(encoding="utf-8"))
    assert [row["conformance"] for row in matrix["WIRE-1"]] == ["caught", "blind"]


def test_no_conformance_says_it_was_not_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify(tmp_path, [_engine_mutation("missed", RAISES)], "--no-conformance") == EXIT_OK
    out = capsys.readouterr().out
    assert "conformance share: not measured (--no-conformance)" in out
    assert "MISSED" not in out


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (
            ("def after_run():\n    return None", "def after_run():\n    os._exit(3)"),
            "after-run: cascade-conformance run ended with exit 3",
        ),
        (
            ("def after_run():\n    return None", "def after_run():\n    open('left-behind.txt', 'w').close()"),
            "a conformance run changed files in the copy",
        ),
        (
            ("def after_run():\n    return None", "def after_run():\n    time.sleep(600)"),
            "after-run: cascade-conformance run exceeded 10 s; raise --timeout",
        ),
    ],
    ids=["crashed", "wrote-into-the-tree", "hung"],
)
def test_a_conformance_run_that_did_not_end_cleanly_is_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutation: tuple[str, str], message: str
) -> None:
    assert _verify(tmp_path, [_engine_mutation("after-run", mutation)], "--conformance-only", "--timeout", "10") == (
        EXIT_NO_VERDICT
    )
    captured = capsys.readouterr()
    assert message in captured.err
    assert "CAUGHT" not in captured.out
    assert "MISSED" not in captured.out


def test_a_red_conformance_baseline_is_no_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = ENGINE.replace("return a + b", "return a * b")  # committed broken: the reference itself fails
    mutation = _engine_mutation("caught", ("return a * b", "return a - b"))
    assert _verify(tmp_path, [mutation], "--conformance-only", engine=broken) == EXIT_NO_VERDICT
    assert "the conformance baseline is red on the unmutated reference ({'WIRE-1': 'fail'})" in capsys.readouterr().err


def test_the_kits_own_report_reads_as_verdicts(tmp_path: Path) -> None:
    """The stand-in above writes what the kit's CLI writes: this reads the real CLI's junit.xml."""
    report = tmp_path / "report"
    command = [sys.executable, "-m", "conformance.cli", "run", "--only", "STORE-8", "--report", str(report)]
    done = subprocess.run([*command, "--no-shrink"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _junit_verdicts(report / "junit.xml", "STORE-8") == {"STORE-8": "pass"}

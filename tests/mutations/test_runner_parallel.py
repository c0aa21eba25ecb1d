"""Meta-tests of the fast mutation runner, through the command line on toy repositories: copies
run in parallel report exactly what a serial run reports, a run stopped at its first killing test
still says SURVIVED when nothing fails and still refuses untrustworthy evidence, an unexpected first
killer is re-run in full, and wall times are printed."""

from __future__ import annotations

import io
import json
import re
import time
from contextlib import redirect_stderr, redirect_stdout
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mutations._tree import snapshot as _snapshot
from mutations.cli import main as cascade_mutations
from mutations.runner import EXIT_MISBEHAVED, EXIT_NO_VERDICT, _disposable_copies, _restore
from tests.support.toy_project import (
    ADD_SUBTRACTS,
    DESCRIBE,
    TOY_MODULE,
    TOY_TESTS,
    commit_toy_repo,
    toy_files,
    toy_mutation,
    toy_repo,
    write_toy_spec,
)

TOY = (
    TOY_MODULE
    + """

def double(n):
    return n * 2


SIZES = [1, 2, 3]
"""
)

UNIT = (
    TOY_TESTS
    + """

from fakels.toy import double


def test_doubles():
    assert double(4) == 8
"""
)

PROPS = """from fakels.toy import add, double


def test_add_is_commutative_on_a_sample():
    assert add(1, 2) == add(2, 1) == 3


def test_double_is_adding_twice():
    assert double(5) == add(5, 5)
"""

UNIT_PY, PROPS_PY = "tests/test_unit.py", "tests/test_props.py"

# Each spec's mutations in order, with what the early-stopped run reports; comments say why.
MUTATIONS = [
    # The expected file is listed second in the spec, so it must have been run first.
    toy_mutation("add-subtracts", *ADD_SUBTRACTS, expect_failing=[PROPS_PY]),
    toy_mutation("double-triples", "return n * 2", "return n * 3", expect_failing=[f"{UNIT_PY}::test_doubles"]),
    toy_mutation("describe-always-even", DESCRIBE, '"even"', caught=False),
    # test_adds fails first and is not expected: re-run in full, where the expected test fails too.
    toy_mutation("add-subtracts-named-late", *ADD_SUBTRACTS, expect_failing=[f"{UNIT_PY}::test_adds_negatives"]),
    # test_adds fails first and is not expected: re-run in full, where no expected test fails.
    toy_mutation("add-subtracts-wrong-tests", *ADD_SUBTRACTS, expect_failing=[f"{UNIT_PY}::test_describe_runs"]),
    # Nothing fails, so the early-stopped run ran everything: SURVIVED, against the expectation.
    toy_mutation("describe-always-odd", DESCRIBE, '"odd"'),
]
PROPS_MUTATIONS = [
    toy_mutation("double-triples", "return n * 2", "return n * 3", expect_failing=[f"{PROPS_PY}::test_double"]),
]
EXPECTED = [  # name, caught, behaved, failing when stopped early, failing in full
    ("add-subtracts", True, True, [f"{PROPS_PY}::test_add_is_commutative_on_a_sample"], 4),
    ("double-triples", True, True, [f"{UNIT_PY}::test_doubles"], 2),
    ("describe-always-even", False, True, [], 0),
    ("add-subtracts-named-late", True, True, None, 4),
    ("add-subtracts-wrong-tests", True, False, None, 4),
    ("describe-always-odd", False, False, [], 0),
    ("double-triples", True, True, [f"{PROPS_PY}::test_double_is_adding_twice"], 1),
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parallel") / "toy"
    files = toy_files(TOY, tests=None) | {UNIT_PY: UNIT, PROPS_PY: PROPS}
    root.mkdir()
    write_toy_spec(root, MUTATIONS, 6, tests=(UNIT_PY, PROPS_PY))
    write_toy_spec(root, PROPS_MUTATIONS, 2, tests=(PROPS_PY,), name="props.json")
    return commit_toy_repo(root, files)


@cache
def _cli_cached(root: Path, *args: str) -> tuple[int, str, str, dict[str, Any]]:
    report = root.parent / ("report-" + "-".join(a.strip("-") for a in args))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        specs = [str(root / "spec.json"), str(root / "props.json")]
        code = cascade_mutations(
            ["--root", str(root), "verify", *specs, "--keep-going", "--report", str(report), *args]
        )
    matrix = json.loads((report / "kill-matrix.json").read_text(encoding="utf-8")) if code != EXIT_NO_VERDICT else {}
    return code, out.getvalue(), err.getvalue(), matrix


def _verdict_lines(out: str) -> list[str]:
    """The printed report without what may differ between equal runs: times and the report path."""
    return [line for line in out.splitlines() if "wall time" not in line and not line.startswith("kill matrix: ")]


def test_parallel_copies_report_exactly_what_a_serial_run_reports(toy: Path) -> None:
    serial = _cli_cached(toy, "--jobs", "1")
    parallel = _cli_cached(toy, "--jobs", "3")
    assert serial[0] == parallel[0] == EXIT_MISBEHAVED
    assert _verdict_lines(parallel[1]) == _verdict_lines(serial[1])
    assert parallel[3] == serial[3], "the kill matrix must be the same"


def test_early_stop_names_the_first_killer_and_gives_the_verdicts_of_full_runs(toy: Path) -> None:
    early, full = _cli_cached(toy, "--jobs", "3"), _cli_cached(toy, "--no-early-stop")
    rows = {(row["spec"], row["mutation"]): row for rows in early[3].values() for row in rows}
    full_rows = {(row["spec"], row["mutation"]): row for rows in full[3].values() for row in rows}
    specs = ["spec.json"] * len(MUTATIONS) + ["props.json"]
    for spec, (name, caught, behaved, first, in_full) in zip(specs, EXPECTED, strict=True):
        row, full_row = rows[(spec, name)], full_rows[(spec, name)]
        assert (row["caught"], row["behaved"]) == (full_row["caught"], full_row["behaved"]) == (caught, behaved), name
        assert len(full_row["killed_by"]) == in_full, name
        assert not full_row["first_killer"], name
        if first is None:  # re-run in full: the whole evidence, not a first killer
            assert row["killed_by"] == full_row["killed_by"], name
            assert not row["first_killer"], name
        else:
            assert row["killed_by"] == first, name
            assert row["first_killer"] == bool(first), name
    out = early[1]
    assert f"CAUGHT 1st add-subtracts  [WIRE-1]\n      ↳ {PROPS_PY}::test_add_is_commutative_on_a_sample" in out
    assert f"first killer {UNIT_PY}::test_adds is not an expected test; re-run in full" in out
    assert "caught, but by none of the expected tests" in out
    assert "describe-always-odd: expected CAUGHT, got SURVIVED" in out
    assert "(first killer)" in (toy.parent / "report-jobs-3" / "kill-matrix.md").read_text(encoding="utf-8")


TIME = r"(\d+\.\ds|\d+m\d\ds)"


def test_wall_times_are_printed_per_spec_and_in_total(toy: Path) -> None:
    out = _cli_cached(toy, "--jobs", "3")[1]
    for spec in ("spec.json", "props.json"):
        assert re.search(rf"^  {re.escape(spec)}: wall time {TIME} for the baseline and", out, re.MULTILINE), spec
    assert re.search(rf"^wall time per spec: spec.json {TIME}, props.json {TIME}", out, re.MULTILINE)
    assert re.search(rf"^wall time in total: {TIME} \(3 job\(s\), early stop\)$", out, re.MULTILINE)


# ------------------------------------------------------------ untrustworthy evidence, both modes

SKIPS_BEFORE_FAILING = """import pytest

from fakels.toy import describe


def test_describe_even():
    if describe(2) != "even":
        pytest.skip("describe() looks broken, so this test steps aside")
    assert describe(2) == "even"


def test_two_is_even():
    assert describe(2) == "even"
"""

ERRORS_BEFORE_FAILING = """import pytest

from fakels.toy import add


@pytest.fixture
def checked_add():
    assert add(1, 1) == 2, "the fixture checks add() before handing it out"
    return add


def test_with_checked_add(checked_add):
    assert checked_add(0, 0) == 0


def test_adds():
    assert add(2, 3) == 5
"""

WRITES_INTO_THE_TREE = """from pathlib import Path

from fakels.toy import add


def test_adds_and_leaves_a_trace():
    if add(2, 3) != 5:
        Path("fakels/trace.txt").write_text("left behind", encoding="utf-8")
    assert add(2, 3) == 5
"""

COLLECTS_OTHER_TESTS = """import pytest

from fakels.toy import SIZES


def test_three_sizes():
    assert len(SIZES) == 3


@pytest.mark.parametrize("size", SIZES)
def test_size_is_positive(size):
    assert size > 0
"""


@pytest.mark.parametrize("mode", [[], ["--no-early-stop"]], ids=["early-stop", "full"])
@pytest.mark.parametrize(
    ("tests", "baseline", "mutation", "message"),
    [
        (SKIPS_BEFORE_FAILING, 2, ("describe-always-odd", DESCRIBE, '"odd"'), r"skipped .*test_describe_even"),
        (ERRORS_BEFORE_FAILING, 2, ("add-subtracts", *ADD_SUBTRACTS), r"setup errors .*test_with_checked_add"),
        (WRITES_INTO_THE_TREE, 1, ("add-subtracts", *ADD_SUBTRACTS), r"files in the copy changed after the mutation"),
        (COLLECTS_OTHER_TESTS, 4, ("two-sizes", "SIZES = [1, 2, 3]", "SIZES = [1, 2]"), r"not (collect|run) the same"),
    ],
    ids=["skip", "setup-error", "changed-files", "other-tests-collected"],
)
def test_untrustworthy_evidence_is_no_verdict_in_both_modes(
    tmp_path: Path, mode: list[str], tests: str, baseline: int, mutation: tuple[str, str, str], message: str
) -> None:
    root = toy_repo(tmp_path / "toy", [toy_mutation(*mutation)], baseline, module=TOY, tests=tests)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(err):
        code = cascade_mutations(["--root", str(root), "verify", str(root / "spec.json"), "--jobs", "2", *mode])
    assert code == EXIT_NO_VERDICT, out.getvalue()
    assert re.search(message, err.getvalue()), err.getvalue()
    assert "CAUGHT" not in out.getvalue()


def test_a_misbehaving_mutation_stops_the_run_and_cancels_the_later_ones(tmp_path: Path) -> None:
    """Without --keep-going the run ends at the first misbehaving mutation, as a serial run would:
    a later mutation already running in another copy (here one that hangs every test) is killed."""
    root = tmp_path / "toy"
    root.mkdir()
    hangs = toy_mutation("add-hangs", ADD_SUBTRACTS[0], "return __import__('time').sleep(300) or a + b")
    write_toy_spec(root, [toy_mutation("describe-always-odd", DESCRIBE, '"odd"'), hangs], 4, tests=(UNIT_PY,))
    commit_toy_repo(root, toy_files(TOY, tests=None) | {UNIT_PY: UNIT})
    began = time.monotonic()
    with redirect_stdout(io.StringIO()) as out:
        code = cascade_mutations(
            ["--root", str(root), "verify", str(root / "spec.json"), "--jobs", "2", "--report", str(tmp_path / "r")]
        )
    assert code == EXIT_MISBEHAVED
    assert time.monotonic() - began < 60, "the hanging run was not cancelled"
    assert "describe-always-odd" in out.getvalue()
    assert "add-hangs" not in out.getvalue()


def test_a_copy_left_changed_is_restored_to_the_committed_tree(tmp_path: Path) -> None:
    root = tmp_path / "toy"
    root.mkdir()
    commit_toy_repo(root, toy_files(TOY, tests=None))
    with _disposable_copies(root, 2) as (copies, reference):
        assert [_snapshot(c) for c in copies] == [reference, reference]
        (copies[1] / "fakels" / "toy.py").write_text("broken", encoding="utf-8")
        (copies[1] / "fakels" / "stray.py").write_text("left behind", encoding="utf-8")
        _restore(copies[1], reference)
        assert _snapshot(copies[1]) == reference
    assert not copies[0].exists(), "the copies are disposable"


def test_jobs_must_be_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cascade_mutations(["verify", "--jobs", "0"])
    assert exited.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err

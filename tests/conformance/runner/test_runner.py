"""Meta-tests of the conformance runner: it passes the reference, fails a broken target with a
replayable minimal case, keeps known-failure lists honest, and says 'not checkable' instead of
passing when a target lacks operations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cases import CaseFile, CaseFileError, read_case, write_case
from conformance.catalogue import CATALOGUE
from conformance.cli import main
from conformance.program import kit_program
from conformance.properties import properties
from conformance.runner import RunOptions, Status, replay_case, run_property, select
from conformance.targets import load_target

BROKEN = "python:tests.support.broken_targets:drops_unknown_fields"
DECODE_ONLY = "python:tests.support.broken_targets:decode_only"


def test_every_catalogue_invariant_has_exactly_one_property() -> None:
    assert set(properties()) == set(CATALOGUE)


def test_run_selects_the_whole_catalogue_by_default() -> None:
    # Each property passing on the reference is test_reference.py's job, one test per invariant;
    # the README's main job runs them all through the command line.
    assert [prop.invariant.id for prop in select(None)] == list(properties())
    assert len(select(None)) == len(CATALOGUE)


def test_the_reference_passes_what_run_selects_and_the_reports_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = ["WIRE-4", "IMG-1", "STORE-3", "ATT-2"]
    assert main(["run", "--only", ",".join(chosen), "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines() if line.split()[:1] in ([c] for c in chosen)] == [
        [inv_id, "pass"] for inv_id in chosen
    ]
    junit = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert 'tests="4"' in junit
    assert 'failures="0"' in junit
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    for inv_id in chosen:
        assert f"| {inv_id} | pass |" in report


def test_a_broken_target_fails_with_a_minimal_case_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--target", BROKEN, "--only", "WIRE-2", "--report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "WIRE-2   fail" in out
    case_path = tmp_path / "cases" / "wire-2.json"
    assert f"replay: {kit_program()} replay {case_path} --target {BROKEN}" in out
    saved = read_case(case_path)
    assert saved.invariant == "WIRE-2"
    assert len(saved.case["expected_unknown"]) == 1, "the shrunk case inserts exactly one unknown field"
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Minimal counterexample" in report
    assert "What the fake and the target saw (decoded)" in report
    assert "Unknown fields survive decoding" in report
    junit = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert 'failures="1"' in junit
    # The same file fails on the broken target and passes on the reference: a static, portable case.
    replay = ["replay", str(case_path), "--report", str(tmp_path / "replayed")]
    assert main([*replay, "--target", BROKEN]) == 1
    assert main(replay) == 0


def test_save_case_copies_a_reported_case(tmp_path: Path) -> None:
    report = tmp_path / "report"
    assert main(["run", "--target", BROKEN, "--only", "WIRE-2", "--report", str(report)]) == 1
    out = tmp_path / "mine" / "wire-2.json"
    assert main(["save-case", "WIRE-2", "--report", str(report), "--out", str(out)]) == 0
    assert read_case(out) == read_case(report / "cases" / "wire-2.json")


def test_a_known_failure_that_fails_is_expected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - id: WIRE-2\n    reason: drops unknown fields on purpose\n", encoding="utf-8")
    code = main(
        ["run", "--target", BROKEN, "--only", "WIRE", "--known-failures", str(known), "--report", str(tmp_path / "r")]
    )
    assert code == 0
    assert "WIRE-2   known failure" in capsys.readouterr().out


def test_a_known_failure_that_passes_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps({"known_failures": [{"id": "WIRE-1", "reason": "was broken once"}]}), encoding="utf-8")
    assert main(["run", "--only", "WIRE-1", "--known-failures", str(known), "--report", str(tmp_path / "r")]) == 1
    assert "remove it from the list" in capsys.readouterr().out


def test_a_pinned_known_failure_replays_its_case(tmp_path: Path) -> None:
    case = {
        "method": "AddTrackedWorkspace",
        "raw_hex": "0a01781005",
        "expected_unknown": [{"path": "<root>", "number": 2, "wire_type": "varint"}],
    }
    write_case(tmp_path / "pinned.json", CaseFile("WIRE-2", case))
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - {id: WIRE-2, reason: drops unknowns, case: pinned.json}\n", encoding="utf-8")
    assert (
        main(
            [
                "run",
                "--target",
                BROKEN,
                "--only",
                "WIRE-2",
                "--known-failures",
                str(known),
                "--report",
                str(tmp_path / "a"),
            ]
        )
        == 0
    )
    assert main(["run", "--only", "WIRE-2", "--known-failures", str(known), "--report", str(tmp_path / "b")]) == 1


def test_missing_operations_are_not_checkable_never_a_pass() -> None:
    target = load_target(DECODE_ONLY)
    try:
        results = {p.invariant.id: run_property(p, target, RunOptions()) for p in select(["WIRE"])}
    finally:
        target.close()
    assert results["WIRE-1"].status == Status.PASS
    assert results["WIRE-3"].status == Status.NOT_CHECKABLE
    assert "ls.serve" in results["WIRE-3"].message
    assert results["WIRE-4"].status == Status.NOT_CHECKABLE


def test_exec_adapter_of_the_reference_passes(tmp_path: Path) -> None:
    target = f"exec:{sys.executable} -m conformance.adapter"
    assert main(["run", "--target", target, "--only", "WIRE-1,WIRE-2,WIRE-3", "--report", str(tmp_path)]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--target", "nonsense"], "is not a target"),
        (["run", "--target", "python:no.such.module:f"], "cannot import no.such.module"),
        (["run", "--only", "NOPE"], "neither an invariant ID nor a family"),
        (["run", "--target", "exec:/nonexistent/adapter"], "cannot start the adapter"),
        (["replay", "/nonexistent/case.json"], "cannot read"),
    ],
)
def test_bad_input_is_one_clear_line(argv: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_python_target_that_crashes_while_opening_is_a_failed_start_naming_its_own_frames(tmp_path: Path) -> None:
    (tmp_path / "crashy.py").write_text('def boom():\n    raise RuntimeError("no config")\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--target", "python:crashy:boom", "--only", "WIRE-1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,  # on sys.path: crashy imports
    )
    assert done.returncode == 2, done.stdout + done.stderr
    first, *rest = done.stderr.splitlines()
    assert (
        first
        == "cascade-conformance: the target failed to start: python:crashy:boom: boom() raised RuntimeError: no config"
    )
    assert f'File "{tmp_path / "crashy.py"}", line 2, in boom' in "\n".join(rest)
    assert "conformance/cli.py" not in done.stderr  # the implementation's frames, not a crash of the kit


def test_case_files_are_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}', encoding="utf-8")
    with pytest.raises(CaseFileError, match="not a case file"):
        read_case(bad)


def test_replaying_a_case_needs_no_hypothesis() -> None:
    prop = properties()["WIRE-1"]
    target = load_target(None)
    try:
        result = replay_case(
            prop, target, {"method": "AddTrackedWorkspace", "raw_hex": "0a0178", "expected": {"workspace": "x"}}
        )
        wrong = replay_case(
            prop, target, {"method": "AddTrackedWorkspace", "raw_hex": "0a0178", "expected": {"workspace": "y"}}
        )
    finally:
        target.close()
    assert result.status == Status.PASS
    assert wrong.status == Status.FAIL
    assert "expected: {'workspace': 'y'}" in wrong.message

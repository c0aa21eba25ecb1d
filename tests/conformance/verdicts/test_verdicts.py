"""Verdicts you can trust: deliberately broken targets run through the real runner and the real CLI.

Each target in :mod:`tests.support.broken_targets` has one known defect (or one legitimate gap);
each test states the verdict the kit must reach on it. No verdict comes from what a target reports
about itself, and no failure is hidden behind another.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.errors import TargetSpecError
from conformance.runner import Result, Status
from conformance.targets import Target, load_target
from tests.support.verdicts import run_on

BROKEN = "python:tests.support.broken_targets"
CLI = [sys.executable, "-m", "conformance.cli"]


@pytest.fixture
def open_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    target = load_target(f"{BROKEN}:{request.param}")
    yield target
    target.close()


# Each broken target shows its defect (or its gap) within the first examples; the passes and partial
# passes a correct-but-limited target earns are judged on this many (the reference's own proof,
# test_reference.py, runs the whole ci profile).
EXAMPLES = 15


def _run(invariant: str, factory: str) -> Result:
    return run_on(f"{BROKEN}:{factory}", invariant, max_examples=EXAMPLES)


def _cli(tmp_path: Path, *args: str, shrink: bool = False) -> subprocess.CompletedProcess[str]:
    """``cascade-conformance run``, unshrunk unless asked (as run_on): most of these tests judge
    verdicts; shrinking also tells failures apart that generation found as one."""
    quick = ["--max-examples", str(EXAMPLES)]
    return subprocess.run(
        [*CLI, "run", *quick, *([] if shrink else ["--no-shrink"]), "--report", str(tmp_path / "report"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )


# ---------------------------------------------------------------------------- errors, never passes


@pytest.mark.parametrize("invariant", ["WIRE-1", "WIRE-2", "OFF-1"])
def test_a_target_raising_on_every_call_errors(invariant: str) -> None:
    result = _run(invariant, "raises_on_every_call")
    assert result.status == Status.ERROR, (result.status, result.message)
    assert "crashes on every call" in result.message
    assert not result.status.ok


def test_a_target_writing_non_protocol_lines_on_stdout_errors(tmp_path: Path) -> None:
    done = _cli(
        tmp_path,
        "--target",
        f"exec:{sys.executable} -m conformance.adapter {BROKEN}:prints_to_stdout",
        "--only",
        "WIRE-1",
        shrink=True,  # the final replay of the shrunk case shows the line itself, not the stale answers after it
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WIRE-1   error" in done.stdout, done.stdout
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "not JSON" in report
    assert "decoding " in report  # the offending line is shown


def test_a_hanging_adapter_errors_with_its_stderr(tmp_path: Path) -> None:
    adapter = f"exec:{sys.executable} -m conformance.adapter {BROKEN}:hangs_on_decode"
    done = _cli(tmp_path, "--target", adapter, "--only", "WIRE-1", "--call-timeout", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "WIRE-1   error" in done.stdout, done.stdout
    assert "no answer to ls.decode_request within 2.0 s" in done.stdout
    assert "the run stopped at example 1, unshrunk" in done.stdout  # one timeout waited out, not dozens
    assert "hanging on " in done.stdout  # the adapter's stderr tail


def test_an_adapter_answering_undeclared_fields_errors_showing_the_answer(tmp_path: Path) -> None:
    adapter = f"exec:{sys.executable} -m conformance.adapter {BROKEN}:invents_zero_counters"
    done = _cli(tmp_path, "--target", adapter, "--only", "IMG-1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "IMG-1    error" in done.stdout, done.stdout
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "outside its schema" in report
    assert '"attached": 0' in report  # the offending answer


# ---------------------------------------------------------------------------- real defects fail


def test_a_target_rejecting_every_valid_request_fails_wire_1() -> None:
    result = _run("WIRE-1", "rejects_everything")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "a valid client encoding was rejected" in result.message
    assert result.case is not None


def test_a_double_billing_target_fails_off_4() -> None:
    result = _run("OFF-4", "double_bills")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "billed more than once" in result.message


def test_distinct_failures_are_all_reported_each_with_its_minimal_case() -> None:
    result = run_on(f"{BROKEN}:two_decoder_bugs", "WIRE-1", shrink=True)
    assert result.status == Status.FAIL
    assert len(result.failures) == 2, [f.message for f in result.failures]
    by_method = {f.case["method"]: f for f in result.failures if f.case is not None}
    assert set(by_method) == {"SendUserCascadeMessage", "StartCascade"}
    assert "was rejected" in by_method["SendUserCascadeMessage"].message
    assert "decoded fields differ" in by_method["StartCascade"].message
    assert result.line == "fail (2 distinct failures)"


def test_the_cli_saves_and_shows_every_distinct_failure(tmp_path: Path) -> None:
    done = _cli(tmp_path, "--target", f"{BROKEN}:two_decoder_bugs", "--only", "WIRE-1", shrink=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fail (2 distinct failures)" in done.stdout
    cases = sorted((tmp_path / "report" / "cases").glob("*.json"))
    assert [c.name for c in cases] == ["wire-1-2.json", "wire-1.json"]
    methods = {json.loads(c.read_text(encoding="utf-8"))["case"]["method"] for c in cases}
    assert methods == {"SendUserCascadeMessage", "StartCascade"}
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "Failure 1 of 2" in report
    assert "Failure 2 of 2" in report
    assert report.count(f"{sys.executable} -m conformance.cli replay ") == 2  # as it was started
    junit = (tmp_path / "report" / "junit.xml").read_text(encoding="utf-8")
    assert "2 distinct failures" in junit
    for case in cases:
        replayed = subprocess.run(
            [*CLI, "replay", str(case), "--target", f"{BROKEN}:two_decoder_bugs", "--report", str(tmp_path / "r")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
        assert "WIRE-1   fail" in replayed.stdout


# ---------------------------------------------------------------------------- no false failures


@pytest.mark.parametrize("invariant", ["OFF-2", "OFF-3", "OFF-4"])
def test_a_target_reporting_null_offsets_but_reading_correctly_passes(invariant: str) -> None:
    result = _run(invariant, "reports_null_offsets")
    assert result.status == Status.PASS, (result.status, result.message, result.case)


def test_a_target_that_never_resumes_is_not_checkable_on_img_6() -> None:
    result = _run("IMG-6", "never_resumes")
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "never resumed turn 1's cascade" in result.message
    assert (result.examples, result.unjudged) == (0, EXAMPLES)


# ---------------------------------------------------------------------------- fields a target cannot give


@pytest.mark.parametrize("invariant", ["IMG-3", "IMG-5", "IMG-7", "IMG-8"])
def test_a_target_without_counters_gets_partial_passes(invariant: str) -> None:
    result = _run(invariant, "without_counters")
    assert result.status == Status.PARTIAL, (result.status, result.message)
    assert result.message == "partial: history-image counters (attached, drops) not exposed by the target"
    assert result.line.startswith("pass (partial: ")


@pytest.mark.parametrize("invariant", ["IMG-1", "IMG-2"])
def test_invariants_that_need_no_counters_pass_fully_without_them(invariant: str) -> None:
    assert _run(invariant, "without_counters").status == Status.PASS


def test_an_invariant_about_the_counters_is_not_checkable_without_them() -> None:
    result = _run("IMG-4", "without_counters")
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "does not expose the history-image counters" in result.message


def test_undeclared_result_fields_are_an_error_not_silently_used() -> None:
    result = _run("IMG-3", "invents_zero_counters")
    assert result.status == Status.ERROR, (result.status, result.message)
    assert "outside its schema" in result.message
    assert "observes" in result.message


def test_unknown_capabilities_are_refused_when_the_target_loads() -> None:
    with pytest.raises(TargetSpecError, match=r"bad capabilities for engine\.build_send_request.*'observe'"):
        load_target(f"{BROKEN}:unknown_capability")


def test_partial_passes_show_in_the_run_line_the_report_and_junit(tmp_path: Path) -> None:
    done = _cli(tmp_path, "--target", f"{BROKEN}:without_counters", "--only", "IMG-3,IMG-4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "IMG-3    pass (partial: history-image counters" in done.stdout
    assert "IMG-4    not checkable" in done.stdout
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| IMG-3 | pass (partial: history-image counters (attached, drops) not exposed by the target) |" in report
    junit = (tmp_path / "report" / "junit.xml").read_text(encoding="utf-8")
    assert 'value="pass (partial: history-image counters' in junit


# ---------------------------------------------------------------------------- gateways (SO, ACC)


@pytest.mark.parametrize(
    ("invariant", "factory", "reason"),
    [
        ("ACC-1", "gateway_without_cache", "never answered a repeated request from a cache"),
        ("ACC-2", "gateway_without_cache", "never answered a repeated request from a cache"),
        ("ACC-1", "gateway_without_ledger", "it lacks gateway.ledger"),
        ("ACC-3", "gateway_without_ledger", "it lacks gateway.ledger"),
    ],
)
def test_a_gateway_lacking_a_cache_or_a_ledger_is_not_checkable_there(
    invariant: str, factory: str, reason: str
) -> None:
    result = _run(invariant, factory)
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert reason in result.message


def test_a_gateway_without_a_cache_still_keeps_its_ledger_equal_to_the_wire() -> None:
    result = _run("ACC-3", "gateway_without_cache")
    assert result.status == Status.PASS, (result.status, result.message)


def test_a_gateway_without_a_ledger_passes_so_2_partially() -> None:
    result = _run("SO-2", "gateway_without_ledger")
    assert result.status == Status.PARTIAL, (result.status, result.message)
    assert "the ledger (usage of the violating turn)" in result.message


@pytest.mark.parametrize("invariant", ["SO-1", "SO-2"])
def test_a_gateway_streaming_violations_fails_so(invariant: str) -> None:
    result = _run(invariant, "streams_violations")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert result.failures
    assert all(f.case is not None and f.case["stream"] for f in result.failures)


def test_a_gateway_streaming_violations_still_passes_the_tool_call_rule() -> None:
    assert _run("SO-4", "streams_violations").status == Status.PASS

"""ATT verdicts through the real runner: broken sessions (tests/support/broken_sessions.py) get the
verdict their defect deserves, and no more."""

from __future__ import annotations

import pytest

from conformance.runner import Status
from tests.support.verdicts import run_on

BROKEN = "python:tests.support.broken_sessions"


@pytest.mark.parametrize("invariant", ["ATT-2", "ATT-6"])
def test_a_session_clearing_images_after_a_build_fails(invariant: str) -> None:
    result = run_on(f"{BROKEN}:clears_after_build", invariant)
    assert result.status == Status.FAIL, (result.status, result.message)
    assert result.failures


def test_a_session_clearing_images_after_a_build_still_lowers_one_build_right() -> None:
    """A single build of a fresh history is right; only what comes after it is wrong."""
    assert run_on(f"{BROKEN}:clears_after_build", "ATT-3").status == Status.PASS


def test_a_session_forgetting_its_history_on_restart_fails_att_1() -> None:
    result = run_on(f"{BROKEN}:forgets_on_restart", "ATT-1")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "function_call_output call ids []" in result.message or "tool messages answer []" in result.message


def test_a_view_printing_image_bytes_fails_att_7() -> None:
    result = run_on(f"{BROKEN}:shows_the_bytes", "ATT-7")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "shows image data" in result.message


@pytest.mark.parametrize("invariant", ["ATT-5", "ATT-7"])
def test_a_session_without_views_cannot_check_what_needs_them(invariant: str) -> None:
    result = run_on(f"{BROKEN}:without_views", invariant)
    assert result.status == Status.NOT_CHECKABLE, (result.status, result.message)
    assert "session.views" in result.message


FAULTS = "python:tests.conformance.verdicts.log_faults_support"


def test_a_session_keeping_a_round_its_log_never_wrote_fails_att_1() -> None:
    result = run_on(f"{FAULTS}:keeps_the_unlogged_round", "ATT-1")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "whose log write failed, changed the history" in result.message
    assert result.case is not None
    assert result.case["fail_round"] is not None


def test_a_session_answering_success_for_a_failed_log_write_fails_att_1() -> None:
    result = run_on(f"{FAULTS}:swallows_the_failure", "ATT-1")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "answered success although its log write failed" in result.message


def test_a_session_that_cannot_fail_a_log_write_passes_att_1_partially() -> None:
    """Never sent the fault (its session.commit would raise on it), judged on everything else."""
    result = run_on(f"{FAULTS}:cannot_fail_a_log_write", "ATT-1")
    assert result.status == Status.PARTIAL, (result.status, result.message)
    assert "a failing session-log write (session.commit's fail_log_write) not exposed" in result.message

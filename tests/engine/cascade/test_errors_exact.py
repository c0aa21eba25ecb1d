"""The Cascade client's typed errors and the text rules of wire.md section 4 (rejection classes and
the transport failures that reset the LS session's warm-up)."""

from __future__ import annotations

import pytest

from engine.cascade.errors import (
    CascadeError,
    CascadeModelError,
    CascadeStallError,
    EmptyCascadeIdError,
    LsCallError,
    RejectionClass,
    ResumeRejectedError,
    classify_rejection,
    resets_warmup,
)


@pytest.mark.parametrize(
    "message",
    [
        "pending stream has been canceled",
        "read ECONNRESET",
        "ERR_HTTP2_STREAM_ERROR",
        "Session closed by peer",
        "stream closed",
        "Panel State not found",
    ],
)
def test_transport_failures_reset_the_warmup(message: str) -> None:
    assert resets_warmup(message) is True


@pytest.mark.parametrize("message", ["", "deadline exceeded", "untrusted workspace", "cascade not found"])
def test_other_failures_keep_the_warmup(message: str) -> None:
    assert resets_warmup(message) is False


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("not_found: panel state not found", RejectionClass.PANEL_MISSING),
        ("not_found: cascade trajectory has been expired by ttl", RejectionClass.CASCADE_EXPIRED),
        ("Trajectory not-found", RejectionClass.CASCADE_EXPIRED),
        ("failed_precondition: Untrusted Workspace", RejectionClass.UNTRUSTED_WORKSPACE),
        ("workspace /tmp/x is not trusted", RejectionClass.UNTRUSTED_WORKSPACE),
        ("internal error", None),
    ],
)
def test_rejection_classes_from_the_message_text(message: str, expected: RejectionClass | None) -> None:
    assert classify_rejection(message) is expected


def test_a_fresh_error_names_no_cascade_and_keeps_the_reuse_entry() -> None:
    error = CascadeError("boom")
    assert (str(error), error.message, error.kind) == ("boom", "boom", "cascade_error")
    assert error.cascade_id is None
    assert error.session_id is None
    assert error.reuse_entry_invalidated is False


def test_an_ls_call_error_carries_the_ls_message() -> None:
    error = LsCallError("SendUserCascadeMessage", "NOT_FOUND", "panel state not found")
    assert str(error) == "SendUserCascadeMessage failed: panel state not found"
    assert (error.method, error.code, error.details) == ("SendUserCascadeMessage", "NOT_FOUND", "panel state not found")
    assert error.rejection is RejectionClass.PANEL_MISSING
    assert error.timed_out is False
    assert error.cascade_id is None


def test_an_ls_call_error_without_details_names_the_status() -> None:
    error = LsCallError("StartCascade", "DEADLINE_EXCEEDED", "")
    assert str(error) == "StartCascade failed: gRPC status DEADLINE_EXCEEDED"
    assert error.details == ""
    assert error.rejection is None
    assert error.timed_out is True


def test_the_specific_errors_keep_their_message_and_context() -> None:
    empty = EmptyCascadeIdError()
    assert (str(empty), empty.message, empty.kind) == (
        "StartCascade returned empty cascade_id",
        "StartCascade returned empty cascade_id",
        "empty_cascade_id",
    )
    model = CascadeModelError("model refused", step_index=3)
    assert (str(model), model.kind, model.step_index) == ("model refused", "model_error", 3)
    stall = CascadeStallError("no output", stage="cold")
    assert (str(stall), stall.message, stall.kind, stall.stage) == ("no output", "no output", "transient_stall", "cold")
    last = LsCallError("SendUserCascadeMessage", "NOT_FOUND", "cascade not found")
    rejected = ResumeRejectedError(
        "gave up", rejections=(RejectionClass.CASCADE_EXPIRED, RejectionClass.PANEL_MISSING), last=last
    )
    assert (str(rejected), rejected.message, rejected.kind) == ("gave up", "gave up", "resume_rejected")
    assert rejected.rejections == (RejectionClass.CASCADE_EXPIRED, RejectionClass.PANEL_MISSING)
    assert rejected.last is last

"""Typed errors of the Cascade client, and the text classification of rejected resumes.

Real gateways never look at the numeric gRPC code of a failed LS call: every decision is made on
the message text (wire.md section 1.4 and section 4). :func:`classify_rejection` applies the three
regex families of section 4, case-insensitively, in the order the reference client checks them.
"""

from __future__ import annotations

import re
from enum import Enum


class RejectionClass(Enum):
    """Why the LS refused a Send (or a StartCascade): each class has the same recovery."""

    PANEL_MISSING = "panel_missing"
    CASCADE_EXPIRED = "cascade_expired"
    UNTRUSTED_WORKSPACE = "untrusted_workspace"


_PANEL_MISSING = re.compile(r"panel state not found|not_found.*panel", re.IGNORECASE)
_CASCADE_EXPIRED = re.compile(
    r"not_found.*(?:cascade|trajectory)|(?:cascade|trajectory).*not[ _-]?found|expired.*cascade|unknown.*cascade",
    re.IGNORECASE,
)
_UNTRUSTED_WORKSPACE = re.compile(r"untrusted workspace|workspace.*not.*trusted", re.IGNORECASE)
# Transport failures after which the reference client drops its pooled session and warm-up state.
_TRANSPORT_RESET = re.compile(
    r"pending stream has been canceled|ECONNRESET|ERR_HTTP2|session closed|stream closed|panel state", re.IGNORECASE
)


def classify_rejection(message: str) -> RejectionClass | None:
    """The rejection class a failed call's message text belongs to, or ``None`` (not recoverable).

    Panel loss is checked first, then expiry, then trust: a text matching several families gets
    the first one (all three recover the same way; only expiry invalidates the reuse entry).
    """
    if _PANEL_MISSING.search(message):
        return RejectionClass.PANEL_MISSING
    if _CASCADE_EXPIRED.search(message):
        return RejectionClass.CASCADE_EXPIRED
    if _UNTRUSTED_WORKSPACE.search(message):
        return RejectionClass.UNTRUSTED_WORKSPACE
    return None


def resets_warmup(message: str) -> bool:
    """True when a failed call's text means the LS session (and its warm-up) should be redone."""
    return _TRANSPORT_RESET.search(message) is not None


class CascadeError(Exception):
    """Base of every error the Cascade client raises.

    ``cascade_id`` / ``session_id`` name the cascade the failure happened on (when one was open);
    ``reuse_entry_invalidated`` tells the caller to drop its pool entry (an expiry was seen).
    """

    kind = "cascade_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.cascade_id: str | None = None
        self.session_id: str | None = None
        self.reuse_entry_invalidated = False


class LsCallError(CascadeError):
    """An RPC to the LS failed: ``details`` is the LS's own message (``grpc-message``), ``code``
    the gRPC status name (informational only), ``method`` the RPC."""

    kind = "ls_error"

    def __init__(self, method: str, code: str, details: str) -> None:
        super().__init__(f"{method} failed: {details or f'gRPC status {code}'}")
        self.method = method
        self.code = code
        self.details = details

    @property
    def rejection(self) -> RejectionClass | None:
        return classify_rejection(self.details)

    @property
    def timed_out(self) -> bool:
        return self.code == "DEADLINE_EXCEEDED"


class EmptyCascadeIdError(CascadeError):
    """StartCascade answered without a cascade id."""

    kind = "empty_cascade_id"

    def __init__(self) -> None:
        super().__init__("StartCascade returned empty cascade_id")


class CascadeModelError(CascadeError):
    """The trajectory carried an error step (type 17): the model refused or failed the turn.

    Not the account's fault (``kind`` ``model_error``)."""

    kind = "model_error"

    def __init__(self, message: str, *, step_index: int) -> None:
        super().__init__(message)
        self.step_index = step_index


class CascadeStallError(CascadeError):
    """The planner stalled: no output at all (cold) or too little before it stopped growing (warm)."""

    kind = "transient_stall"

    def __init__(self, message: str, *, stage: str) -> None:
        super().__init__(message)
        self.stage = stage


class ResumeRejectedError(CascadeError):
    """The LS kept rejecting the turn after every allowed recovery; ``rejections`` lists the
    class of each rejection seen and the last LS error is the ``__cause__``."""

    kind = "resume_rejected"

    def __init__(self, message: str, *, rejections: tuple[RejectionClass, ...], last: LsCallError) -> None:
        super().__init__(message)
        self.rejections = rejections
        self.last = last

"""The errors that cross the kit: a target misbehaving (:class:`TargetError`, :class:`TargetHung`), a
``--target`` string that is none (:class:`TargetSpecError`), and an example that cannot be judged
(:class:`PreconditionNotMet` and its kinds), plus :func:`excerpt`, which shortens a big answer for an
error message. Nothing here imports the rest of the kit, so every module may import it at its top."""

from __future__ import annotations

from typing import Any


class TargetError(Exception):
    """The target misbehaved: crashed, timed out, or answered outside the protocol."""


class TargetHung(TargetError):
    """The target gave no answer within the per-call timeout. Every further call may wait as long,
    so the runner stops the property at this example (no more examples, no shrinking)."""


class GatewayGone(BaseException):
    """The gateway the kit launched is no longer running (it exited, or never held its port while
    another process answered there). Nothing it answered since can be trusted, so the run stops with
    exit code 2 and no verdict for the invariant in progress. A BaseException, like an interrupt, so
    neither a property nor Hypothesis takes it for a verdict."""


class TargetSpecError(ValueError):
    """The ``--target`` string cannot be understood."""


class PreconditionNotMet(Exception):
    """This example cannot judge the invariant: the target never did what the statement is about, or
    (raised by a target's operation) it cannot be asked for this example at all, e.g. a black-box
    gateway launched with other limits than the example sets."""

    # How the runner counts the example: ``unmet`` (the precondition), ``refused`` (the target refused
    # the input), ``transient`` (rate-limited past the wait budget), ``declined`` (a feature the target
    # says it does not implement). None of them is judged; a property whose examples all end so is
    # not checkable, with the reasons.
    kind = "unmet"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InputRefused(PreconditionNotMet):
    """The target refused the example's input (a 4xx answer): its right, recorded, not judged."""

    kind = "refused"


class TransientRefusal(PreconditionNotMet):
    """The target kept rate-limiting (429, 503) past the kit's wait budget: the example is not judged."""

    kind = "transient"


class FeatureDeclined(PreconditionNotMet):
    """The target says it does not implement what the example needs (501): not checkable for it."""

    kind = "declined"


def excerpt(value: Any) -> Any:
    """``value`` with long strings shortened, so an error shows the shape of a big answer."""
    if isinstance(value, str) and len(value) > 80:
        return f"{value[:40]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: excerpt(v) for k, v in value.items()}
    if isinstance(value, list):
        return [excerpt(v) for v in value[:20]] + ([f"... ({len(value)} items)"] if len(value) > 20 else [])
    return value

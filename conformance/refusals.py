"""What a gateway's HTTP answer says about the example rather than about the invariant.

Real gateways refuse input they do not support (4xx), rate-limit (429, or 503, with a wait hint)
and decline features they do not implement (501). None of that is a failure of an invariant: the
example is left unjudged, counted by kind, with the answer as the reason
(:class:`~conformance.errors.PreconditionNotMet` and its kinds).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any

from conformance.errors import FeatureDeclined, InputRefused, PreconditionNotMet, TransientRefusal

# Statuses that say "later": the kit waits as the gateway asks (within a budget) and tries again.
RATE_LIMITED = (429, 503)
# A 429 or 503 without a hint is tried again after this long.
DEFAULT_WAIT_S = 1.0
# An error code that is the answer a property judges, never a refusal of the input.
_JUDGED_CODES = frozenset({"STRUCTURED_OUTPUT_NOT_CONFORMING"})


def wait_hint(status: int, headers: Mapping[str, str], body: Any) -> float | None:
    """Seconds the gateway asks the client to wait before trying again; None when ``status`` is not
    a rate limit. ``Retry-After`` (seconds or an HTTP date) first, then ``retry_after_ms`` or
    ``retry_after`` (seconds) in the body or its ``error`` object; else :data:`DEFAULT_WAIT_S`."""
    if status not in RATE_LIMITED:
        return None
    header = _header(headers, "retry-after")
    if header is not None:
        seconds = _retry_after_header(header)
        if seconds is not None:
            return seconds
    for holder in (body, body.get("error") if isinstance(body, dict) else None):
        if not isinstance(holder, dict):
            continue
        millis = _number(holder.get("retry_after_ms"))
        if millis is not None:
            return millis / 1000
        seconds = _number(holder.get("retry_after"))
        if seconds is not None:
            return seconds
    return DEFAULT_WAIT_S


def refusal(what: str, status: int, body: Any, *, waited_s: float = 0.0) -> PreconditionNotMet | None:
    """The exception that leaves the example unjudged when ``status`` refuses it; None for an answer
    the property judges (a success, a 5xx other than 501 and 503, a typed error a property is about)."""
    shown = f"{what} answered {status}: {excerpt_body(body)}"
    if status in RATE_LIMITED:
        return TransientRefusal(f"{shown} (still, after waiting {waited_s:.1f} s; --rate-limit-wait sets the budget)")
    if status == 501:
        return FeatureDeclined(shown)
    if 400 <= status < 500 and error_code(body) not in _JUDGED_CODES:
        return InputRefused(shown)
    return None


def error_code(body: Any) -> Any:
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def excerpt_body(body: Any, limit: int = 240) -> str:
    """The answer's error message when it has one, else its text, cut to ``limit`` characters."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        text = error["message"]
    elif isinstance(body, str):
        text = body
    else:
        text = json.dumps(body, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _retry_after_header(value: str) -> float | None:
    seconds = _number(value.strip())
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if number >= 0 and number == number and number != float("inf") else None

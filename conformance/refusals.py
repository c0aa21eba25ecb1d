"""What a gateway's HTTP answer says about the example rather than about the invariant.

Real gateways refuse input they do not support (4xx), rate-limit (429, or 503, with a wait hint)
and decline features they do not implement (501). None of that is a failure of an invariant: the
example is left unjudged, counted by kind, with the answer as the reason
(:class:`~conformance.errors.PreconditionNotMet` and its kinds).
"""

from __future__ import annotations

import email.utils
import json
import re
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
    """Seconds the gateway asks the client to wait before trying again; None when its answer is no
    rate limit. A 429 or 503: ``Retry-After`` (seconds or an HTTP date) first, then ``retry_after_ms``
    or ``retry_after`` (seconds) in the body or its ``error`` object; else :data:`DEFAULT_WAIT_S`. A 2xx
    whose body or stream (``body``: the events' data) carries a transient error
    (:func:`transient_error`): the wait it states, else :data:`DEFAULT_WAIT_S`."""
    if 200 <= status < 300:
        error = transient_error(body)
        return _wait_of(error) if error is not None else None
    if status not in RATE_LIMITED:
        return None
    header = _header(headers, "retry-after")
    if header is not None:
        seconds = _retry_after_header(header)
        if seconds is not None:
            return seconds
    for holder in (body, body.get("error") if isinstance(body, dict) else None):
        stated = _stated_wait(holder) if isinstance(holder, dict) else None
        if stated is not None:
            return stated
    return DEFAULT_WAIT_S


def _stated_wait(holder: Mapping[str, Any]) -> float | None:
    """The wait a body or error object states in ``retry_after_ms`` or ``retry_after`` (seconds)."""
    millis = _number(holder.get("retry_after_ms"))
    if millis is not None:
        return millis / 1000
    return _number(holder.get("retry_after"))


def refusal(what: str, status: int, body: Any, *, waited_s: float = 0.0) -> PreconditionNotMet | None:
    """The exception that leaves the example unjudged when ``status`` refuses it, or a 2xx carries a
    transient error (``body``: a stream's events too); None for an answer the property judges (a
    success, a 5xx other than 501 and 503, a typed error a property is about)."""
    error = transient_error(body) if 200 <= status < 300 else None
    if error is not None:
        return TransientRefusal(
            f"{what} answered {status} with an error inside: {excerpt_body({'error': error})} (still, after waiting "
            f"{waited_s:.1f} s; --rate-limit-wait sets the budget)"
        )
    shown = f"{what} answered {status}: {excerpt_body(body)}"
    if status in RATE_LIMITED:
        return TransientRefusal(f"{shown} (still, after waiting {waited_s:.1f} s; --rate-limit-wait sets the budget)")
    if status == 501:
        return FeatureDeclined(shown)
    if 400 <= status < 500 and error_code(body) not in _JUDGED_CODES:
        return InputRefused(shown)
    return None


# Errors of these types or codes inside a 2xx answer (an error event in a stream, an `error` body) say
# "later", as a 429 does: the gateway's upstream was busy, not the example wrong.
_TRANSIENT_KINDS = frozenset(
    {
        "rate_limit_error",
        "rate_limit_exceeded",
        "rate_limited",
        "overloaded_error",
        "overloaded",
        "server_overloaded",
        "service_unavailable",
        "upstream_unavailable",
        "temporarily_unavailable",
        "queue_timeout",
        "account_queue_timeout",
    }
)
_TRANSIENT_WORDS = re.compile(
    r"rate.?limit|overloaded|temporarily unavailable|try again (?:later|in)|retry (?:in|after)|queue timeout|"
    r"too many requests",
    re.IGNORECASE,
)
_WAIT_IN_TEXT = re.compile(
    r"(?:retry|try again)\D{0,24}?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b", re.IGNORECASE
)


def transient_error(body: Any) -> dict[str, Any] | None:
    """The error object of a 2xx answer that says "later" (``body``: a JSON body, or a stream's event
    data), else None. An error a property judges (its code in the judged ones) never is."""
    for error in _errors_in(body):
        if error_code({"error": error}) in _JUDGED_CODES:
            continue
        kinds = {str(error.get(key, "")).lower() for key in ("type", "code")}
        message = error.get("message")
        if kinds & _TRANSIENT_KINDS or (isinstance(message, str) and _TRANSIENT_WORDS.search(message)):
            return error
    return None


def _errors_in(body: Any) -> list[dict[str, Any]]:
    if isinstance(body, dict):
        error = body.get("error")
        return [error] if isinstance(error, dict) else []
    if isinstance(body, list):  # a stream's events
        found = []
        for data in body:
            try:
                event = json.loads(data) if isinstance(data, str) else None
            except ValueError:
                continue
            found += _errors_in(event)
        return found
    return []


def _wait_of(error: dict[str, Any]) -> float:
    """The wait an error object states: ``retry_after_ms``, ``retry_after``, a number of seconds (or
    milliseconds) its message gives after "retry"; else :data:`DEFAULT_WAIT_S`."""
    stated = _stated_wait(error)
    if stated is not None:
        return stated
    said = _WAIT_IN_TEXT.search(str(error.get("message", "")))
    if said is not None:
        value = float(said.group(1))
        return value / 1000 if said.group(2).lower().startswith("m") else value
    return DEFAULT_WAIT_S


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

"""What a gateway's answer says about the example (refused, rate-limited, declined) rather than about
the invariant: the wait hints real gateways give and the class of each answer."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from conformance.errors import FeatureDeclined, InputRefused, PreconditionNotMet, TransientRefusal
from conformance.refusals import DEFAULT_WAIT_S, excerpt_body, refusal, wait_hint

COOLING = {"error": {"message": "account cooling down", "type": "rate_limit_error", "retry_after_ms": 18250}}


@pytest.mark.parametrize(
    ("status", "headers", "body", "wait"),
    [
        (429, {"Retry-After": "3"}, {}, 3.0),
        (429, {"retry-after": "0.5"}, COOLING, 0.5),  # the header first
        (503, {"Retry-After": "7"}, "busy", 7.0),
        (429, {}, COOLING, 18.25),
        (429, {}, {"retry_after_ms": 250}, 0.25),
        (429, {}, {"error": {"retry_after": 2}}, 2.0),
        (429, {}, {"error": {"retry_after": "4.5"}}, 4.5),
        (429, {}, {"error": {"message": "slow down"}}, DEFAULT_WAIT_S),
        (503, {}, "Service Unavailable", DEFAULT_WAIT_S),
        (429, {"Retry-After": "soon"}, {}, DEFAULT_WAIT_S),
        (429, {}, {"retry_after_ms": -5}, DEFAULT_WAIT_S),  # nonsense is no hint
        (429, {}, {"retry_after_ms": True}, DEFAULT_WAIT_S),
        (429, {}, {"retry_after_ms": float("nan")}, DEFAULT_WAIT_S),
        # A 2xx carrying an error that says "later" (issue 40 §1): the wait it states, never Retry-After.
        (200, {"Retry-After": "3"}, COOLING, 18.25),
        (200, {}, {"error": {"type": "rate_limit_error", "message": "retry in 15 s"}}, 15.0),
        (200, {}, {"error": {"type": "x", "message": "all accounts busy, try again in 250 ms"}}, 0.25),
        (200, {}, {"error": {"message": "Rate limit reached; retry after 3.5 seconds"}}, 3.5),
        (200, {}, {"error": {"code": "overloaded"}}, DEFAULT_WAIT_S),
        (200, {}, ['{"choices": []}', '{"error": {"type": "overloaded_error", "retry_after": 2}}', "[DONE]"], 2.0),
        (200, {}, {"error": {"message": "the upstream model refused", "type": "invalid_request_error"}}, None),
        (200, {}, {"error": {"code": "STRUCTURED_OUTPUT_NOT_CONFORMING", "message": "retry in 2 s"}}, None),
        (200, {}, ['{"choices": []}', "not json", "[DONE]"], None),
        (200, {}, {"choices": []}, None),
        (400, {}, COOLING, None),
        (500, {"Retry-After": "3"}, {}, None),
    ],
)
def test_the_wait_a_rate_limited_answer_asks_for(
    status: int, headers: dict[str, str], body: Any, wait: float | None
) -> None:
    assert wait_hint(status, headers, body) == wait


def test_a_retry_after_date_is_the_time_until_then() -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    wait = wait_hint(429, {"Retry-After": later}, {})
    assert wait is not None
    assert 28 <= wait <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert wait_hint(429, {"Retry-After": past}, {}) == 0.0


@pytest.mark.parametrize(
    ("status", "body", "kind", "reason"),
    [
        (
            400,
            {"error": {"message": "Unsupported sampling parameter(s): seed", "code": "unsupported_parameter"}},
            InputRefused,
            "POST /x answered 400: Unsupported sampling parameter(s): seed",
        ),
        (413, "too   big\nreally", InputRefused, "POST /x answered 413: too big really"),
        (401, {"error": {"message": "bad key"}}, InputRefused, "POST /x answered 401: bad key"),
        (404, {"detail": "no such model"}, InputRefused, 'POST /x answered 404: {"detail": "no such model"}'),
        (499, {}, InputRefused, "POST /x answered 499: {}"),
        (
            501,
            {"error": {"message": "native tool bridge not implemented"}},
            FeatureDeclined,
            "POST /x answered 501: native tool bridge not implemented",
        ),
        (
            429,
            COOLING,
            TransientRefusal,
            "POST /x answered 429: account cooling down (still, after waiting 12.0 s; --rate-limit-wait sets the "
            "budget)",
        ),
        (503, "later", TransientRefusal, None),
    ],
)
def test_a_refusal_leaves_the_example_unjudged_with_the_answer(
    status: int, body: Any, kind: type[PreconditionNotMet], reason: str | None
) -> None:
    found = refusal("POST /x", status, body, waited_s=12.0)
    assert type(found) is kind
    assert found is not None
    assert found.kind == kind.kind
    if reason is not None:
        assert found.reason == reason


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, {"choices": []}),
        (200, ['{"error": {"code": "STRUCTURED_OUTPUT_NOT_CONFORMING", "type": "rate_limit_error"}}']),
        (200, {"error": {"message": "bad key", "type": "authentication_error"}}),
        (399, {}),
        (500, {"error": {"message": "boom"}}),
        (502, {"error": {"code": "upstream_error"}}),
        # The typed error a property is about is judged, whatever its status.
        (400, {"error": {"code": "STRUCTURED_OUTPUT_NOT_CONFORMING"}}),
        (422, {"error": {"code": "STRUCTURED_OUTPUT_NOT_CONFORMING"}}),
    ],
)
def test_answers_a_property_judges_are_no_refusal(status: int, body: Any) -> None:
    assert refusal("POST /x", status, body) is None


def test_a_long_answer_is_cut_for_the_reason() -> None:
    assert excerpt_body("x" * 500, limit=10) == "xxxxxxxxx…"
    assert excerpt_body({"error": {"message": "a\n\tb"}}) == "a b"

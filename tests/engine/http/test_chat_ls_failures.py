"""TURN-3 on the engine's chat front: whatever the LS fails a turn with, the client gets an error (the LS's
rate limit as a 429 with Retry-After), never an empty 200, and the next request is served."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, serve

AFTER = {"chunks": [{"text": "after"}], "records": [{"input_tokens": 2, "output_tokens": 1}]}


def _turn(**failure: Any) -> dict[str, Any]:
    return {"chunks": [{"text": "never delivered"}], **failure}


def _post(served: ServedGateway, stream: bool, text: str = "hi") -> httpx.Response:
    body = {"model": MODEL, "messages": [{"role": "user", "content": text}], "stream": stream}
    headers = {"Authorization": f"Bearer {KEY_A}"}
    return httpx.post(served.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def _stream_error(response: httpx.Response) -> dict[str, Any]:
    """The one error event of a stream (the text polled before the failure may precede it)."""
    events = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    errors: list[dict[str, Any]] = [
        json.loads(e)["error"] for e in events if e != "[DONE]" and "error" in json.loads(e)
    ]
    assert len(errors) == 1, events
    return errors[0]


FAILURES = [
    pytest.param(_turn(fault={"kind": "error", "message": "boom"}), id="send-fails"),
    pytest.param(
        _turn(overrides=[{"rpc": "GetCascadeTrajectorySteps", "call": 0, "error_code": "UNAVAILABLE"}]),
        id="steps-unavailable",
    ),
    pytest.param(
        _turn(
            overrides=[{"rpc": "GetCascadeTrajectory", "call": 0, "error_code": "INTERNAL", "error_message": "%zz ü"}]
        ),
        id="status-internal",
    ),
    pytest.param(
        _turn(overrides=[{"rpc": "GetCascadeTrajectorySteps", "call": 0, "payload_hex": "0a05"}]), id="undecodable"
    ),
]


@pytest.mark.invariant("TURN-3")
@pytest.mark.parametrize("failing", FAILURES)
@pytest.mark.parametrize("stream", [False, True])
def test_an_ls_failure_is_an_error_and_the_next_request_is_served(
    fake: FakeLSThread, served: ServedGateway, failing: dict[str, Any], stream: bool
) -> None:
    play(fake, failing, AFTER)
    response = _post(served, stream)
    if stream:
        assert response.status_code == 200
        error = _stream_error(response)
        assert (error["type"], error["code"]) == ("api_error", "upstream_error")
    else:
        assert response.status_code == 502, response.text
        assert response.json()["error"]["code"] == "upstream_error"
        assert "retry-after" not in response.headers
    following = _post(served, False, "next")
    assert following.status_code == 200
    assert following.json()["choices"][0]["message"]["content"] == "after"


@pytest.mark.invariant("TURN-3")
@pytest.mark.parametrize(
    "failure",
    [{"http_status": 503}, {"http_status": 500}, {"cut_frame": True}],
    ids=["http-503", "http-500", "cut-frame"],
)
@pytest.mark.parametrize("rpc", ["GetCascadeTrajectorySteps", "GetCascadeTrajectory"])
@pytest.mark.parametrize("stream", [False, True])
def test_an_http_level_ls_failure_is_an_error(
    fake: FakeLSThread, failure: dict[str, Any], rpc: str, stream: bool
) -> None:
    served = serve(fake, over_h2=True)
    try:
        play(fake, _turn(overrides=[{"rpc": rpc, "call": 0, **failure}]), AFTER)
        response = _post(served, stream)
        if stream:
            assert _stream_error(response)["code"] == "upstream_error"
        else:
            assert response.status_code == 502, response.text
        assert _post(served, False, "next").json()["choices"][0]["message"]["content"] == "after"
    finally:
        served.stop()


@pytest.mark.invariant("TURN-3")
@pytest.mark.parametrize("stream", [False, True])
def test_the_ls_rate_limit_reaches_the_client_as_a_rate_limit(
    fake: FakeLSThread, served: ServedGateway, stream: bool
) -> None:
    override = {"rpc": "GetCascadeTrajectorySteps", "call": 0, "error_code": "RESOURCE_EXHAUSTED"}
    play(fake, _turn(overrides=[override]), AFTER)
    response = _post(served, stream)
    if stream:
        error = _stream_error(response)
        assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limited")
        return
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["type"] == "rate_limit_error"

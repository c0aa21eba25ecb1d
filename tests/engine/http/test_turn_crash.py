"""A turn that crashes inside the gateway (not an LS error: a bug) is one clean OpenAI-style error on every
front and shape, with its traceback in the log and never in the answer; the next request is served."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.http.gateway import ServedGateway
from engine.http.turn_events import CRASH_MESSAGE
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, MODEL, play, serve

ERROR = {"code": "internal_error", "message": CRASH_MESSAGE}


@pytest.fixture
def crashing(fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedGateway]:
    served = serve(fake)
    real_run = served.gateway.service.run
    calls = 0

    def run(*args: Any, **kwargs: Any) -> None:  # the first turn crashes, later ones run
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom: a bug inside the turn")
        real_run(*args, **kwargs)

    monkeypatch.setattr(served.gateway.service, "run", run)
    yield served
    served.stop()


def _post(served: ServedGateway, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(served.url + path, json=body, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30)


def _data(text: str) -> list[Any]:
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"model": MODEL, "input": "hi", "store": False},
}


@pytest.mark.parametrize("path", sorted(BODIES))
def test_a_crashed_plain_turn_is_a_500_internal_error_and_the_next_turn_runs(
    fake: FakeLSThread, crashing: ServedGateway, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    play(fake, {"chunks": [{"text": "fine"}]})
    with caplog.at_level(logging.ERROR, logger="engine.http.turn_events"):
        answer = _post(crashing, path, BODIES[path])
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert {key: error[key] for key in ("code", "message")} == ERROR
    assert error["type"] == "api_error"
    assert "boom" not in answer.text
    assert "Traceback" not in answer.text
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info and "turn crashed" in r.getMessage()]
    assert [str(exc) for exc in logged] == ["boom: a bug inside the turn"]
    again = _post(crashing, path, BODIES[path])
    assert again.status_code == 200, again.text
    assert "fine" in again.text


def test_a_crashed_chat_stream_ends_with_one_error_frame_and_no_done(crashing: ServedGateway) -> None:
    answer = _post(crashing, "/v1/chat/completions", {**BODIES["/v1/chat/completions"], "stream": True})
    assert answer.status_code == 200
    frames = _data(answer.text)
    assert "[DONE]" not in frames
    assert [frame["error"]["code"] for frame in frames if "error" in frame] == ["internal_error"]
    assert "boom" not in answer.text


def test_a_crashed_responses_stream_fails_the_response(crashing: ServedGateway) -> None:
    answer = _post(crashing, "/v1/responses", {**BODIES["/v1/responses"], "stream": True})
    assert answer.status_code == 200
    kinds = [frame["type"] for frame in _data(answer.text)]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-2:] == ["error", "response.failed"]
    failed = _data(answer.text)[-1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "internal_error", "message": CRASH_MESSAGE}
    assert "boom" not in answer.text

"""TURN-2 on the engine's chat front: a turn that fails after some of its text is neither cached nor
committed to the pool; the next turn starts a fresh cascade with the whole history."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from fakels.server import FakeLSThread
from tests.engine.http.conftest import MODEL, play, sends

USAGE = {"input_tokens": 4, "output_tokens": 2}
OK = {"chunks": [{"text": "fine"}], "records": [USAGE]}
FAILURES = [
    pytest.param(
        {"chunks": [{"text": "half an answer"}, {"error": "model stopped"}], "records": [USAGE]}, id="error-step"
    ),
    pytest.param(
        {
            "chunks": [{"text": "half an answer"}, {"text": " and more", "delay_s": 0.05}],
            "overrides": [{"rpc": "GetCascadeTrajectorySteps", "call": 2, "error_code": "UNAVAILABLE"}],
        },
        id="polling-fails",
    ),
]
QUESTION: list[Any] = [{"role": "user", "content": "first question"}]


@pytest.fixture(params=FAILURES)
def failed(request: pytest.FixtureRequest, fake: FakeLSThread, client: openai.OpenAI) -> openai.OpenAI | None:
    """A client whose first question the LS failed after some of its text (the next turns answer "fine").
    That the client was told of the failure is each test's first assertion: a fixture that asserted would
    turn a defect into a setup error, which no mutation run counts as a catch."""
    play(fake, request.param, OK, OK)
    try:
        client.chat.completions.create(model=MODEL, messages=QUESTION)
    except openai.APIStatusError:
        return client
    return None  # the failing turn was answered as a success


def _told(client: openai.OpenAI | None) -> openai.OpenAI:
    assert client is not None, "the LS failed the first turn, and the client was answered a success"
    return client


@pytest.mark.invariant("TURN-2")
def test_the_next_turn_after_a_failed_one_starts_fresh_with_the_whole_history(
    fake: FakeLSThread, failed: openai.OpenAI | None
) -> None:
    following = [*QUESTION, {"role": "assistant", "content": "half an answer"}, {"role": "user", "content": "and?"}]
    _told(failed).chat.completions.create(model=MODEL, messages=following)
    failing, next_turn = sends(fake)
    assert next_turn.request["cascade_id"] != failing.request["cascade_id"]
    text = next_turn.request["items"][0]["text"]
    assert "first question" in text
    assert "and?" in text


@pytest.mark.invariant("TURN-2")
def test_a_failed_request_sent_again_reaches_the_ls(fake: FakeLSThread, failed: openai.OpenAI | None) -> None:
    again = _told(failed).chat.completions.create(model=MODEL, messages=QUESTION)
    assert again.choices[0].message.content == "fine"
    assert len(sends(fake)) == 2

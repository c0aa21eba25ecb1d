"""A gateway that closes an idle kept-alive connection just as the kit reuses it (Node servers do after
about 5 s) gets the request once more on a fresh connection: no byte of an answer arrived, so it is no
verdict. A gateway that closes a fresh connection too without answering is the target's failure."""

from __future__ import annotations

import pytest

from conformance.errors import TargetError
from conformance.targets import HttpOptions, HttpTarget
from conformance.targets._scope import Caller
from tests.support.idle_closing import COMPLETION, idle_closing_server

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_a_chat_on_a_connection_the_gateway_closed_is_sent_again_on_a_fresh_one() -> None:
    with idle_closing_server() as (url, log):
        target = HttpTarget(url, HttpOptions())  # the probe at open takes the first connection
        try:
            for _ in range(3):
                assert target.call("gateway.chat", request=REQUEST, api_key="k") == {"status": 200, "body": COMPLETION}
        finally:
            target.close()
    assert log == [
        "answered /v1/models",
        *["closed /v1/chat/completions", "answered /v1/chat/completions"] * 3,
    ]


def test_a_store_request_on_a_closed_connection_is_sent_again_too() -> None:
    with idle_closing_server() as (url, log):
        target = HttpTarget(url, HttpOptions())
        try:
            assert target._send("GET", "/v1/responses/r", Caller("k", None)).status_code == 200
        finally:
            target.close()
    assert log == ["answered /v1/models", "closed /v1/responses/r", "answered /v1/responses/r"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_gateway_that_never_answers_fails_after_one_more_try(stream: bool) -> None:
    with idle_closing_server(answer_nothing=True) as (url, log):
        target = HttpTarget(url, HttpOptions())
        log.clear()  # the probe at open is answered; nothing after it is
        try:
            with pytest.raises(TargetError) as info:
                target.call("gateway.chat", request=REQUEST | {"stream": stream}, api_key="k")
        finally:
            target.close()
    assert log == ["closed /v1/chat/completions"] * 2
    assert str(info.value).startswith(
        f"{url}: POST /v1/chat/completions failed: the gateway closed the connection without answering, twice ("
    )

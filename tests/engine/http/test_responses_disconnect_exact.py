"""A streamed Responses turn whose client goes away stops upstream: the turn is aborted, so it records no usage
and stores nothing. Driven through the ASGI interface, which can disconnect after the first streamed event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from engine.http.gateway import Gateway
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, asgi_http_scope, play
from tests.engine.http.responses_exact_support import MODEL, gateway_client, headers
from tests.support.fake_ls import StartFakeLs

USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}
NO_TOKENS = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF)


def _stream_then_leave(gateway: Gateway, body: dict[str, Any]) -> list[bytes]:
    """POST ``body`` to /v1/responses; the client disconnects once the first body bytes arrive. Returns the
    body bytes sent, once the turn has ended."""
    request = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    chunks: list[bytes] = []

    async def drive() -> None:
        first_bytes = asyncio.Event()

        async def receive() -> MutableMapping[str, Any]:
            if request:
                return request.pop(0)
            await first_bytes.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                chunks.append(message["body"])
                first_bytes.set()

        await gateway.app(asgi_http_scope("POST", "/v1/responses", headers()), receive, send)
        # The app may return before its worker thread ends; the loop stays open (the turn emits into it) until
        # the turn has recorded its request, aborted or not.
        deadline = asyncio.get_running_loop().time() + 10
        while not gateway.ledger.document()["rows"]:
            assert asyncio.get_running_loop().time() < deadline, "the turn never ended"
            await asyncio.sleep(0.01)

    asyncio.run(drive())
    return chunks


def test_a_client_leaving_a_streamed_turn_aborts_it_upstream(fake: FakeLSThread) -> None:
    # The answer's second chunk comes 1.5 s late: a turn that is not aborted waits for it and records usage.
    play(fake, {"chunks": [{"text": "first"}, {"text": " late", "delay_s": 1.5}], "records": [USAGE]})
    with gateway_client(fake) as (gateway, _):
        chunks = _stream_then_leave(gateway, {"model": MODEL, "input": "q", "stream": True})
        assert b"response.created" in chunks[0]
        assert not any(b"response.completed" in chunk for chunk in chunks)
        assert gateway.ledger.document()["tokens"] == NO_TOKENS
        created = json.loads(chunks[0].decode().split("data: ", 1)[1].split("\n", 1)[0])
        assert gateway.store is not None
        assert gateway.store.get(created["response"]["id"], "caller-a").reason == "not_found"

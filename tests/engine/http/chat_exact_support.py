"""A whole reference gateway driven in process (starlette's TestClient, no socket for HTTP) in front of a
fake LS on loopback, for the exact tests of the chat front (test_*_exact.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
from starlette.testclient import TestClient

from engine.cascade.polling import PollSettings
from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig
from engine.store import StoreLimits
from fakels.journal import JournalEntry
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

CSRF = "chat-exact-csrf"
KEY_A, KEY_B = "sk-exact-alpha", "sk-exact-beta"
MODEL = "claude-sonnet-4-6"
CHAT = "/v1/chat/completions"


@contextmanager
def gateway_client(
    fake: FakeLSThread,
    *,
    api_keys: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    native_mode: bool = False,
    store: str = "memory",
    store_limits: StoreLimits | None = None,
    session_log: str | None = None,
    **settings: Any,
) -> Iterator[tuple[Gateway, TestClient]]:
    """A gateway on ``fake`` (keys KEY_A → caller-a, KEY_B → caller-b unless given) and a client for its app;
    the response store and session log as the serve command's options name them."""
    keys = {KEY_A: "caller-a", KEY_B: "caller-b"} if api_keys is None else api_keys
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=CSRF,
        http=HttpSettings(api_keys=keys, **settings),
        poll=PollSettings(poll_interval_s=0.002),
        env=env or {},
        native_mode=native_mode,
        store=store,
        store_limits=store_limits or StoreLimits(),
        session_log=session_log,
    )
    gateway = Gateway(config)
    try:
        with TestClient(gateway.app, base_url="http://127.0.0.1") as client:
            yield gateway, client
    finally:
        gateway.close()


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    """One fake LS per test module (imported as a fixture by the test modules that use it)."""
    return start_module_fake_ls(csrf_token=CSRF)


@pytest.fixture
def gw(fake: FakeLSThread) -> Iterator[tuple[Gateway, TestClient]]:
    """A fresh gateway (default keys and settings) on the module's fake LS, its journal cleared."""
    fake.journal.clear()
    with gateway_client(fake) as pair:
        yield pair


def headers(key: str | None = KEY_A, **extra: str) -> dict[str, str]:
    out = {"Content-Type": "application/json", **extra}
    if key is not None:
        out["Authorization"] = f"Bearer {key}"
    return out


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def chat(
    client: TestClient, body: Mapping[str, Any], *, key: str | None = KEY_A, session_id: str | None = None
) -> httpx2.Response:
    """POST ``body`` to the Chat endpoint as ``key``'s caller, in the durable session ``session_id`` if given."""
    extra = {} if session_id is None else {"X-Session-Id": session_id}
    return client.post(CHAT, content=json.dumps(body).encode(), headers=headers(key, **extra))


def sse_payloads(response: httpx2.Response) -> list[str]:
    """The data payloads of an SSE answer, in order (comment lines such as heartbeats are left out)."""
    return [line[len("data: ") :] for line in response.text.split("\n") if line.startswith("data: ")]


def play(fake: FakeLSThread, *turns: Mapping[str, Any]) -> None:
    fake.load_scenario(parse_scenario({"turns": [dict(t) for t in turns]}))


def sends(fake: FakeLSThread) -> list[JournalEntry]:
    return [e for e in fake.journal.entries() if e.method == "SendUserCascadeMessage" and e.status == "OK"]


def sent_text(entry: JournalEntry) -> str:
    """The prompt text a Send carried."""
    assert entry.request is not None
    return "".join(str(item.get("text", "")) for item in entry.request["items"])


def asgi_http_scope(method: str, path: str, request_headers: Mapping[str, str]) -> dict[str, Any]:
    """The ASGI scope of an HTTP/1.1 request from 127.0.0.1, for tests that drive the app's interface directly."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in request_headers.items()],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }

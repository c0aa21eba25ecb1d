"""A served reference gateway in front of a per-test fake LS, and the official openai client for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from engine.polling import PollSettings
from engine.response_store import StoreLimits
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread

CSRF = "http-front-csrf"
KEY_A, KEY_B = "sk-test-alpha", "sk-test-beta"
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def fake() -> Iterator[FakeLSThread]:
    with FakeLSThread(csrf_token=CSRF) as server:
        yield server


def serve(
    fake: FakeLSThread, *, store: str = "memory", store_limits: StoreLimits | None = None, **settings: Any
) -> ServedGateway:
    http = HttpSettings(api_keys={KEY_A: "caller-a", KEY_B: "caller-b"}, **settings)
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=CSRF,
        http=http,
        poll=PollSettings(poll_interval_s=0.002),
        store=store,
        store_limits=store_limits or StoreLimits(),
    )
    return ServedGateway(Gateway(config)).start()


def serve_without_keys(fake: FakeLSThread) -> ServedGateway:
    """No API keys: every request is the unscoped caller ``anonymous`` (loopback only)."""
    config = GatewayConfig(ls_address=fake.address, csrf_token=CSRF, poll=PollSettings(poll_interval_s=0.002))
    return ServedGateway(Gateway(config)).start()


@pytest.fixture
def served(fake: FakeLSThread) -> Iterator[ServedGateway]:
    gateway = serve(fake)
    yield gateway
    gateway.stop()


@pytest.fixture
def client(served: ServedGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)


def play(fake: FakeLSThread, *turns: dict[str, Any]) -> None:
    fake.load_scenario(parse_scenario({"turns": list(turns)}))


def sends(fake: FakeLSThread) -> list[Any]:
    return [e for e in fake.journal.entries() if e.method == "SendUserCascadeMessage" and e.status == "OK"]

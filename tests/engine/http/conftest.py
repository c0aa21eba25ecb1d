"""A served reference gateway in front of a per-test fake LS, and the official openai client for it."""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from engine.cascade.polling import PollSettings
from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from engine.store import StoreLimits
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

CSRF = "http-front-csrf"
KEY_A, KEY_B = "sk-test-alpha", "sk-test-beta"
MODEL = "claude-sonnet-4-6"


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF, grpc_h2_port=0)


def serve(
    fake: FakeLSThread,
    *,
    store: str = "memory",
    store_limits: StoreLimits | None = None,
    session_log: str | None = None,
    native_mode: bool = False,
    max_wait_s: float = PollSettings().max_wait_s,
    over_h2: bool = False,
    **settings: Any,
) -> ServedGateway:
    """The engine against ``fake``; ``over_h2``: through the fake's hand-written gRPC port (HTTP-level faults)."""
    http = HttpSettings(api_keys={KEY_A: "caller-a", KEY_B: "caller-b"}, **settings)
    config = GatewayConfig(
        ls_address=fake.h2_address if over_h2 else fake.address,
        csrf_token=CSRF,
        http=http,
        poll=PollSettings(poll_interval_s=0.002, max_wait_s=max_wait_s),
        store=store,
        store_limits=store_limits or StoreLimits(),
        session_log=session_log,
        native_mode=native_mode,
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


def start_serve(args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """``cascade-engine serve ARGS`` in a child process, once it printed its banner: (process, URL)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + 60
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while not line.endswith(b"\n"):
            if time.monotonic() > deadline or not selector.select(deadline - time.monotonic()):
                proc.kill()
                pytest.fail(f"no banner: {proc.communicate()[1].decode(errors='replace')}")
            byte = proc.stdout.read(1)
            if not byte:
                pytest.fail(f"exited {proc.wait()}: {proc.communicate()[1].decode(errors='replace')}")
            line += byte
    url = line.decode().split()[1]
    assert url.startswith("http://127.0.0.1:"), line
    return proc, url

"""A whole gateway: the Cascade client, pool, cache, ledger and metrics behind one HTTP app, and a
helper that serves it with uvicorn on a loopback port in a background thread (tests, the reference
target, benchmarks)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType

import uvicorn
from starlette.applications import Starlette

from engine.cascade.client import CascadeClient, LsEndpoint
from engine.cascade.polling import PollSettings
from engine.cascade.requests import ClientIdentity
from engine.chat.cache import ResponseCache
from engine.chat.ledger import Ledger
from engine.conversation import ConversationEngine
from engine.http.app import HttpSettings, build_app
from engine.http.chat import ChatService
from engine.http.metrics_view import MetricsView
from engine.http.sessions import Sessions, open_session_log
from engine.model_catalogue import ModelCatalogue
from engine.prompt.metrics import ImageHistoryMetrics
from engine.reuse.pool import ConversationPool
from engine.store import ResponseStore, StoreLimits, open_store

DEFAULT_UPSTREAM_KEY = "cascade-engine-upstream-key"
DEFAULT_ACCOUNT = "upstream-account-1"


@dataclass(frozen=True)
class GatewayConfig:
    ls_address: str
    csrf_token: str
    http: HttpSettings = field(default_factory=HttpSettings)
    upstream_api_key: str = DEFAULT_UPSTREAM_KEY
    account: str = DEFAULT_ACCOUNT
    native_mode: bool = False
    poll: PollSettings | None = None
    identity: ClientIdentity | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # The response store behind /v1/responses: "memory", "sqlite:PATH" or "off" (nothing is kept).
    store: str = "memory"
    store_limits: StoreLimits = field(default_factory=StoreLimits)
    # The session log behind X-Session-Id (engine.http.sessions): a SQLite file path, None for an in-memory
    # log, or "off" (no sessions; the header is ignored).
    session_log: str | None = None


class Gateway:
    """Raises :class:`engine.store.memory.StoreOpenError` (a ValueError) when the store cannot be opened and
    :class:`engine.http.sessions.SessionLogOpenError` (a ValueError) when the session log cannot."""

    def __init__(self, config: GatewayConfig, *, catalogue: ModelCatalogue | None = None) -> None:
        self.config = config
        self.catalogue = catalogue or ModelCatalogue.default()
        # Opened first: nothing else is left to close when it fails.
        self.store: ResponseStore | None = (
            None if config.store == "off" else open_store(config.store, config.store_limits)
        )
        try:
            self.sessions = Sessions(open_session_log(config.session_log))
        except BaseException:
            if self.store is not None:
                self.store.close()
            raise
        self.client = CascadeClient(
            LsEndpoint(config.ls_address, config.csrf_token), identity=config.identity, poll=config.poll
        )
        self.pool = ConversationPool()
        self.images = ImageHistoryMetrics()
        self.ledger = Ledger(self.catalogue)
        self.cache = ResponseCache.from_env(config.env)
        self.service = ChatService(
            ConversationEngine(self.client, self.pool, metrics=self.images),
            ledger=self.ledger,
            cache=self.cache,
            account=config.account,
            upstream_api_key=config.upstream_api_key,
            native_mode=config.native_mode,
            sessions=self.sessions,
        )
        self.metrics = MetricsView(
            images=self.images, pool=self.pool, ledger=self.ledger, cache=self.cache, store=self.store
        )
        self.app: Starlette = build_app(
            self.service, self.catalogue, self.metrics, config.http, self.store, self.sessions
        )

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            try:
                if self.store is not None:
                    self.store.close()
            finally:
                self.sessions.close()


class _PromptServer(uvicorn.Server):
    """uvicorn's server, woken as soon as it is asked to stop: its own loop looks at the exit flag every
    0.1 s, which a fresh gateway per conformance example pays on every stop."""

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    def wake(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wake.set)


class ServedGateway:
    """``gateway``'s app served by uvicorn on 127.0.0.1 (a port the OS picks) in a background thread."""

    def __init__(self, gateway: Gateway, *, host: str = "127.0.0.1") -> None:
        self.gateway = gateway
        # IPPROTO_TCP, so asyncio sets TCP_NODELAY: uvicorn writes headers and body apart, and without it
        # each answer waits ~40 ms for the client's delayed ACK (Nagle).
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        config = uvicorn.Config(gateway.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        self._server = _PromptServer(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def start(self, timeout_s: float = 10.0) -> ServedGateway:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not start serving on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._server.wake()
        self._thread.join(timeout=10)
        self._socket.close()
        self.gateway.close()

    def __enter__(self) -> ServedGateway:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

"""Run the fake language server: in an event loop (:class:`FakeLS`) or a background thread
(:class:`FakeLSThread`, for synchronous tests and fixtures)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grpc import aio

from fakels._connect_transport import start_connect_server
from fakels._control import start_control_server
from fakels._grpc_h2_transport import start_grpc_h2_server
from fakels._grpc_transport import start_grpc_server
from fakels.clock import Clock
from fakels.journal import Journal
from fakels.retention import DEFAULT_RETENTION, Retention
from fakels.scenario import Scenario
from fakels.service import DEFAULT_MAX_REQUEST_BYTES, FakeLanguageServer, ServerConfig

T = TypeVar("T")

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    grpc: int
    connect: int | None
    control: int | None
    grpc_h2: int | None = None  # hand-written gRPC, which can also fail at the HTTP level (fakels._grpc_h2_transport)


class FakeLS:
    """The fake LS bound to loopback ports inside a running event loop.

    ``port=0`` (and ``connect_port=0`` / ``control_port=0`` / ``grpc_h2_port=0``) lets the OS pick;
    ``None`` for the Connect, control or h2 gRPC port leaves that listener off.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        connect_port: int | None = None,
        control_port: int | None = None,
        grpc_h2_port: int | None = None,
        csrf_token: str | None = None,
        scenario: Scenario | None = None,
        journal_path: Path | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        clock: Clock | None = None,
        cascade_id_prefix: str | None = None,
        record_secrets: bool = False,
        control_token: str | None = None,
        retention: Retention = DEFAULT_RETENTION,
    ) -> None:
        config = ServerConfig(
            csrf_token=csrf_token,
            max_request_bytes=max_request_bytes,
            scenario=scenario or Scenario(),
            cascade_id_prefix=cascade_id_prefix,
            record_secrets=record_secrets,
            max_cascades=retention.max_cascades,
        )
        self._control_token = control_token
        journal = Journal(
            journal_path, max_entries=retention.journal_max_entries, max_bytes=retention.journal_max_bytes
        )
        self.core = FakeLanguageServer(config, journal, clock)
        self._wanted = (port, connect_port, control_port, grpc_h2_port)
        self._grpc: aio.Server | None = None
        self._closers: list[Callable[[], Any]] = []
        self.ports: Ports | None = None

    @property
    def journal(self) -> Journal:
        return self.core.journal

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self._require_ports().grpc}"

    @property
    def h2_address(self) -> str:
        """The hand-written gRPC port's "host:port" (the server must have been started with ``grpc_h2_port``)."""
        h2_port = self._require_ports().grpc_h2
        if h2_port is None:
            raise RuntimeError("fakels was started without its h2 gRPC port: pass grpc_h2_port=0")
        return f"{LOOPBACK}:{h2_port}"

    def _require_ports(self) -> Ports:
        if self.ports is None:
            raise RuntimeError("fakels is not started: call start() first")
        return self.ports

    async def start(self) -> Ports:
        port, connect_port, control_port, grpc_h2_port = self._wanted
        self._grpc, grpc_port = await start_grpc_server(self.core, LOOPBACK, port)
        bound_connect = bound_control = bound_h2 = None
        if connect_port is not None:
            connect = await start_connect_server(self.core, LOOPBACK, connect_port)
            self._closers.append(connect.close)
            bound_connect = connect.port
        if control_port is not None:
            control = await start_control_server(self.core, LOOPBACK, control_port, token=self._control_token)
            self._closers.append(control.close)
            bound_control = control.port
        if grpc_h2_port is not None:
            h2_server = await start_grpc_h2_server(self.core, LOOPBACK, grpc_h2_port)
            self._closers.append(h2_server.close)
            bound_h2 = h2_server.port
        self.ports = Ports(grpc=grpc_port, connect=bound_connect, control=bound_control, grpc_h2=bound_h2)
        return self.ports

    async def stop(self, grace: float | None = 0.5) -> None:
        for close in reversed(self._closers):
            result = close()
            if asyncio.iscoroutine(result):
                await result
        self._closers.clear()
        if self._grpc is not None:
            await self._grpc.stop(grace)
            self._grpc = None

    async def __aenter__(self) -> FakeLS:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class FakeLSThread:
    """A :class:`FakeLS` running in its own thread and event loop; a synchronous context manager.

    State changes (scenario, reset) are carried out on the server's loop, so they never race a
    request in flight.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.server: FakeLS | None = None

    def start(self) -> FakeLSThread:
        ready: Future[FakeLS] = Future()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            try:
                server = FakeLS(**self._kwargs)
                self._loop.run_until_complete(server.start())
            except BaseException as exc:  # report start-up failures to the caller's thread
                ready.set_exception(exc)
                return
            ready.set_result(server)
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fakels", daemon=True)
        self._thread.start()
        self.server = ready.result(timeout=30)
        return self

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the server's event loop and return its result."""
        if self._loop is None:
            raise RuntimeError("fakels is not running: use FakeLSThread(...).start() or a with block")

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def load_scenario(self, scenario: Scenario) -> None:
        core = self._server().core
        self.call(lambda: core.load_scenario(scenario))

    def reset(self) -> None:
        core = self._server().core
        self.call(core.reset)

    def _server(self) -> FakeLS:
        if self.server is None:
            raise RuntimeError("fakels is not started: use FakeLSThread(...).start() or a with block")
        return self.server

    @property
    def journal(self) -> Journal:
        return self._server().journal

    @property
    def address(self) -> str:
        return self._server().address

    @property
    def h2_address(self) -> str:
        return self._server().h2_address

    @property
    def ports(self) -> Ports:
        return self._server()._require_ports()

    def stop(self) -> None:
        if self._loop is None or self.server is None:
            return
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> FakeLSThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

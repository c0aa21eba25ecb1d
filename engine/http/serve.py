"""Run ``cascade-engine serve``: bind, start (or dial) the LS, serve until SIGTERM or SIGINT, then stop
the HTTP server, the gateway and the LS it spawned, and return 0.

uvicorn's own ``Server.capture_signals`` re-raises the captured signal once the server has stopped,
so that the previous handler runs; for SIGTERM that is the default action, which kills the process
before any cleanup of ours and leaves a spawned LS running. Here SIGINT and SIGTERM belong to
:func:`run_serve` from before the LS is spawned until it has been reaped:

- while starting, a signal raises :class:`Interrupted` (the LS spawner stops a half-started child
  on any exception), and what was set up is undone;
- while serving, it asks uvicorn to shut down gracefully (a second SIGINT forces it);
- while stopping, further signals are ignored, so the LS is always stopped and reaped.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Final, Literal

import uvicorn

from engine.cascade.polling import PollSettings
from engine.cascade.spawn import LsSpawnError, spawn_ls
from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig
from engine.http.sessions import SessionLogOpenError
from engine.store import StoreLimits

PROG: Final = "cascade-engine"
GRACEFUL_SHUTDOWN_S: Final = 5
_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class ServeOptions:
    host: str
    port: int
    http: HttpSettings
    ls_address: str | None = None  # dial this LS ...
    csrf_token: str = ""
    ls_binary: str | None = None  # ... or spawn this one (exactly one of the two)
    native_mode: bool = False
    poll_interval_s: float = PollSettings().poll_interval_s
    max_wait_s: float = PollSettings().max_wait_s
    log_level: str = "warning"
    store: str = "memory"  # "memory", "sqlite:PATH" or "off"
    store_limits: StoreLimits = field(default_factory=StoreLimits)
    session_log: str | None = None  # a SQLite file, None (in memory) or "off" (engine.http.sessions)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived before the server was serving. A BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` on the way swallows it."""


class _Signals:
    """The SIGINT/SIGTERM handler for the whole run, acting by phase (see the module docstring)."""

    def __init__(self) -> None:
        self.phase: Literal["starting", "serving", "stopping"] = "starting"
        self.server: uvicorn.Server | None = None
        self.received: list[str] = []

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signal.Signals(signum).name)
        if self.phase == "starting":
            self.phase = "stopping"  # one Interrupted at most: the unwinding it starts is not interrupted
            raise Interrupted(signal.Signals(signum).name)
        if self.phase == "serving" and self.server is not None:
            self.server.handle_exit(signum, frame)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


class _Server(uvicorn.Server):
    """A uvicorn server that leaves the signals to :class:`_Signals`: it neither installs handlers
    nor re-raises a captured signal when it stops."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def run_serve(options: ServeOptions) -> int:
    """Serve until SIGINT or SIGTERM (0), or fail to start (1, one message on stderr)."""
    signals = _Signals()
    try:
        with signals.installed():
            return _run(options, signals)
    except Interrupted as exc:
        print(f"{PROG}: stopped ({exc}) before serving", flush=True)
        return 0


def _run(options: ServeOptions, signals: _Signals) -> int:
    try:
        sock = _bind(options.host, options.port)
    except OSError as exc:
        return _fail(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}")
    with contextlib.ExitStack() as cleanup:  # undone last to first: gateway, LS, socket
        cleanup.callback(sock.close)
        if options.ls_binary is not None:
            try:
                spawned = spawn_ls(options.ls_binary)
            except LsSpawnError as exc:
                return _fail(f"cannot start the language server: {exc}")
            cleanup.callback(spawned.stop)
            address, csrf = spawned.address, spawned.csrf_token
        else:
            assert options.ls_address is not None
            address, csrf = options.ls_address, options.csrf_token
        try:
            gateway = Gateway(
                GatewayConfig(
                    ls_address=address,
                    csrf_token=csrf,
                    http=options.http,
                    native_mode=options.native_mode,
                    poll=PollSettings(poll_interval_s=options.poll_interval_s, max_wait_s=options.max_wait_s),
                    store=options.store,
                    store_limits=options.store_limits,
                    session_log=options.session_log,
                )
            )
        except SessionLogOpenError as exc:
            return _fail(f"cannot open the session log {options.session_log!r}: {exc}")
        except (ValueError, OSError, sqlite3.Error) as exc:
            return _fail(f"cannot open the response store {options.store!r}: {exc}")
        cleanup.callback(gateway.close)
        config = uvicorn.Config(
            gateway.app, log_level=options.log_level, lifespan="off", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S
        )
        server = _Server(config)
        host, port = sock.getsockname()[:2]
        print(f"{PROG}: http://{_url_host(host)}:{port} ls={address}", flush=True)
        signals.server, signals.phase = server, "serving"
        try:
            server.run(sockets=[sock])
        finally:
            signals.phase = "stopping"
        if not signals.received and not server.started:
            return _fail("the HTTP server stopped before serving (see its log above)")
    print(f"{PROG}: stopped ({', '.join(signals.received) or 'server exited'})", flush=True)
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket: connections made once the address is printed wait in its backlog
    until uvicorn accepts them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, see engine.http.gateway
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
    except OSError:
        sock.close()
        raise
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    return 1

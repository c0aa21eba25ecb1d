"""The control endpoint: read the journal and state, load a scenario, reset, from another process.

A small HTTP/1.1 server (:mod:`fakels._http1`) on the fake's own event loop, so handlers read and
change the core without locks and never race a request in flight. Endpoints:

- ``GET /healthz`` -> ``{"ok": true}``
- ``GET /journal?since=N`` -> JSON lines (``application/x-ndjson``), one journal entry per line; the
  ``Fakels-Journal-Dropped`` header counts the entries from N on that the retention bound dropped
- ``GET /state`` -> counters and a summary of every cascade
- ``POST /scenario`` (a JSON scenario document) -> ``{"ok": true, "turns": n}``; invalid -> 400
- ``POST /reset`` -> state and journal cleared, ``{"ok": true}``

Errors are JSON ``{"error": text}`` with the fitting status; every response closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fakels._http1 import (
    MAX_LINE_BYTES,
    HttpError,
    Request,
    RequestHead,
    Response,
    close_connection,
    json_response,
    read_body,
    read_head,
    write_response,
)
from fakels.cascade import CascadeState
from fakels.scenario import ScenarioError, parse_scenario
from fakels.service import FakeLanguageServer

MAX_BODY_BYTES = 16 * 1024 * 1024
NDJSON_TYPE = "application/x-ndjson"
JOURNAL_DROPPED_HEADER = "Fakels-Journal-Dropped"
_HEAD_TIMEOUT_S = 10.0
_BODY_TIMEOUT_S = 30.0
_ACCEPT_BATCH = 64

_Handler = Callable[[Request], Response]


class ControlServer:
    """The listening control endpoint; ``port`` is the bound port, :meth:`close` stops it.

    Connections are accepted in a reader callback rather than by ``asyncio.start_server``, so
    every accepted socket is known at once and :meth:`close` closes each of them, even one whose
    handler has not started yet. (This needs a selector event loop, the default on POSIX.)
    """

    def __init__(self, core: FakeLanguageServer, *, token: str | None = None) -> None:
        self._core = core
        self._token = token
        self._listener: socket.socket | None = None
        self._resume: asyncio.TimerHandle | None = None
        self._open: dict[socket.socket, asyncio.Task[None]] = {}
        self._routes: dict[str, dict[str, _Handler]] = {
            "/healthz": {"GET": self._healthz},
            "/journal": {"GET": self._journal},
            "/state": {"GET": self._state},
            "/scenario": {"POST": self._load_scenario},
            "/reset": {"POST": self._reset},
        }
        self.port = 0

    async def start(self, host: str, port: int) -> None:
        try:
            listener = socket.create_server((host, port))
        except OSError as exc:
            raise OSError(exc.errno, f"fakels: cannot listen on {host}:{port} for the control endpoint: {exc}") from exc
        listener.setblocking(False)
        self._listener = listener
        self.port = listener.getsockname()[1]
        asyncio.get_running_loop().add_reader(listener.fileno(), self._accept)

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        if self._resume is not None:
            self._resume.cancel()
        asyncio.get_running_loop().remove_reader(listener.fileno())
        listener.close()
        still_open, self._open = self._open, {}
        for task in still_open.values():
            task.cancel()
        await asyncio.gather(*still_open.values(), return_exceptions=True)
        for conn in still_open:
            conn.close()  # a cancelled handler only schedules the close, or never started

    # ------------------------------------------------------------------ one connection, one request

    def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(_ACCEPT_BATCH):
            if self._listener is None:
                return
            try:
                conn, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of file descriptors or similar: pause, then keep serving
                loop.remove_reader(self._listener.fileno())
                self._resume = loop.call_later(0.1, self._resume_accepting)
                return
            conn.setblocking(False)
            self._open[conn] = loop.create_task(self._serve(conn))

    def _resume_accepting(self) -> None:
        self._resume = None
        if self._listener is not None:
            asyncio.get_running_loop().add_reader(self._listener.fileno(), self._accept)

    async def _serve(self, conn: socket.socket) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=MAX_LINE_BYTES)
            head_only, response = await self._exchange(reader)
            if response is not None:
                with contextlib.suppress(Exception):  # the client went away: nothing left to tell it
                    await write_response(writer, response, head_only=head_only)
            await close_connection(reader, writer)
        except asyncio.CancelledError:  # the server is closing: no lingering
            _drop(conn, writer)
            raise
        except Exception:  # the socket failed under us: this connection is done, the server is not
            _drop(conn, writer)
        finally:
            self._open.pop(conn, None)

    async def _exchange(self, reader: asyncio.StreamReader) -> tuple[bool, Response | None]:
        head_only = False
        try:
            head = await asyncio.wait_for(read_head(reader), _HEAD_TIMEOUT_S)
            if head is None:
                return False, None
            head_only = head.method == "HEAD"
            self._guard(head)
            handler = self._route(head)
            body = await asyncio.wait_for(read_body(reader, head, MAX_BODY_BYTES), _BODY_TIMEOUT_S)
            _json_posts_only(head)
            return head_only, handler(Request(head, body))
        except HttpError as exc:
            return head_only, exc.response()
        except TimeoutError:
            return head_only, HttpError(HTTPStatus.REQUEST_TIMEOUT, "request not received in time").response()
        except ConnectionError:
            return head_only, None
        except Exception as exc:  # a bug in a handler: answer 500, keep serving, no traceback
            message = f"fakels control: internal error: {type(exc).__name__}: {exc}"
            return head_only, HttpError(HTTPStatus.INTERNAL_SERVER_ERROR, message).response()

    def _guard(self, head: RequestHead) -> None:
        """Only local tools may drive the fake: not a browser page (it sends an Origin; and no CORS
        preflight precedes a text/plain POST, see :func:`_json_posts_only`), nor a DNS-rebound name
        (its Host is not ours)."""
        host = head.headers.get("host", "")
        if host not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            raise HttpError(
                HTTPStatus.FORBIDDEN,
                f"Host {host!r} is not this endpoint (127.0.0.1:{self.port}): refused (DNS rebinding guard)",
            )
        if "origin" in head.headers:
            raise HttpError(HTTPStatus.FORBIDDEN, "requests carrying an Origin header (a web page) are refused")
        if self._token is not None:
            scheme, _, given = head.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), self._token.encode()):
                raise HttpError(HTTPStatus.UNAUTHORIZED, "send the control token: Authorization: Bearer <token>")

    def _route(self, head: RequestHead) -> _Handler:
        methods = self._routes.get(head.path)
        if methods is None:
            known = ", ".join(f"{m} {p}" for p, ms in self._routes.items() for m in ms)
            raise HttpError(HTTPStatus.NOT_FOUND, f"no control endpoint {head.path!r}; the endpoints are: {known}")
        method = "GET" if head.method == "HEAD" else head.method
        handler = methods.get(method)
        if handler is None:
            allowed = ", ".join([*methods, *(["HEAD"] if "GET" in methods else [])])
            raise HttpError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"{head.method} is not allowed on {head.path}; use {allowed}",
                headers=(("Allow", allowed),),
            )
        return handler

    # ------------------------------------------------------------------ endpoints

    def _healthz(self, request: Request) -> Response:
        return json_response(HTTPStatus.OK, {"ok": True})

    def _journal(self, request: Request) -> Response:
        since = _since(request.head.query.get("since", ["0"]))
        journal = self._core.journal
        entries = journal.entries(since=since)
        lines = (json.dumps(e.to_json(), ensure_ascii=False) + "\n" for e in entries)
        # Entries from `since` on that the retention bound dropped: the lines start later than asked.
        dropped = entries[0].seq - since if entries and entries[0].seq > since else journal.dropped_since(since)
        headers = ((JOURNAL_DROPPED_HEADER, str(dropped)),)
        return Response(HTTPStatus.OK, "".join(lines).encode("utf-8"), NDJSON_TYPE, headers)

    def _state(self, request: Request) -> Response:
        state = self._core.state
        return json_response(
            HTTPStatus.OK,
            {
                "turn_index": state.turn_index,
                "sends_accepted": state.sends_accepted,
                "panel_lost": state.panel_lost,
                "workspace_untrusted": state.workspace_untrusted,
                "scenario_turns": len(state.scenario.turns),
                "journal_entries": len(self._core.journal),
                "journal_retained": self._core.journal.retained,
                "journal_first_seq": self._core.journal.first_seq,
                "cascades": [_cascade_summary(c) for c in state.cascades.values()],
            },
        )

    def _load_scenario(self, request: Request) -> Response:
        document = _json_body(request.body)
        try:
            scenario = parse_scenario(document, source="POST /scenario")
        except ScenarioError as exc:
            raise HttpError(HTTPStatus.BAD_REQUEST, str(exc)) from None
        self._core.load_scenario(scenario)
        return json_response(HTTPStatus.OK, {"ok": True, "turns": len(scenario.turns)})

    def _reset(self, request: Request) -> Response:
        self._core.reset()
        return json_response(HTTPStatus.OK, {"ok": True})


def _json_posts_only(head: RequestHead) -> None:
    """A browser sends text/plain (or a form) cross-origin without a preflight; JSON it cannot."""
    if head.method != "POST":
        return
    kind = head.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise HttpError(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"POST bodies must be application/json, not {kind or 'untyped'}"
        )


def _drop(conn: socket.socket, writer: asyncio.StreamWriter | None) -> None:
    if writer is not None:
        writer.transport.abort()
    else:
        conn.close()


def _cascade_summary(cascade: CascadeState) -> dict[str, Any]:
    return {
        "id": cascade.cascade_id,
        "trajectory_id": cascade.trajectory_id,
        "steps": len(cascade.steps),
        "records": len(cascade.records),
        "turns_played": cascade.turns_played,
        "expired": cascade.expired,
        "active": cascade.active is not None,
    }


def _since(values: list[str]) -> int:
    if len(values) != 1 or not values[0].isascii() or not values[0].isdigit() or len(values[0]) > 12:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"since must be one non-negative integer, got {values}")
    return int(values[0])


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_body(body: bytes) -> Any:
    if not body.strip():
        raise HttpError(HTTPStatus.BAD_REQUEST, "empty request body: send a JSON scenario document")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        message = f"request body is not UTF-8: {exc.reason} at byte {exc.start}"
        raise HttpError(HTTPStatus.BAD_REQUEST, message) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise HttpError(HTTPStatus.BAD_REQUEST, f"request body is not valid JSON: {exc.msg} at {where}") from None
    except (ValueError, RecursionError) as exc:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"request body is not valid JSON: {exc}") from None


async def start_control_server(
    core: FakeLanguageServer, host: str, port: int, *, token: str | None = None
) -> ControlServer:
    """Serve the control endpoint for ``core`` on ``host:port`` (0 = any free port); with ``token``,
    every request must carry ``Authorization: Bearer <token>``."""
    server = ControlServer(core, token=token)
    await server.start(host, port)
    return server

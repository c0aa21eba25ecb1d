"""Durable sessions behind the HTTP front: ``X-Session-Id``, the session log, ``GET /v1/sessions/{id}``.

A Chat or Responses request may name a session with the ``X-Session-Id`` header. Sessions are per caller: the
log keys a session by the caller identity and the id together (:func:`session_key`), so another caller's
session of the same id is a different session, and looking one up never tells whether it exists.

Before the request is built, :meth:`Sessions.commit` appends to the session's durable history (and so to its
session log, one transaction) every tool result of the request whose call id the session does not hold yet,
each preceded by its tool call when the request has it and the session does not. A result already in the
session is never committed again: the committed record is what the request is lowered from, so a client that
later elides an image from a tool message it repeats still sends the stored image upstream. The client's
request stays the source of truth for what the conversation is: a tool result the client no longer sends is
not put back into the prompt; it stays in the session (the durable record, shown by the exploration view).

A session exists once something was committed to it; ``GET /v1/sessions/{id}`` answers 404
``session_not_found`` before that, for another caller's session and when sessions are off.
"""

from __future__ import annotations

import collections
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.http.errors import ApiError, bad_request
from engine.http.front import Caller, error_response
from engine.sessions.items import History, Item, ToolCall, ToolResult
from engine.sessions.log import SessionLog
from engine.sessions.views import compaction_input, exploration_view

log = logging.getLogger("engine.http")

HEADER: Final = "X-Session-Id"
OFF: Final = "off"
MEMORY: Final = ":memory:"
#: Sessions whose history stays in memory (least recently used first out; an evicted one is restored from
#: the log when it is next named).
MAX_OPEN_SESSIONS: Final = 64
_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}", re.ASCII)


class SessionLogOpenError(ValueError):
    """The session log file cannot be opened (a bad path, not a session log, an unsupported schema)."""


def open_session_log(spec: str | None) -> SessionLog | None:
    """``None``: an in-memory log; ``"off"``: no sessions (None); anything else: the SQLite file at that path."""
    if spec == OFF:
        return None
    path = MEMORY if spec is None else spec
    try:
        return SessionLog(path)
    except (OSError, ValueError, sqlite3.Error) as exc:
        raise SessionLogOpenError(f"{type(exc).__name__}: {exc}") from exc


def session_key(caller_id: str, session_id: str) -> str:
    """The log's key of a caller's session: unambiguous for any caller identity."""
    return json.dumps([caller_id, session_id], ensure_ascii=True, separators=(",", ":"))


def session_error(what: str) -> ApiError:
    return ApiError(500, f"the session log failed: {what}", type="api_error", code="session_log_error")


@dataclass(frozen=True)
class Durable:
    """What a request is lowered from after the commit: the session's results by call id, and its pruned ids."""

    results: Mapping[str, ToolResult]
    pruned: frozenset[str]


class Sessions:
    """The sessions of one gateway over one :class:`SessionLog` (``None``: sessions are off); thread-safe."""

    def __init__(self, session_log: SessionLog | None, *, max_open: int = MAX_OPEN_SESSIONS) -> None:
        self.log = session_log
        self._max_open = max_open
        self._lock = threading.RLock()
        self._open: collections.OrderedDict[str, History] = collections.OrderedDict()
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self.log is not None

    def header(self, request: Request) -> str | None:
        """The session a request names: None without the header or when sessions are off (logged once);
        a 400 naming the header for a malformed id."""
        value = request.headers.get(HEADER)
        if value is None:
            return None
        if not _SESSION_ID.fullmatch(value):
            raise bad_request(
                f"{HEADER} must be 1 to 128 characters of letters, digits and ._:@+=- starting with a letter or digit",
                param=HEADER,
            )
        if self.log is None:
            if not self._warned:
                self._warned = True
                log.warning("sessions are off (--session-log off): %s headers are ignored", HEADER)
            return None
        return value

    def commit(self, caller_id: str, session_id: str, items: Sequence[Item]) -> Durable:
        """Commit the request's new tool results (with their calls) to the session, then read it back."""
        with self._lock:
            history = self._history(session_key(caller_id, session_id), create=True)
            if history is None:
                raise RuntimeError("sessions are off")
            stored, pruned = history.snapshot()
            calls = {item.call_id for item in stored if isinstance(item, ToolCall)}
            results = {item.call_id for item in stored if isinstance(item, ToolResult)}
            answered = {item.call_id for item in items if isinstance(item, ToolResult)}
            new: list[Item] = []
            for item in items:
                if isinstance(item, ToolCall) and item.call_id in answered - calls:
                    calls.add(item.call_id)
                    new.append(item)
                elif isinstance(item, ToolResult) and item.call_id not in results:
                    results.add(item.call_id)
                    new.append(item)
            history.commit(*new)  # one transaction in the log, before the history shows it
            stored, pruned = history.snapshot()
        durable: dict[str, ToolResult] = {}
        for item in stored:
            if isinstance(item, ToolResult):
                durable.setdefault(item.call_id, item)
        return Durable(durable, pruned)

    def find(self, caller_id: str, session_id: str) -> History | None:
        """The caller's session, None when it holds nothing (unknown, someone else's, or sessions off)."""
        with self._lock:
            history = self._history(session_key(caller_id, session_id), create=False)
        return history if history is not None and history.items else None

    def close(self) -> None:
        with self._lock:
            if self.log is not None:
                for key in list(self._open):
                    self.log.detach(key)
                self.log.close()
            self._open.clear()

    def _history(self, key: str, *, create: bool) -> History | None:
        if self.log is None:
            return None
        history = self._open.get(key)
        if history is not None:
            self._open.move_to_end(key)
            return history
        if not create and not self.log.has_records(key):
            return None
        history = self.log.restore(key)
        self.log.attach(key, history)
        self._open[key] = history
        while len(self._open) > self._max_open:
            evicted, _ = self._open.popitem(last=False)
            self.log.detach(evicted)
        return history


def session_not_found(session_id: str) -> ApiError:
    return ApiError(
        404,
        f"Session with id '{session_id}' not found. A session exists once a request naming it with {HEADER} "
        "committed a tool result, and only for the caller that named it.",
        code="session_not_found",
        param="session_id",
    )


class SessionRoutes:
    """``GET /v1/sessions/{session_id}``: the caller's session as bounded views, never image bytes."""

    def __init__(self, sessions: Sessions, caller: Callable[[Request], Caller]) -> None:
        self._sessions = sessions
        self._caller = caller

    def routes(self) -> list[Route]:
        return [Route("/v1/sessions/{session_id}", self.retrieve, methods=["GET"])]

    async def retrieve(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        try:
            caller = self._caller(request)
            start = _start_param(request)
            try:
                history = await anyio.to_thread.run_sync(self._sessions.find, caller.id, session_id)
            except Exception:
                log.exception("sessions: reading %r failed", session_id)
                raise session_error("the session could not be read") from None
            if history is None:
                raise session_not_found(session_id)
            if start > len(history.items):
                raise bad_request(f"'start' is past the session's {len(history.items)} items", param="start")
        except ApiError as exc:
            return error_response(exc)
        return JSONResponse(
            {
                "id": session_id,
                "object": "session",
                "exploration": exploration_view(history, start=start),
                "compaction_input": compaction_input(history),
            }
        )


def _start_param(request: Request) -> int:
    raw = request.query_params.get("start", "0")
    if not raw.isdigit() or len(raw) > 9:
        raise bad_request("'start' must be a non-negative integer", param="start")
    return int(raw)

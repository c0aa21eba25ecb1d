"""What the HTTP front's parts share: who is calling, the events a turn reports, and the hooks the route
modules are built on. It imports nothing of ``engine.http`` but :mod:`engine.http.errors`, so the chat
service, the route modules and the app all stand on it without importing each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

from engine.chat.tool_markup import ParsedToolCall
from engine.http.errors import ApiError

EventKind = Literal["role", "reasoning", "content", "tool_call", "finish", "usage", "error"]

NO_CACHE_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class ChatEvent:
    kind: EventKind
    text: str = ""
    call: ParsedToolCall | None = None
    usage: dict[str, Any] | None = None
    error: ApiError | None = None


@dataclass(frozen=True)
class Caller:
    """Who sent a request. ``scoped``: a real identity (an API key); only scoped callers get the
    response cache, so no answer is ever replayed to someone else."""

    id: str
    scoped: bool


Sink = Callable[[ChatEvent], None]


@dataclass(frozen=True)
class FrontHooks:
    """What the route modules share with the rest of the HTTP front (:mod:`engine.http.app`)."""

    caller: Callable[[Request], Caller]
    # The caller a request with this parsed body is: its key narrowed by the body's per-user signal.
    body_caller: Callable[[Request, object], Caller]
    json_body: Callable[[Request], Awaitable[object]]
    refuse_web_post: Callable[[Request], None]  # an Origin header, or a body that is not JSON
    refuse_origin: Callable[[Request], None]  # an Origin header
    limiter: anyio.CapacityLimiter
    heartbeat_s: float
    session_id: Callable[[Request], str | None] = lambda request: None  # the X-Session-Id a request names


def error_response(error: ApiError) -> JSONResponse:
    """The JSON error body of ``error`` with its status (and Retry-After when it has a wait)."""
    headers = {"Retry-After": str(error.retry_after_s)} if error.retry_after_s is not None else None
    return JSONResponse(error.body(), status_code=error.status, headers=headers)

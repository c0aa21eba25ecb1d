"""The ASGI application: routes, authentication, body limits, and the SSE stream of a chat turn.

The Responses API routes live in :mod:`engine.http.responses`; they share this front's caller
identity, body limit, cross-origin guard, turn limiter and heartbeat (:class:`FrontHooks`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from engine.http.chat import Caller, ChatEvent, ChatService
from engine.http.chat_request import ChatRequest, parse_chat_request
from engine.http.errors import ApiError
from engine.http.metrics_view import MetricsView
from engine.http.responses import FrontHooks, ResponsesRoutes
from engine.http.sessions import SessionRoutes, Sessions
from engine.http.shapes import DONE, HEARTBEAT, ChunkWriter, completion, error_frame, sse
from engine.http.turn_events import collect_events, turn_events
from engine.js import well_formed_json
from engine.model_catalogue import ModelCatalogue
from engine.response_store import ResponseStore

log = logging.getLogger("engine.http")

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_HEARTBEAT_S = 15.0
DEFAULT_MAX_CONCURRENT_TURNS = 64


@dataclass(frozen=True)
class HttpSettings:
    """``api_keys``: each key and the caller identity it stands for; empty means no authentication
    (the CLI allows that only on a loopback address)."""

    api_keys: Mapping[str, str] = field(default_factory=dict)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    max_concurrent_turns: int = DEFAULT_MAX_CONCURRENT_TURNS


def caller_id_for_key(key: str) -> str:
    """The identity an API key stands for when none is given: a digest, so the key itself is never
    stored in ledgers, caches or logs."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def build_app(
    service: ChatService,
    catalogue: ModelCatalogue,
    metrics: MetricsView,
    settings: HttpSettings,
    store: ResponseStore | None = None,
    sessions: Sessions | None = None,
) -> Starlette:
    """``store``: the response store behind /v1/responses (None: disabled, nothing is kept); ``sessions``:
    the durable sessions requests name with ``X-Session-Id`` (None: off, the header is ignored)."""
    sessions = sessions or Sessions(None)
    front = _Front(service, catalogue, metrics, settings, sessions)
    hooks = FrontHooks(
        caller=front.caller,
        json_body=front.json_body,
        refuse_web_post=_no_cross_origin_post,
        refuse_origin=_no_origin,
        limiter=front.limiter,
        heartbeat_s=settings.heartbeat_s,
        session_id=sessions.header,
    )
    routes = [
        Route("/v1/chat/completions", front.chat, methods=["POST"]),
        *ResponsesRoutes(service, store, catalogue, hooks).routes(),
        *SessionRoutes(sessions, front.caller).routes(),
        Route("/v1/models", front.models, methods=["GET"]),
        Route("/v1/ledger", front.ledger, methods=["GET"]),
        Route("/metrics", front.metrics_text, methods=["GET"]),
        Route("/metrics.json", front.metrics_json, methods=["GET"]),
        Route("/healthz", front.healthz, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: _not_found, 405: _method_not_allowed})


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error(ApiError(404, f"no route {request.method} {request.url.path}", code="not_found"))


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return _error(ApiError(405, f"{request.method} is not allowed on {request.url.path}", code="method_not_allowed"))


def _error(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


class _Front:
    def __init__(
        self,
        service: ChatService,
        catalogue: ModelCatalogue,
        metrics: MetricsView,
        settings: HttpSettings,
        sessions: Sessions,
    ):
        self._service = service
        self._sessions = sessions
        self._catalogue = catalogue
        self._metrics = metrics
        self._settings = settings
        self.limiter = anyio.CapacityLimiter(settings.max_concurrent_turns)

    def caller(self, request: Request) -> Caller:
        """The caller an API key stands for; with no keys configured, everyone is ``anonymous``."""
        keys = self._settings.api_keys
        if not keys:
            return Caller("anonymous", scoped=False)
        values = request.headers.getlist("authorization")
        scheme, _, token = (values[0] if len(values) == 1 else "").partition(" ")  # a repeated header is no key
        if scheme.lower() != "bearer" or not token:
            raise ApiError(
                401,
                "missing API key: send Authorization: Bearer <key>",
                type="authentication_error",
                code="invalid_api_key",
            )
        found: str | None = None
        for key, identity in keys.items():
            # Every key is compared (constant time each), so timing does not say which one matched.
            if hmac.compare_digest(token.encode(), key.encode()):
                found = identity
        if found is None:
            raise ApiError(401, "invalid API key", type="authentication_error", code="invalid_api_key")
        return Caller(found, scoped=True)

    async def json_body(self, request: Request) -> object:
        limit = self._settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(413, f"request body over {limit} bytes", code="request_too_large")
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise ApiError(413, f"request body over {limit} bytes", code="request_too_large")
                chunks.append(chunk)
        except ClientDisconnect:
            # Nobody is left to answer; an error (not a traceback) ends the request quietly.
            raise ApiError(400, "the client went away before its body arrived", code="client_disconnected") from None
        body = b"".join(chunks)
        try:
            parsed: object = json.loads(body)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, f"the request body is not valid JSON: {exc}", code="invalid_json") from None
        # A lone surrogate can only come from a \uD8xx-style escape. Node writes U+FFFD for it when it encodes
        # the string for the LS; here it is replaced once, on the way in, so no later encoding can fail on it.
        return well_formed_json(parsed) if b"\\u" in body else parsed

    async def chat(self, request: Request) -> Response:
        try:
            _no_cross_origin_post(request)
            caller = self.caller(request)
            chat = parse_chat_request(await self.json_body(request), self._catalogue)
            chat = replace(chat, session_id=self._sessions.header(request))
        except ApiError as exc:
            return _error(exc)
        if chat.stream:
            return StreamingResponse(self._stream(chat, caller), media_type="text/event-stream", headers=_NO_CACHE)
        return await self._complete(chat, caller)

    async def _complete(self, chat: ChatRequest, caller: Caller) -> Response:
        run = functools.partial(self._service.run, chat, caller)
        events = await collect_events(run, limiter=self.limiter, name="chat")
        for event in events:
            if event.error is not None:
                return _error(event.error)
        text = "".join(e.text for e in events if e.kind == "content")
        thinking = "".join(e.text for e in events if e.kind == "reasoning")
        calls = [e.call for e in events if e.kind == "tool_call" and e.call is not None]
        finish = next((e.text for e in events if e.kind == "finish"), "stop")
        usage = next((e.usage for e in events if e.kind == "usage" and e.usage is not None), {})
        body = completion(
            completion_id=_completion_id(),
            created=int(time.time()),
            model=chat.model.name,
            text=text,
            thinking=thinking,
            calls=calls,
            finish_reason=finish,
            usage=usage,
        )
        return JSONResponse(body)

    async def _stream(self, chat: ChatRequest, caller: Caller) -> AsyncIterator[bytes]:
        run = functools.partial(self._service.run, chat, caller)
        writer = ChunkWriter(completion_id=_completion_id(), created=int(time.time()), model=chat.model.name)
        events = turn_events(run, limiter=self.limiter, heartbeat_s=self._settings.heartbeat_s, name="chat")
        async with contextlib.aclosing(events):
            async for event in events:
                if event is None:
                    yield HEARTBEAT
                    continue
                frame = _frame(writer, event, chat.include_usage)
                if frame is not None:
                    yield sse(frame)
                if event.kind == "usage":
                    yield sse(DONE)

    async def models(self, request: Request) -> Response:
        try:
            self.caller(request)
        except ApiError as exc:
            return _error(exc)
        return JSONResponse(self._catalogue.openai_list())

    async def ledger(self, request: Request) -> Response:
        try:
            self.caller(request)
        except ApiError as exc:
            return _error(exc)
        return JSONResponse(self._service.ledger.document())

    async def metrics_text(self, request: Request) -> Response:
        return PlainTextResponse(self._metrics.prometheus_text(), media_type="text/plain; version=0.0.4")

    async def metrics_json(self, request: Request) -> Response:
        return JSONResponse(self._metrics.snapshot())

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})


def _no_origin(request: Request) -> None:
    if "origin" in request.headers:
        raise ApiError(403, "requests carrying an Origin header (a web page) are refused", code="cross_origin")


def _no_cross_origin_post(request: Request) -> None:
    """A web page must not drive a turn with its visitor's credentials: a browser sends an Origin,
    and posts text/plain or form bodies cross-origin without a CORS preflight; JSON it cannot."""
    _no_origin(request)
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise ApiError(
            415, f"the body must be application/json, not {kind or 'untyped'}", code="unsupported_media_type"
        )


_NO_CACHE = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _frame(writer: ChunkWriter, event: ChatEvent, include_usage: bool) -> str | None:
    if event.kind == "role":
        return writer.role()
    if event.kind == "reasoning":
        return writer.reasoning(event.text)
    if event.kind == "content":
        return writer.content(event.text)
    if event.kind == "tool_call" and event.call is not None:
        return writer.tool_call(event.call)
    if event.kind == "finish":
        return writer.finish(event.text)
    if event.kind == "usage":
        return writer.usage(event.usage or {}) if include_usage else None
    if event.kind == "error" and event.error is not None:
        return error_frame(event.error.body())
    return None


def _completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]

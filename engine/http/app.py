"""The ASGI application: routes, authentication, body limits, and the SSE stream of a chat turn.

The Responses API routes live in :mod:`engine.http.responses`; they share this front's caller
identity, body limit, cross-origin guard, turn limiter and heartbeat (:class:`FrontHooks`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from engine.http.caller_scope import body_signal, narrowed, read_signal
from engine.http.chat import ChatService
from engine.http.chat_routes import ChatRoutes
from engine.http.errors import ApiError
from engine.http.front import Caller, FrontHooks, error_response
from engine.http.metrics_view import MetricsView
from engine.http.responses import ResponsesRoutes
from engine.http.sessions import SessionRoutes, Sessions
from engine.js import well_formed_json
from engine.model_catalogue import ModelCatalogue
from engine.store import ResponseStore

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
    front = _Front(service, catalogue, metrics, settings)
    hooks = FrontHooks(
        caller=front.caller,
        body_caller=front.body_caller,
        json_body=front.json_body,
        refuse_web_post=_no_cross_origin_post,
        refuse_origin=_no_origin,
        limiter=front.limiter,
        heartbeat_s=settings.heartbeat_s,
        session_id=sessions.header,
    )
    routes = [
        *ChatRoutes(service, catalogue, hooks).routes(),
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
    return error_response(ApiError(404, f"no route {request.method} {request.url.path}", code="not_found"))


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    return error_response(
        ApiError(405, f"{request.method} is not allowed on {request.url.path}", code="method_not_allowed")
    )


class _Front:
    def __init__(
        self,
        service: ChatService,
        catalogue: ModelCatalogue,
        metrics: MetricsView,
        settings: HttpSettings,
    ):
        self._service = service
        self._catalogue = catalogue
        self._metrics = metrics
        self._settings = settings
        self.limiter = anyio.CapacityLimiter(settings.max_concurrent_turns)

    def caller(self, request: Request) -> Caller:
        """The caller a request is: its API key's, narrowed by the per-user signal of its header or query
        (:mod:`engine.http.caller_scope`)."""
        return narrowed(self._key_caller(request), read_signal(request))

    def body_caller(self, request: Request, body: object) -> Caller:
        """The caller a request with a body is: the body's per-user signal first, else as :meth:`caller`."""
        return narrowed(self._key_caller(request), body_signal(body) or read_signal(request))

    def _key_caller(self, request: Request) -> Caller:
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

    async def models(self, request: Request) -> Response:
        try:
            self.caller(request)
        except ApiError as exc:
            return error_response(exc)
        return JSONResponse(self._catalogue.openai_list())

    async def ledger(self, request: Request) -> Response:
        try:
            self.caller(request)
        except ApiError as exc:
            return error_response(exc)
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

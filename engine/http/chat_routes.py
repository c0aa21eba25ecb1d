"""``POST /v1/chat/completions``: the chat front, built on :class:`~engine.http.front.FrontHooks` as the
Responses routes are. The body is parsed against the model catalogue, the turn runs in the chat service
(:class:`~engine.http.chat.ChatService`) off the event loop, and its events become one completion body
or, when streaming, SSE chunks with heartbeats."""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from engine.http.chat import ChatService
from engine.http.chat_request import ChatRequest, parse_chat_request
from engine.http.errors import ApiError
from engine.http.front import NO_CACHE_HEADERS, Caller, ChatEvent, FrontHooks, error_response
from engine.http.shapes import DONE, HEARTBEAT, ChunkWriter, completion, error_frame, sse
from engine.http.turn_events import collect_events, turn_events
from engine.model_catalogue import ModelCatalogue


class ChatRoutes:
    def __init__(self, service: ChatService, catalogue: ModelCatalogue, hooks: FrontHooks) -> None:
        self._service = service
        self._catalogue = catalogue
        self._hooks = hooks

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The bound on turns running at once, shared with the other routes."""
        return self._hooks.limiter

    def routes(self) -> list[Route]:
        return [Route("/v1/chat/completions", self.chat, methods=["POST"])]

    async def chat(self, request: Request) -> Response:
        hooks = self._hooks
        try:
            hooks.refuse_web_post(request)
            hooks.caller(request)  # the key first: a request without one is refused before its body is read
            body = await hooks.json_body(request)
            caller = hooks.body_caller(request, body)
            chat = parse_chat_request(body, self._catalogue)
            chat = replace(chat, session_id=hooks.session_id(request))
        except ApiError as exc:
            return error_response(exc)
        if chat.stream:
            return StreamingResponse(
                self._stream(chat, caller), media_type="text/event-stream", headers=NO_CACHE_HEADERS
            )
        return await self._complete(chat, caller)

    async def _complete(self, chat: ChatRequest, caller: Caller) -> Response:
        run = functools.partial(self._service.run, chat, caller)
        events = await collect_events(run, limiter=self._hooks.limiter, name="chat")
        for event in events:
            if event.error is not None:
                return error_response(event.error)
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
        events = turn_events(run, limiter=self._hooks.limiter, heartbeat_s=self._hooks.heartbeat_s, name="chat")
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

"""The Responses API: ``POST /v1/responses`` (streamed or not), ``GET`` / ``DELETE /v1/responses/{id}``
and ``GET /v1/responses/{id}/input_items``, over the response store (engine.md section 3,
handlers/responses.js).

A turn runs on the chat path (:meth:`ChatService.run`, without the response cache): the request's
items, merged after the stored items of ``previous_response_id``, are lowered to chat messages, with
``instructions`` as a system message ahead of them for this turn only. What the store keeps for the
turn, owned by the caller, is the merged input items (never the instructions) followed by the turn's
output items (reasoning excluded), committed only when the turn finished and did not fail or
abort. docs/responses-api.md describes the routes and the decisions where the reference is silent.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from engine.http.chat import ChatService
from engine.http.chat_request import ChatRequest
from engine.http.errors import ApiError, bad_request
from engine.http.front import NO_CACHE_HEADERS, Caller, ChatEvent, FrontHooks, error_response
from engine.http.responses_items import Item, lower_items, merge_chained, new_id, stored_output
from engine.http.responses_request import ResponsesRequest, parse_responses_request
from engine.http.responses_shapes import EventWriter, OutputBuilder, response_object, responses_usage
from engine.http.shapes import HEARTBEAT
from engine.http.turn_events import collect_events, turn_events
from engine.model_catalogue import ModelCatalogue
from engine.store import ResponseStore, StoredEntry

log = logging.getLogger("engine.http")

NOT_FOUND_HINT = (
    "Stored responses are retained for a limited time and only for the caller that created them; a response "
    "created with store:false is never stored."
)


@dataclass(frozen=True)
class _Turn:
    request: ResponsesRequest
    caller: Caller
    response_id: str
    created_at: int
    items: list[Item]  # what the store keeps before the output: merged input, no instructions
    chat: ChatRequest
    persist: bool  # persistence asked for and a store to keep it


@dataclass(frozen=True)
class _Ending:
    """How a turn that did not fail ended, as the Responses API says it (TURN-4): a turn the chat path cut
    (finish ``length``: the gateway stopped waiting while the LS still ran) is ``incomplete``, as chat's
    ``length`` maps to ``max_output_tokens``; any other, tool calls included, ``completed``."""

    status: str
    incomplete_reason: str | None = None

    @classmethod
    def of(cls, finish_reason: str | None) -> _Ending:
        if finish_reason == "length":
            return cls("incomplete", "max_output_tokens")
        return cls("completed")


def response_not_found(response_id: str, param: str) -> ApiError:
    return ApiError(
        404, f"Response with id '{response_id}' not found. {NOT_FOUND_HINT}", code="response_not_found", param=param
    )


class ResponsesRoutes:
    def __init__(
        self, service: ChatService, store: ResponseStore | None, catalogue: ModelCatalogue, hooks: FrontHooks
    ) -> None:
        self._service = service
        self._store = store
        self._catalogue = catalogue
        self._hooks = hooks

    def routes(self) -> list[Route]:
        return [
            Route("/v1/responses", self.create, methods=["POST"]),
            Route("/v1/responses/{response_id}", self.retrieve, methods=["GET"]),
            Route("/v1/responses/{response_id}", self.delete, methods=["DELETE"]),
            Route("/v1/responses/{response_id}/input_items", self.input_items, methods=["GET"]),
        ]

    # ---------------------------------------------------------------------------------------- POST

    async def create(self, request: Request) -> Response:
        try:
            self._hooks.refuse_web_post(request)
            self._hooks.caller(request)  # the key first: a request without one is refused before its body is read
            body = await self._hooks.json_body(request)
            caller = self._hooks.body_caller(request, body)
            parsed = parse_responses_request(body, self._catalogue)
            turn = await self._prepare(parsed, caller, self._hooks.session_id(request))
        except ApiError as exc:
            return error_response(exc)
        if parsed.stream:
            return StreamingResponse(self._stream(turn), media_type="text/event-stream", headers=NO_CACHE_HEADERS)
        return await self._complete(turn)

    async def _prepare(self, parsed: ResponsesRequest, caller: Caller, session_id: str | None = None) -> _Turn:
        items = list(parsed.input_items)
        if parsed.previous_response_id is not None:
            prior = await self._lookup(parsed.previous_response_id, caller, param="previous_response_id")
            items = merge_chained(prior.messages, items)
        messages = lower_items(items)
        if parsed.instructions:
            messages.insert(0, {"role": "system", "content": parsed.instructions})
        chat = ChatRequest(
            body=parsed.body,
            model=parsed.model,
            messages=messages,
            stream=parsed.stream,
            include_usage=False,
            tools=parsed.chat_tools,
            tool_choice=parsed.chat_tool_choice,
            schema=parsed.schema,
            wants_json=parsed.wants_json,
            session_id=session_id,
        )
        return _Turn(
            request=parsed,
            caller=caller,
            response_id=new_id("resp"),
            created_at=int(self._store.now() if self._store is not None else time.time()),
            items=items,
            chat=chat,
            persist=parsed.store and self._store is not None,
        )

    def _run(self, turn: _Turn, emit: Callable[[ChatEvent], None], abort: threading.Event | None) -> None:
        self._service.run(turn.chat, turn.caller, emit, abort, use_cache=False)

    async def _complete(self, turn: _Turn) -> Response:
        events = await collect_events(functools.partial(self._run, turn), limiter=self._hooks.limiter, name="responses")
        for event in events:
            if event.error is not None:
                return error_response(event.error)
        builder = OutputBuilder()
        for event in events:
            builder.feed(event)
        usage = next((e.usage for e in events if e.kind == "usage"), None)
        ending = _Ending.of(next((e.text for e in events if e.kind == "finish"), None))
        refused = await self._commit(turn, builder.stored_items, ending)
        return JSONResponse(self._completed(turn, builder.items, refused, usage, ending))

    async def _stream(self, turn: _Turn) -> AsyncIterator[bytes]:
        writer = EventWriter()
        builder = OutputBuilder()
        started = self._body(turn, "in_progress", [], stored=turn.persist)
        yield writer.frame("response.created", {"response": started})
        yield writer.frame("response.in_progress", {"response": started})
        ending = _Ending.of(None)
        async with contextlib.aclosing(self._events(turn)) as events:
            async for event in events:
                if event is None:
                    yield HEARTBEAT
                    continue
                if event.kind == "error" and event.error is not None:
                    error = event.error
                    yield writer.frame("error", {"code": error.code, "message": error.message, "param": error.param})
                    failed = self._body(
                        turn,
                        "failed",
                        builder.items,
                        stored=False,
                        error={"code": error.code or "server_error", "message": error.message},
                    )
                    yield writer.frame("response.failed", {"response": failed})
                    return
                if event.kind == "finish":
                    ending = _Ending.of(event.text)
                for kind, payload in builder.feed(event):
                    yield writer.frame(kind, payload)
                if event.kind == "usage":
                    # Committed before the client hears of its end, so a GET right after it finds it.
                    refused = await self._commit(turn, builder.stored_items, ending)
                    done = self._completed(turn, builder.items, refused, event.usage, ending)
                    yield writer.frame(f"response.{ending.status}", {"response": done})

    def _events(self, turn: _Turn) -> AsyncGenerator[ChatEvent | None, None]:
        """The turn's events as they come; ``None`` when a heartbeat is due (see :func:`turn_events`)."""

        run = functools.partial(self._run, turn)
        return turn_events(run, limiter=self._hooks.limiter, heartbeat_s=self._hooks.heartbeat_s, name="responses")

    async def _commit(self, turn: _Turn, output: Sequence[Item], ending: _Ending) -> str | None:
        """Store the turn when persistence was wanted, with its status (a cut turn is kept ``incomplete``,
        so a later read says what the POST said); why the store refused it, None otherwise. A refusal is
        logged: the client holds an id that will 404."""
        store = self._store
        if store is None or not turn.persist:
            return None
        put = functools.partial(
            store.put,
            turn.response_id,
            [*turn.items, *output],
            turn.caller.id,
            model=turn.request.model.name,
            status=ending.status,
            incomplete_reason=ending.incomplete_reason,
            created_at=turn.created_at,
        )
        try:
            result = await anyio.to_thread.run_sync(put)
        except Exception as exc:
            log.exception("Responses: storing %s failed", turn.response_id)
            reason: str | None = f"{type(exc).__name__}: {exc}"
        else:
            if result.stored:
                return None
            reason = result.reason
        log.warning("Responses: store refused %s — client holds an id that will 404 (%s)", turn.response_id, reason)
        return reason or "refused"

    def _completed(
        self,
        turn: _Turn,
        output: Sequence[Mapping[str, Any]],
        refused: str | None,
        usage: Mapping[str, Any] | None,
        ending: _Ending,
    ) -> dict[str, Any]:
        """The ended response (``completed``, or ``incomplete`` when the turn was cut): ``store`` says whether
        it was kept, and a refused write is told to the client (``store_error``), not only logged, since its
        id will answer 404."""
        body = self._body(
            turn,
            ending.status,
            output,
            stored=turn.persist and refused is None,
            usage=usage,
            incomplete_reason=ending.incomplete_reason,
        )
        if refused is not None:
            body["store_error"] = {
                "code": "store_refused",
                "message": f"the response store refused this turn ({refused}); GET /v1/responses/{turn.response_id} "
                "and previous_response_id will answer 404",
            }
        return body

    def _body(
        self,
        turn: _Turn,
        status: str,
        output: Sequence[Mapping[str, Any]],
        *,
        stored: bool,
        usage: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        incomplete_reason: str | None = None,
    ) -> dict[str, Any]:
        return response_object(
            response_id=turn.response_id,
            created_at=turn.created_at,
            model=turn.request.model.name,
            status=status,
            output=output,
            echo=turn.request.echo,
            store=stored,
            usage=responses_usage(usage),
            instructions=turn.request.instructions,
            previous_response_id=turn.request.previous_response_id,
            error=error,
            incomplete_reason=incomplete_reason,
        )

    # ------------------------------------------------------------------------------- by id

    async def _lookup(self, response_id: str, caller: Caller, *, param: str) -> StoredEntry:
        """The caller's stored entry, or a 404 ``response_not_found`` naming ``param`` (unknown, expired
        and someone else's look the same). Chaining without a store is a 400."""
        store = self._store
        if store is None:
            if param == "previous_response_id":
                raise bad_request(
                    "previous_response_id needs the response store, which is disabled on this gateway (--store off)",
                    param=param,
                )
            raise response_not_found(response_id, param)
        lookup = await anyio.to_thread.run_sync(store.get, response_id, caller.id)
        if not lookup.ok or lookup.entry is None:
            raise response_not_found(response_id, param)
        return lookup.entry

    async def retrieve(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        try:
            entry = await self._lookup(response_id, self._hooks.caller(request), param="response_id")
        except ApiError as exc:
            return error_response(exc)
        body = response_object(
            response_id=entry.id,
            created_at=int(entry.created_at),
            model=entry.model,
            status=entry.status,
            output=stored_output(entry.messages),
            echo={},
            store=True,
            incomplete_reason=entry.incomplete_reason,
        )
        return JSONResponse(body)

    async def delete(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        try:
            self._hooks.refuse_origin(request)
            caller = self._hooks.caller(request)
            store = self._store
            deleted = store is not None and await anyio.to_thread.run_sync(store.delete, response_id, caller.id)
            if not deleted:
                raise response_not_found(response_id, "response_id")
        except ApiError as exc:
            return error_response(exc)
        return JSONResponse({"id": response_id, "object": "response", "deleted": True})

    async def input_items(self, request: Request) -> Response:
        """The stored items verbatim (the store's notices included), oldest first unless ``order=desc``;
        ``limit`` (1..100, default: all) and ``after`` (an item id) page through them."""
        response_id = request.path_params["response_id"]
        try:
            caller = self._hooks.caller(request)
            order, limit, after = _list_params(request)
            entry = await self._lookup(response_id, caller, param="response_id")
            items = list(entry.messages)
            if order == "desc":
                items.reverse()
            if after is not None:
                ids = [item.get("id") for item in items]
                if after not in ids:
                    raise bad_request(f"'after' names no item of response {response_id}", param="after")
                items = items[ids.index(after) + 1 :]
        except ApiError as exc:
            return error_response(exc)
        page = items if limit is None else items[:limit]
        return JSONResponse(
            {
                "object": "list",
                "data": page,
                "first_id": page[0].get("id") if page else None,
                "last_id": page[-1].get("id") if page else None,
                "has_more": len(page) < len(items),
            }
        )


def _list_params(request: Request) -> tuple[str, int | None, str | None]:
    query = request.query_params
    order = query.get("order", "asc")
    if order not in ("asc", "desc"):
        raise bad_request("'order' must be 'asc' or 'desc'", param="order")
    limit: int | None = None
    raw = query.get("limit")
    if raw is not None:
        if not raw.isdigit() or not 1 <= int(raw) <= 100:
            raise bad_request("'limit' must be an integer from 1 to 100", param="limit")
        limit = int(raw)
    return order, limit, query.get("after")

"""One turn's events, from the worker thread that runs it to the event loop that answers: as they come for a
stream (:func:`turn_events`), or all of them for a plain answer (:func:`collect_events`). The chat and
Responses fronts both run their turns through here."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncGenerator, Callable

import anyio

from engine.http.errors import ApiError
from engine.http.front import ChatEvent

log = logging.getLogger(__name__)

#: What a client hears when the turn itself crashed (the traceback is logged, never sent).
CRASH_MESSAGE = "the gateway failed on this request"

Emit = Callable[[ChatEvent], None]
Run = Callable[[Emit, threading.Event | None], None]
_END = object()


def _crashed() -> ChatEvent:
    return ChatEvent("error", error=ApiError(500, CRASH_MESSAGE, type="api_error", code="internal_error"))


async def collect_events(run: Run, *, limiter: anyio.CapacityLimiter, name: str) -> list[ChatEvent]:
    """Run ``run(emit, None)`` on a worker thread (within ``limiter``) and return every event it emitted; a
    crash of the turn is logged and answered by one error event alone."""
    events: list[ChatEvent] = []
    try:
        await anyio.to_thread.run_sync(run, events.append, None, limiter=limiter)
    except Exception:
        log.exception("%s turn crashed", name)
        return [_crashed()]
    return events


async def turn_events(
    run: Run,
    *,
    limiter: anyio.CapacityLimiter,
    heartbeat_s: float,
    name: str,
) -> AsyncGenerator[ChatEvent | None, None]:
    """Run ``run(emit, abort)`` on a worker thread (within ``limiter``) and yield its events as they come;
    ``None`` when ``heartbeat_s`` passed without one. A crash of the turn is logged and becomes one error
    event. Closing this iterator (the client went away) sets ``abort``: the turn stops, reports no usage and
    commits nothing, and the iterator waits for the thread to finish."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    abort = threading.Event()

    def emit(event: ChatEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    async def work() -> None:
        try:
            await anyio.to_thread.run_sync(run, emit, abort, limiter=limiter)
        except Exception:
            log.exception("%s turn crashed", name)
            queue.put_nowait(_crashed())
        finally:
            queue.put_nowait(_END)

    task = asyncio.create_task(work())
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), timeout=heartbeat_s)
            except TimeoutError:
                yield None
                continue
            if event is _END:
                return
            assert isinstance(event, ChatEvent)
            yield event
    finally:
        abort.set()
        if not task.done():
            await asyncio.shield(task)

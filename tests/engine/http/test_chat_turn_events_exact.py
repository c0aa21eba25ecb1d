"""A turn's events from its worker thread to the event loop: all at once, or as they come with heartbeats,
crashes reported as one error, and a closed stream aborting the turn and waiting for it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import anyio
import pytest

from engine.http.front import ChatEvent
from engine.http.turn_events import CRASH_MESSAGE, Emit, collect_events, turn_events

CRASH_BODY = {"error": {"message": CRASH_MESSAGE, "type": "api_error", "param": None, "code": "internal_error"}}
Run = Callable[[Emit, threading.Event | None], None]


def _script(*events: ChatEvent, pause_s: float = 0.0) -> Run:
    def run(emit: Emit, abort: threading.Event | None) -> None:
        for event in events:
            if pause_s:
                time.sleep(pause_s)
            emit(event)

    return run


def _crash(emit: Emit, abort: threading.Event | None) -> None:
    emit(ChatEvent("role"))
    raise RuntimeError("the turn broke")


def _bodies(events: list[ChatEvent | None]) -> list[object]:
    return [None if e is None else e.error.body() if e.error is not None else (e.kind, e.text) for e in events]


def test_collect_events_returns_every_event_run_within_the_limiter() -> None:
    limiter = anyio.CapacityLimiter(1)
    seen: list[tuple[float, threading.Event | None]] = []

    def run(emit: Emit, abort: threading.Event | None) -> None:
        seen.append((limiter.borrowed_tokens, abort))
        emit(ChatEvent("content", text="a"))
        emit(ChatEvent("finish", text="stop"))

    async def main() -> list[ChatEvent]:
        return await collect_events(run, limiter=limiter, name="chat")

    assert _bodies(list(asyncio.run(main()))) == [("content", "a"), ("finish", "stop")]
    assert seen == [(1, None)]


def test_a_crashed_turn_is_one_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    async def collected() -> list[ChatEvent]:
        return await collect_events(_crash, limiter=anyio.CapacityLimiter(1), name="chat")

    async def streamed() -> list[ChatEvent | None]:
        return [e async for e in turn_events(_crash, limiter=anyio.CapacityLimiter(1), heartbeat_s=5, name="resp")]

    plain: list[ChatEvent | None] = list(asyncio.run(collected()))
    stream = asyncio.run(streamed())
    assert _bodies(plain) == [CRASH_BODY]
    assert _bodies(stream) == [("role", ""), CRASH_BODY]
    for crashed in (plain[-1], stream[-1]):  # answered as an error event with status 500
        assert crashed is not None
        assert crashed.error is not None
        assert (crashed.kind, crashed.error.status) == ("error", 500)
    assert [r.getMessage() for r in caplog.records] == ["chat turn crashed", "resp turn crashed"]
    assert caplog.records[0].exc_info is not None
    assert CRASH_BODY["error"]["message"] == "the gateway failed on this request"


def test_a_stream_yields_events_in_order_and_heartbeats_while_waiting() -> None:
    run = _script(ChatEvent("content", text="a"), ChatEvent("content", text="b"), pause_s=0.06)

    async def main() -> list[ChatEvent | None]:
        return [e async for e in turn_events(run, limiter=anyio.CapacityLimiter(1), heartbeat_s=0.01, name="chat")]

    events = asyncio.run(main())
    assert [e for e in _bodies(events) if e is not None] == [("content", "a"), ("content", "b")]
    assert events[0] is None
    assert events[-1] is not None


def test_a_quick_stream_has_no_heartbeat() -> None:
    run = _script(ChatEvent("content", text="a"))

    async def main() -> list[ChatEvent | None]:
        return [e async for e in turn_events(run, limiter=anyio.CapacityLimiter(1), heartbeat_s=5, name="chat")]

    assert _bodies(asyncio.run(main())) == [("content", "a")]


def test_closing_a_stream_aborts_the_turn_and_waits_for_it() -> None:
    limiter = anyio.CapacityLimiter(1)
    finished = threading.Event()
    aborts: list[threading.Event | None] = []

    def run(emit: Emit, abort: threading.Event | None) -> None:
        aborts.append(abort)
        emit(ChatEvent("content", text="first"))
        assert abort is not None
        abort.wait(5)
        time.sleep(0.02)
        emit(ChatEvent("content", text="late"))
        finished.set()

    async def main() -> list[ChatEvent | None]:
        events = turn_events(run, limiter=limiter, heartbeat_s=5, name="chat")
        first = await anext(events)
        assert aborts[0] is not None
        assert not aborts[0].is_set()
        assert limiter.borrowed_tokens == 1
        await events.aclose()
        assert finished.is_set()
        assert limiter.borrowed_tokens == 0
        return [first]

    assert _bodies(asyncio.run(main())) == [("content", "first")]
    assert aborts[0] is not None
    assert aborts[0].is_set()

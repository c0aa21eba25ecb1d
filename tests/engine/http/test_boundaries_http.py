"""The HTTP front's and ``cascade-engine serve``'s limits at the limit, one under and one over, where the
existing tests pinned fewer than all three (docs/boundaries.md is the audit of every limit).

The serve options are checked by the CLI's own parser and validation in process (a refused option is
exit 2 before anything is bound); the session limits through a served gateway on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
import pytest

from engine.cli import UsageError, _options, _parser
from engine.http.gateway import ServedGateway
from engine.http.serve import ServeOptions
from engine.http.sessions import HEADER
from fakels.clock import ManualClock
from fakels.scenario import Chunk, Scenario, Turn
from fakels.server import FakeLSThread
from tests.engine.http.conftest import CSRF, KEY_A, MODEL, serve
from tests.support.fake_ls import StartFakeLs

LIMIT_IDS = ["limit-1", "limit", "limit+1"]
BASE = ["serve", "--ls-address", "127.0.0.1:1"]


def options(*extra: str) -> ServeOptions:
    return _options(_parser().parse_args([*BASE, *(extra if "--port" in extra else ("--port", "0", *extra))]))


# (option, values at limit-1 / limit / limit+1, which of the three are accepted). Lower bounds read
# left to right from refused to accepted, upper bounds from accepted to refused.
CLI_BOUNDS: list[tuple[str, tuple[str, str, str], tuple[bool, bool, bool]]] = [
    ("--port", ("-1", "0", "1"), (False, True, True)),
    ("--port", ("65534", "65535", "65536"), (True, True, False)),
    ("--poll-interval-s", ("0.0009", "0.001", "0.0011"), (False, True, True)),
    ("--poll-interval-s", ("9.999", "10", "10.001"), (True, True, False)),
    ("--max-body-bytes", ("0", "1", "2"), (False, True, True)),
    ("--store-max-entries", ("0", "1", "2"), (False, True, True)),
    ("--store-max-messages", ("0", "1", "2"), (False, True, True)),
    ("--store-max-bytes", ("0", "1", "2"), (False, True, True)),
    ("--store-max-entry-bytes", ("0", "1", "2"), (False, True, True)),
    ("--store-min-tenant-bytes", ("0", "1", "2"), (False, True, True)),
]


@pytest.mark.parametrize("position", [0, 1, 2], ids=LIMIT_IDS)
@pytest.mark.parametrize(
    ("option", "values", "accepted"),
    CLI_BOUNDS,
    ids=[f"{option}={values[1]}" for option, values, _ in CLI_BOUNDS],
)
def test_serve_option_ranges_are_exact(
    option: str, values: tuple[str, str, str], accepted: tuple[bool, bool, bool], position: int
) -> None:
    argv = [option, values[position]]
    if option != "--port":
        argv = ["--port", "0", *argv]
    if accepted[position]:
        options(*argv)
    else:
        with pytest.raises(UsageError, match=option):
            options(*argv)


@pytest.mark.parametrize("option", ["--heartbeat-s", "--store-ttl-s", "--store-max-age-s"])
@pytest.mark.parametrize(("value", "ok"), [("-0.001", False), ("0", False), ("0.001", True)], ids=LIMIT_IDS)
def test_positive_second_options_refuse_zero_and_take_a_millisecond(option: str, value: str, ok: bool) -> None:
    """Exclusive lower bound 0 s: the limit itself is refused, the next millisecond accepted."""
    if ok:
        options("--port", "0", option, value)
    else:
        with pytest.raises(UsageError):
            options("--port", "0", option, value)


def test_accepted_serve_limits_reach_the_settings_unchanged() -> None:
    chosen = options(
        "--port", "65535", "--max-body-bytes", "1", "--store-max-entries", "1", "--store-max-messages", "1",
        "--store-max-bytes", "1", "--store-max-entry-bytes", "1", "--store-min-tenant-bytes", "1",
    )  # fmt: skip
    assert (chosen.port, chosen.http.max_body_bytes) == (65535, 1)
    limits = chosen.store_limits
    assert (limits.max_entries, limits.max_messages, limits.max_bytes) == (1, 1, 1)
    assert (limits.max_entry_bytes, limits.min_tenant_bytes) == (1, 1)


# ------------------------------------------------------------------------------------------- sessions


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF)


@pytest.fixture(scope="module")
def served(fake: FakeLSThread) -> Iterator[ServedGateway]:
    gateway = serve(fake)
    yield gateway
    gateway.stop()


def commit(served: ServedGateway, session: str, call_id: str = "call_1") -> httpx.Response:
    """A chat turn committing one tool call and its result to ``session``."""
    call = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "found"},
    ]
    return httpx.post(
        served.url + "/v1/chat/completions",
        json={"model": MODEL, "messages": messages},
        headers={"Authorization": f"Bearer {KEY_A}", HEADER: session},
        timeout=30,
    )


def get_session(served: ServedGateway, session: str, start: str | None = None) -> httpx.Response:
    params = {} if start is None else {"start": start}
    return httpx.get(
        served.url + f"/v1/sessions/{session}", params=params, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30
    )


@pytest.mark.parametrize("length", [127, 128, 129], ids=LIMIT_IDS)
def test_a_session_id_is_at_most_128_characters(served: ServedGateway, length: int) -> None:
    session = f"len{length}-" + "s" * (length - len(f"len{length}-"))
    assert len(session) == length
    answer = commit(served, session)
    if length <= 128:
        assert answer.status_code == 200, answer.text
        assert get_session(served, session).json()["exploration"]["total"] == 2
    else:
        assert answer.status_code == 400
        assert answer.json()["error"]["param"] == HEADER


@pytest.fixture(scope="module")
def two_items(served: ServedGateway) -> str:
    """A session holding exactly two items (a tool call and its result)."""
    assert commit(served, "two-items").status_code == 200
    assert get_session(served, "two-items").json()["exploration"]["total"] == 2
    return "two-items"


@pytest.mark.parametrize(("start", "status"), [("1", 200), ("2", 200), ("3", 400)], ids=LIMIT_IDS)
def test_start_may_be_at_most_the_number_of_items(
    served: ServedGateway, two_items: str, start: str, status: int
) -> None:
    answer = get_session(served, two_items, start)
    assert answer.status_code == status, answer.text
    if status == 400:
        assert answer.json()["error"]["message"] == "'start' is past the session's 2 items"
    else:
        assert len(answer.json()["exploration"]["items"]) == 2 - int(start)


@pytest.mark.parametrize(
    ("start", "status"), [("00000002", 200), ("000000002", 200), ("0000000002", 400)], ids=LIMIT_IDS
)
def test_start_is_at_most_nine_digits(served: ServedGateway, two_items: str, start: str, status: int) -> None:
    answer = get_session(served, two_items, start)
    assert answer.status_code == status, answer.text
    if status == 400:
        assert answer.json()["error"]["message"] == "'start' must be a non-negative integer"


# ------------------------------------------------------------------------------------------- concurrent turns

TURN_CAP = 2


@pytest.fixture(scope="module")
def held(
    start_module_fake_ls: StartFakeLs,
) -> Iterator[tuple[FakeLSThread, ManualClock, ServedGateway, anyio.CapacityLimiter]]:
    """A gateway running at most TURN_CAP turns at once, before a fake whose turns wait for its clock."""
    clock = ManualClock()
    server = start_module_fake_ls(csrf_token=CSRF, clock=clock)
    gateway = serve(server, max_concurrent_turns=TURN_CAP)
    chat = next(r for r in gateway.gateway.app.routes if getattr(r, "path", "") == "/v1/chat/completions")
    limiter = chat.endpoint.__self__.limiter  # type: ignore[attr-defined]
    assert limiter.total_tokens == TURN_CAP
    yield server, clock, gateway, limiter
    gateway.stop()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll for a state the test expects (never asserts on durations; the deadline only stops a hang)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never reached: {what}"
        time.sleep(0.005)


@pytest.mark.parametrize("turns", [TURN_CAP - 1, TURN_CAP, TURN_CAP + 1], ids=LIMIT_IDS)
def test_at_most_max_concurrent_turns_run_at_once(
    held: tuple[FakeLSThread, ManualClock, ServedGateway, anyio.CapacityLimiter], turns: int
) -> None:
    fake, clock, served, limiter = held
    held_turn = Turn(chunks=(Chunk(text="a"), Chunk(text="b", delay_s=1.0)))
    fake.load_scenario(Scenario(turns=(held_turn,) * turns))
    fake.reset()
    body = {"model": MODEL, "messages": [{"role": "user", "content": "held"}]}
    headers = {"Authorization": f"Bearer {KEY_A}"}

    def one(n: int) -> int:
        request = {**body, "messages": [{"role": "user", "content": f"held {turns}-{n}"}]}
        return httpx.post(served.url + "/v1/chat/completions", json=request, headers=headers, timeout=60).status_code

    def sent() -> int:
        return sum(1 for e in fake.journal.entries() if e.method == "SendUserCascadeMessage" and e.status == "OK")

    with ThreadPoolExecutor(turns) as pool:
        answers = [pool.submit(one, n) for n in range(turns)]
        running = min(turns, TURN_CAP)
        waiting = turns - running
        stats = limiter.statistics
        wait_until(lambda: sent() == running and stats().tasks_waiting == waiting, f"{running} sent, {waiting} waiting")
        assert (sent(), stats().borrowed_tokens, stats().tasks_waiting) == (running, running, waiting)
        while not all(a.done() for a in answers):  # each clock step lets the held turns finish
            clock.advance(1.0)
            time.sleep(0.005)
        assert [a.result() for a in answers] == [200] * turns
    assert sent() == turns

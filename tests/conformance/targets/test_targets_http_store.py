"""The HTTP target's store operations against a Responses API that answers outside the usual path
(the echo gateway's canned store, in this process): paging without ``last_id``, answers that are
gone, and bodies outside the API."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from conformance.errors import PreconditionNotMet, TargetError
from conformance.targets import HttpOptions, HttpTarget
from conformance.targets._http_store import DEFAULT_STORE_LIMITS, HttpStore
from conformance.targets._scope import Caller, CallerScope
from fakels.server import FakeLSThread
from tests.conformance.targets.targets_support import Canned, RecordingLs, canned_server, echo_server
from tests.support.fake_ls import StartFakeLs

LIMITS = {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}
Log = list[tuple[str, str, str]]


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, Log]]:
    with echo_server() as served:
        yield served


# Bodies and reads exactly as the tests give them: no per-user signal.
UNSCOPED = CallerScope("none")


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token="store-csrf")


@pytest.fixture
def ls(fake: FakeLSThread) -> RecordingLs:
    return RecordingLs(fake, "store-csrf")


def _store_over(target: HttpTarget, ls: RecordingLs) -> HttpStore:
    """A store (callers k1, k2; model m) sending through ``target``."""
    return HttpStore(
        target._send,
        callers=[Caller("k1", None), Caller("k2", None)],
        model="m",
        limits=LIMITS,
        ls=lambda: ls,
        describe=lambda what: f"the gateway: {what}",
        scope=UNSCOPED,
    )


@pytest.fixture
def store(echo: tuple[str, Log], ls: RecordingLs) -> Iterator[HttpStore]:
    target = HttpTarget(echo[0], HttpOptions(api_keys=("k1", "k2"), caller_scope=UNSCOPED))
    yield _store_over(target, ls)
    target.close()


def test_input_items_are_paged_after_the_last_items_id(store: HttpStore, echo: tuple[str, Log]) -> None:
    echo[1].clear()
    assert store.get("paged", 1) == {"messages": [{"id": "a", "n": 1}, {"id": "b", "n": 2}], "answer": "paged answer"}
    assert echo[1] == [
        ("GET", "/v1/responses/paged/input_items?limit=100&order=asc", "k2"),
        ("GET", "/v1/responses/paged/input_items?limit=100&order=asc&after=a", "k2"),
        ("GET", "/v1/responses/paged", "k2"),
    ]


def test_input_items_are_paged_after_the_listings_last_id(store: HttpStore) -> None:
    assert store.get("lastid", 0) == {"messages": [{"id": "a"}, {"id": "b"}], "answer": None}


def test_an_entry_whose_answer_is_gone_is_not_found(store: HttpStore, echo: tuple[str, Log]) -> None:
    echo[1].clear()
    assert store.get("gone", 0) == {"not_found": True}
    assert [path for _, path, _ in echo[1]] == [
        "/v1/responses/gone/input_items?limit=100&order=asc",
        "/v1/responses/gone",
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("nolist", 'the gateway: input_items of nolist carry no data list: {"data": "x"}'),
        ("notdict", "the gateway: GET /v1/responses/notdict/input_items answered 200: [1]"),
        ("longlist", "the gateway: input_items of longlist carry no data list: " + ('{"data": "' + "x" * 400)[:300]),
        ("broken", 'the gateway: GET /v1/responses/broken/input_items answered 500: "kaput"'),
    ],
)
def test_input_items_outside_the_api_are_errors(store: HttpStore, entry: str, message: str) -> None:
    with pytest.raises(TargetError) as info:
        store.get(entry, 0)
    assert str(info.value) == message


def test_deletes_answer_by_status(store: HttpStore, echo: tuple[str, Log]) -> None:
    echo[1].clear()
    assert store.delete("fine", 0) == {"deleted": True}
    assert store.delete("gone", 1) == {"deleted": False}
    with pytest.raises(TargetError) as info:
        store.delete("broken", 0)
    assert str(info.value) == "the gateway: DELETE /v1/responses/broken answered 500: nope"
    assert echo[1] == [
        ("DELETE", "/v1/responses/fine", "k1"),
        ("DELETE", "/v1/responses/gone", "k2"),
        ("DELETE", "/v1/responses/broken", "k1"),
    ]


def test_a_put_plays_the_answer_and_keeps_the_output_items_but_reasoning(
    store: HttpStore, ls: RecordingLs, echo: tuple[str, Log]
) -> None:
    echo[1].clear()
    answer: dict[str, Any] = {"tool_call": {"name": "f", "arguments": "{}"}}
    put = store.put([{"role": "user", "content": "mixed"}], 0, answer)
    assert put == {"id": "r1", "appended": [{"type": "message", "content": []}]}
    call = {"id": "call_store_answer", "name": "f", "arguments_json": "{}"}
    assert ls.loaded == [{"turns": [{"chunks": [{"tool_call": call}]}]}]
    assert ls.resets == 1
    assert store.put([{"role": "user", "content": "no-output"}], 1, {"text": "t"}) == {"id": "r2", "appended": []}
    assert ls.loaded[1] == {"turns": [{"chunks": [{"text": "t"}]}]}
    assert echo[1] == [
        ("POST", "/v1/responses", "k1"),
        ("GET", "/v1/responses/r1", "k1"),
        ("POST", "/v1/responses", "k2"),
    ]


def test_a_put_answered_without_an_id_is_an_error(store: HttpStore) -> None:
    with pytest.raises(TargetError) as info:
        store.put([{"role": "user", "content": "no-id"}], 0, {"text": "t"})
    assert str(info.value) == 'the gateway: POST /v1/responses answered 200: {"object": "response", "id": 3}'


# ---------------------------------------------------------------------- exact requests and answers

JSON = [("Content-Type", "application/json")]
LONG = "e" * 600
ANSWERS: dict[tuple[str, str], Canned] = {
    ("POST", "/v1/responses"): (200, JSON, b'{"id": "resp_1", "output": []}'),
    ("GET", "/v1/responses/held/input_items?limit=100&order=asc"): (200, JSON, b'{"data": [], "has_more": false}'),
    ("GET", "/v1/responses/held"): (500, [], LONG.encode()),
    ("GET", "/v1/responses/resp_1"): (200, JSON, b'{"id": "resp_1", "output": []}'),
}
Received = list[tuple[str, str, dict[str, str], bytes]]


@contextmanager
def canned_store(ls: RecordingLs, answers: Mapping[tuple[str, str], Canned]) -> Iterator[tuple[HttpStore, Received]]:
    """A store (callers k1, k2; model m) over a gateway answering ``answers``."""
    with canned_server(answers) as (url, received):
        target = HttpTarget(url, HttpOptions())
        try:
            store = _store_over(target, ls)
            received.clear()  # the probe at open
            yield store, received
        finally:
            target.close()


def test_a_put_posts_the_conversation_to_be_stored_with_the_callers_key(ls: RecordingLs) -> None:
    messages = [{"role": "user", "content": "keep me"}]
    with canned_store(ls, ANSWERS) as (store, received):
        assert store.put(messages, 1, {"text": "t"}) == {"id": "resp_1", "appended": []}
    # The first entry is read back at once by its owner: a gateway that keeps none has no store.
    [(method, path, headers, body), probe] = received
    assert (method, path, headers["authorization"]) == ("POST", "/v1/responses", "Bearer k2")
    assert json.loads(body) == {"model": "m", "input": messages, "store": True}
    assert (probe[0], probe[1], probe[2]["authorization"]) == ("GET", "/v1/responses/resp_1", "Bearer k2")
    with canned_store(ls, ANSWERS) as (store, received):
        store.put(messages, 1, {"text": "t"})
        store.put(messages, 0, {"text": "t"})
    assert [(m, p) for m, p, _h, _b in received] == [
        ("POST", "/v1/responses"),
        ("GET", "/v1/responses/resp_1"),
        ("POST", "/v1/responses"),
    ]


def test_a_gateway_whose_first_entry_its_owner_cannot_read_keeps_no_store(ls: RecordingLs) -> None:
    answers = {k: v for k, v in ANSWERS.items() if k != ("GET", "/v1/responses/resp_1")}
    with canned_store(ls, answers) as (store, received):
        with pytest.raises(PreconditionNotMet) as info:
            store.put([{"role": "user", "content": "keep me"}], 0, {"text": "t"})
        assert info.value.reason == (
            "the gateway keeps no response store: GET /v1/responses/resp_1 answered 404 to its owner right after "
            "POST /v1/responses stored it (no canned answer); the store may keep entries only for callers with a "
            "per-user signal, and --caller-scope none sends none (try --caller-scope user and --read-scope header:NAME "
            "or query:NAME)"
        )
        with pytest.raises(PreconditionNotMet) as again:  # decided: later examples are not even sent
            store.open(dict(DEFAULT_STORE_LIMITS))
        assert again.value.reason == info.value.reason
    assert len(received) == 2


@pytest.mark.parametrize(
    ("status", "document", "shown"),
    [
        (201, b'{"id": "resp_1"}', '{"id": "resp_1"}'),
        (500, b'{"id": "resp_1"}', '{"id": "resp_1"}'),
        (200, b'["resp_1"]', '["resp_1"]'),
        (502, LONG.encode(), LONG[:500]),
    ],
)
def test_a_put_not_answered_with_a_stored_response_is_an_error_showing_500_characters(
    ls: RecordingLs, status: int, document: bytes, shown: str
) -> None:
    answers = {("POST", "/v1/responses"): (status, JSON, document)}
    with canned_store(ls, answers) as (store, _received), pytest.raises(TargetError) as info:
        store.put([{"role": "user", "content": "x"}], 0, {"text": "t"})
    assert str(info.value) == f"the gateway: POST /v1/responses answered {status}: {shown}"


def test_an_answer_that_cannot_be_read_back_is_an_error_naming_its_request(ls: RecordingLs) -> None:
    with canned_store(ls, ANSWERS) as (store, _received), pytest.raises(TargetError) as info:
        store.get("held", 0)
    assert str(info.value) == f"the gateway: GET /v1/responses/held answered 500: {LONG[:500]}"


def test_a_put_answered_with_a_store_error_is_a_rejected_write(ls: RecordingLs) -> None:
    """The reference's Responses API answers a turn it could not store with ``store_error`` (its id
    will 404): that is the store's rejection, judged as one, not an entry its owner cannot read; and
    no probe is spent on it (the next stored entry is the one that shows the gateway keeps a store)."""
    refused = {
        "id": "resp_1",
        "output": [],
        "store": False,
        "store_error": {"code": "store_refused", "message": "the response store refused this turn (cannot shrink)"},
    }
    answers = {**ANSWERS, ("POST", "/v1/responses"): (200, JSON, json.dumps(refused).encode())}
    with canned_store(ls, answers) as (store, received):
        put = store.put([{"role": "user", "content": "x"}], 0, {"text": "t"})
        assert put == {"rejected": "store_error: the response store refused this turn (cannot shrink)"}
        assert [(m, p) for m, p, _h, _b in received] == [("POST", "/v1/responses")]
    bare = {**refused, "store_error": {"code": "store_refused"}}
    answers = {**ANSWERS, ("POST", "/v1/responses"): (200, JSON, json.dumps(bare).encode())}
    with canned_store(ls, answers) as (store, _received):
        assert store.put([{"role": "user", "content": "x"}], 0, {"text": "t"}) == {
            "rejected": 'store_error: {"code": "store_refused"}'
        }

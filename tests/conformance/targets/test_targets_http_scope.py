"""Who the kit is on a black-box gateway (conformance/targets/_scope.py): every body carries its caller's
per-user signal (--caller-scope), bodyless store requests carry it where the gateway reads it
(--read-scope), one key makes two callers with two signals, and with two keys the other caller of an
example alternates between the second key and the first key with a third signal."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from conformance.errors import PreconditionNotMet, TargetSpecError
from conformance.targets import CallerScope, HttpOptions, HttpTarget, ReadScope, http_options
from conformance.targets._http_store import HttpStore
from conformance.targets._scope import Caller, parse_read_scope
from fakels.server import FakeLSThread
from tests.conformance.targets.targets_support import Canned, RecordingLs, canned_server
from tests.support.fake_ls import StartFakeLs

LIMITS = {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}
JSON = [("Content-Type", "application/json")]
STORED: Canned = (200, JSON, b'{"id": "resp_1", "output": []}')
NO_ITEMS: Canned = (200, JSON, b'{"data": [], "has_more": false}')
ITEMS = "/v1/responses/resp_1/input_items?limit=100&order=asc"
RUN = "0123456789ab"
HEADER = CallerScope("user", (ReadScope("header", "x-response-user"),), run=RUN)
Received = list[tuple[str, str, dict[str, str], bytes]]


def signal(n: int) -> str:
    return f"conformance-{RUN}-caller-{n}"


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token="scope-csrf")


@contextmanager
def scoped_store(
    fake: FakeLSThread,
    scope: CallerScope,
    keys: Sequence[str],
    answers: dict[tuple[str, str], Canned],
    scoped_by: str | None = None,
) -> Iterator[tuple[HttpStore, Received]]:
    """The store operations of an HTTP target with ``scope`` and ``keys`` over a canned gateway (one
    whose reads need the ``scoped_by`` header, when given)."""
    with canned_server(answers, scoped_by) as (url, received):
        target = HttpTarget(url, HttpOptions(api_keys=tuple(keys), caller_scope=scope))
        try:
            store = HttpStore(
                target._send,
                callers=scope.callers(keys),
                model="m",
                limits=LIMITS,
                ls=lambda: RecordingLs(fake, "scope-csrf"),
                describe=lambda what: f"the gateway: {what}",
                scope=scope,
            )
            received.clear()  # the probe at open
            yield store, received
        finally:
            target.close()


def _who(request: tuple[str, str, dict[str, str], bytes]) -> tuple[str, str, str, str | None, str | None]:
    """(method, path, key, the body's user, the x-response-user header) of a received request."""
    method, path, headers, body = request
    user = json.loads(body).get("user") if body else None
    return method, path, headers["authorization"].removeprefix("Bearer "), user, headers.get("x-response-user")


# ---------------------------------------------------------------------- the callers


def test_one_key_makes_two_callers_with_two_signals() -> None:
    assert HEADER.callers(["k"]) == [Caller("k", signal(0)), Caller("k", signal(1))]


def test_two_keys_make_three_callers_so_both_ways_are_exercised() -> None:
    assert HEADER.callers(["k1", "k2"]) == [Caller("k1", signal(0)), Caller("k2", signal(1)), Caller("k1", signal(2))]


def test_without_a_signal_each_key_is_one_anonymous_caller() -> None:
    assert CallerScope("none").callers(["k1", "k2"]) == [Caller("k1", None), Caller("k2", None)]
    assert CallerScope("none").callers(["k"]) == [Caller("k", None)]


def test_signals_differ_from_run_to_run() -> None:
    first, second = CallerScope().callers(["k"]), CallerScope().callers(["k"])
    assert first[0].signal != second[0].signal
    assert first[0].signal != first[1].signal


@pytest.mark.parametrize(
    ("scope", "body"),
    [
        ("user", {"model": "m", "user": "s"}),
        ("safety_identifier", {"model": "m", "safety_identifier": "s"}),
        ("prompt_cache_key", {"model": "m", "prompt_cache_key": "s"}),
        ("metadata.conversation_id", {"model": "m", "metadata": {"conversation_id": "s"}}),
        ("metadata.session_id", {"model": "m", "metadata": {"session_id": "s"}}),
        ("none", {"model": "m"}),
    ],
)
def test_the_signal_goes_in_the_field_chosen(scope: str, body: dict[str, Any]) -> None:
    assert CallerScope(scope).body({"model": "m"}, Caller("k", "s")) == body


def test_a_metadata_signal_keeps_the_metadata_given_and_changes_nothing_given() -> None:
    given = {"model": "m", "metadata": {"tag": "x"}}
    assert CallerScope("metadata.session_id").body(given, Caller("k", "s")) == {
        "model": "m",
        "metadata": {"tag": "x", "session_id": "s"},
    }
    assert given == {"model": "m", "metadata": {"tag": "x"}}


def test_an_anonymous_caller_sends_nothing_anywhere() -> None:
    nobody = Caller("k", None)
    assert HEADER.body({"model": "m"}, nobody) == {"model": "m"}
    assert HEADER.read_headers(nobody) == {}
    assert HEADER.read_params(nobody) == {}


# ---------------------------------------------------------------------- on the wire


def test_bodies_carry_the_signal_and_reads_carry_it_in_the_header(fake: FakeLSThread) -> None:
    answers = {
        ("POST", "/v1/responses"): STORED,
        ("GET", "/v1/responses/resp_1"): STORED,
        ("GET", ITEMS): NO_ITEMS,
        ("DELETE", "/v1/responses/resp_1"): STORED,
    }
    with scoped_store(fake, HEADER, ["k1", "k2"], answers, scoped_by="x-response-user") as (store, received):
        store.put([{"role": "user", "content": "one"}], 0, {"text": "t"})
        store.get("resp_1", 1)
        store.delete("resp_1", 1)
        store.put([{"role": "user", "content": "two"}], 0, {"text": "t"})
        store.get("resp_1", 1)
        store.delete("resp_1", 0)
    items = ITEMS
    assert [_who(request) for request in received] == [
        ("POST", "/v1/responses", "k1", signal(0), None),
        ("GET", "/v1/responses/resp_1", "k1", None, signal(0)),  # the owner reads its first entry at once
        ("GET", "/v1/responses/resp_1", "k1", None, None),  # not without its signal: the store is scoped by it
        ("GET", items, "k2", None, signal(1)),  # the other caller of the first entry: the second key
        ("GET", "/v1/responses/resp_1", "k2", None, signal(1)),
        ("DELETE", "/v1/responses/resp_1", "k2", None, signal(1)),
        ("POST", "/v1/responses", "k1", signal(0), None),
        ("GET", items, "k1", None, signal(2)),  # of the second: the first key with a third signal
        ("GET", "/v1/responses/resp_1", "k1", None, signal(2)),
        ("DELETE", "/v1/responses/resp_1", "k1", None, signal(0)),
    ]


def test_reads_carry_the_signal_in_the_query_when_told(fake: FakeLSThread) -> None:
    scope = CallerScope("prompt_cache_key", (ReadScope("query", "user"),), run=RUN)
    read = f"/v1/responses/resp_1?user={signal(0)}"
    answers = {
        ("POST", "/v1/responses"): STORED,
        ("GET", read): STORED,
        ("GET", f"{ITEMS}&user={signal(1)}"): NO_ITEMS,
        ("GET", f"/v1/responses/resp_1?user={signal(1)}"): STORED,
    }
    with scoped_store(fake, scope, ["k"], answers) as (store, received):
        store.put([{"role": "user", "content": "one"}], 0, {"text": "t"})
        store.get("resp_1", 1)
    assert json.loads(received[0][3])["prompt_cache_key"] == signal(0)
    assert [path for _, path, _, _ in received[1:]] == [
        read,
        "/v1/responses/resp_1",  # the probe without the signal: the canned gateway answers 404
        f"{ITEMS}&user={signal(1)}",
        f"/v1/responses/resp_1?user={signal(1)}",
    ]
    assert all("x-response-user" not in headers for _, _, headers, _ in received)


def test_a_store_scoped_by_key_alone_has_only_the_other_keys_as_other_callers(fake: FakeLSThread) -> None:
    answers = {
        ("POST", "/v1/responses"): STORED,
        ("GET", "/v1/responses/resp_1"): STORED,
        ("GET", ITEMS): NO_ITEMS,
    }
    with scoped_store(fake, HEADER, ["k1", "k2"], answers) as (store, received):
        for _ in range(2):
            store.put([{"role": "user", "content": "one"}], 0, {"text": "t"})
            store.get("resp_1", 1)
    assert [_who(request)[2:] for request in received if request[0] == "GET" and "input_items" in request[1]] == [
        ("k2", None, signal(1)),
        ("k2", None, signal(1)),  # never the first key with another signal: the same caller to this store
    ]
    with scoped_store(fake, HEADER, ["k1"], answers) as (store, _):
        store.put([{"role": "user", "content": "one"}], 0, {"text": "t"})
        with pytest.raises(PreconditionNotMet) as info:
            store.get("resp_1", 1)
    assert info.value.reason == (
        "the example needs two callers, and the gateway's response store tells callers apart by API key alone (an "
        "entry stored with a per-user signal is read without it): give two --api-key options"
    )


def test_with_one_key_and_no_signal_there_is_no_other_caller(fake: FakeLSThread) -> None:
    with (
        scoped_store(fake, CallerScope("none"), ["k"], {}) as (store, received),
        pytest.raises(PreconditionNotMet) as info,
    ):
        store.get("resp_1", 1)
    assert info.value.reason == (
        "the example needs two callers: give two --api-key options, or send a per-user signal (--caller-scope "
        "other than none)"
    )
    assert received == []


NO_STORE = (
    "the gateway keeps no response store: GET /v1/responses/resp_1 answered 404 to its owner right after POST "
    "/v1/responses stored it (no canned answer); "
)


@pytest.mark.parametrize(
    ("scope", "hint"),
    [
        (
            CallerScope("user"),
            "the store may be scoped by the caller's per-user signal (user), which a GET carries only where the "
            "gateway reads it: give --read-scope header:NAME or --read-scope query:NAME",
        ),
        (
            HEADER,
            "the store may be scoped by a per-user signal the gateway reads elsewhere than header:x-response-user "
            "(--read-scope header:NAME or query:NAME) or by another body field (--caller-scope)",
        ),
        (
            CallerScope("none"),
            "the store may keep entries only for callers with a per-user signal, and --caller-scope none sends none "
            "(try --caller-scope user and --read-scope header:NAME or query:NAME)",
        ),
    ],
)
def test_an_owner_that_cannot_read_its_entry_is_told_about_read_scope(
    fake: FakeLSThread, scope: CallerScope, hint: str
) -> None:
    answers = {("POST", "/v1/responses"): STORED}
    with scoped_store(fake, scope, ["k"], answers) as (store, _), pytest.raises(PreconditionNotMet) as info:
        store.put([{"role": "user", "content": "one"}], 0, {"text": "t"})
    assert info.value.reason == NO_STORE + hint


# ---------------------------------------------------------------------- the options


def _options(**given: Any) -> HttpOptions:
    options = http_options("http://127.0.0.1:9", **given)
    assert options is not None
    return options


def test_the_default_is_user_with_no_read_scope() -> None:
    assert _options(api_keys=["k"]).caller_scope == CallerScope("user", ())
    assert HttpOptions().caller_scope == CallerScope("user", ())


def test_the_options_are_carried() -> None:
    options = _options(caller_scope="metadata.conversation_id", read_scope=["header:x-user", "query:uid"])
    assert options.caller_scope == CallerScope(
        "metadata.conversation_id", (ReadScope("header", "x-user"), ReadScope("query", "uid"))
    )
    assert (options.other_model, options.resends_history) == (None, False)
    declared = _options(other_model="gpt-5", resends_history=True)
    assert (declared.other_model, declared.resends_history) == ("gpt-5", True)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"caller_scope": "email"}, "--caller-scope must be one of user, safety_identifier, prompt_cache_key, "
         "metadata.conversation_id, metadata.session_id, none, got 'email'"),
        ({"read_scope": ["cookie:sid"]}, "--read-scope 'cookie:sid': expected header:NAME or query:NAME (e.g. "
         "--read-scope header:x-response-user or --read-scope query:user)"),
        ({"read_scope": ["header:"]}, "--read-scope 'header:': expected header:NAME or query:NAME (e.g. --read-scope "
         "header:x-response-user or --read-scope query:user)"),
        ({"read_scope": ["header:x user"]}, "--read-scope 'header:x user': 'x user' is no HTTP header name"),
        ({"read_scope": ["header:Authorization"]}, "--read-scope 'header:Authorization': the API key goes in "
         "Authorization; name another header"),
        ({"read_scope": ["query:u", "query:u"]}, "--read-scope: each header or query parameter once, got query:u, "
         "query:u"),
        ({"caller_scope": "none", "read_scope": ["query:u"]}, "--read-scope carries the caller's per-user signal, "
         "and --caller-scope none sends none"),
    ],
)  # fmt: skip
def test_bad_scope_options_are_one_line_usage_errors(given: dict[str, Any], message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options("http://127.0.0.1:9", **given)
    assert str(info.value) == message


def test_scope_options_apply_only_to_an_http_target() -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options("reference", caller_scope="user", read_scope=["query:u"])
    assert str(info.value) == (
        "--caller-scope, --read-scope apply only to an http:// target (--target http://HOST:PORT)"
    )


def test_a_query_read_scope_may_name_any_parameter() -> None:
    assert parse_read_scope("query:user id") == ReadScope("query", "user id")


def test_the_report_names_the_signal_never_its_values() -> None:
    assert HEADER.describe(2) == "2 API keys, per-user signal in user; reads scoped by header:x-response-user"
    assert CallerScope("user").describe(1) == "1 API key, per-user signal in user; reads scoped by none (--read-scope)"
    assert CallerScope("none").describe(2) == "2 API keys, no per-user signal (--caller-scope none)"


# ---------------------------------------------------------------------- what a replay can show


@pytest.mark.parametrize(
    ("size", "shown", "judged"),
    [
        (100, 100, True),  # the whole conversation fits the history budget: nothing of it was cut
        (101, 50, True),  # over it, but the replay fills no more than half: the budget did not bind
        (101, 51, False),  # over it, and the replay fills more than half: it may be the budget's cut
        (99, 99, True),
    ],
)
def test_a_replay_is_judged_only_where_the_gateways_history_budget_cannot_have_cut_it(
    fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch, size: int, shown: int, judged: bool
) -> None:
    answers = {("GET", "/v1/responses/resp_1"): STORED}  # no input_items: what it stored shows in its replay
    with canned_server(answers) as (url, _):
        target = HttpTarget(url, HttpOptions(api_keys=("k",), caller_scope=CallerScope("none")))
        try:
            store = HttpStore(
                target._send,
                callers=[Caller("k", None)],
                model="m",
                limits=LIMITS,
                ls=lambda: RecordingLs(fake, "scope-csrf"),
                describe=lambda what: what,
                scope=CallerScope("none"),
                history_budget=100,
            )
            store._sizes["resp_1"] = size  # what put() measured of the conversation
            monkeypatch.setattr(store, "_replayed", lambda id, key: "r" * shown)
            if judged:
                assert store.get("resp_1", 0) == {"replayed": "r" * shown, "answer": None}
                return
            with pytest.raises(PreconditionNotMet) as info:
                store.get("resp_1", 0)
        finally:
            target.close()
    assert info.value.reason == (
        f"the gateway serves no input_items, and what it replays of the entry ({shown} UTF-16 units) may be cut by "
        f"its history budget too (100, CASCADE_MAX_HISTORY_BYTES): the conversation had {size}, so what its store "
        "kept is not observable"
    )


@pytest.mark.parametrize(
    ("given", "budget"),
    [
        ({}, 600_000),
        ({"CASCADE_MAX_HISTORY_BYTES": "1234"}, 1234),
        ({"CASCADE_MAX_HISTORY_BYTES": "0"}, 600_000),
        ({"CASCADE_MAX_HISTORY_BYTES": "²"}, 600_000),  # a digit to str.isdigit, none to int
    ],
)
def test_the_history_budget_is_the_launched_gateways(given: dict[str, str], budget: int) -> None:
    from conformance.targets._http import _history_budget
    from conformance.targets._launch import LaunchSpec

    launched = HttpOptions(launch=LaunchSpec(command="gw {port}", env=given))
    assert _history_budget(launched) == budget
    assert _history_budget(HttpOptions()) == 600_000


def test_the_other_caller_of_a_chat_example_alternates_between_the_two_ways(fake: FakeLSThread) -> None:
    with canned_server({}) as (url, _):
        target = HttpTarget(url, HttpOptions(api_keys=("k1", "k2"), caller_scope=HEADER))
        try:
            seen = []
            for _ in range(3):
                target.next_example()
                keys = target.gateway_defaults()["api_keys"]
                users = [target.scoped_body({}, n)["user"] for n in (0, 1)]
                seen.append(list(zip(keys, users, strict=True)))
        finally:
            target.close()
    first = ("k1", signal(0))
    assert seen == [
        [first, ("k1", signal(2))],  # the first key with another signal
        [first, ("k2", signal(1))],  # the second key
        [first, ("k1", signal(2))],
    ]


# ---------------------------------------------------------------------- reads as a caller of the property's choosing


def test_a_read_carries_exactly_the_signal_asked_for(fake: FakeLSThread) -> None:
    """gateway.retrieve with ``signal``: that signal (a blank one as it is) or, with null, none at all; without
    it, the signal of the example's caller with that key."""
    with canned_server({("GET", "/v1/responses/resp_1"): STORED}) as (url, received):
        target = HttpTarget(url, HttpOptions(api_keys=("k1", "k2"), caller_scope=HEADER))
        try:
            received.clear()
            for signal_given in ({"signal": "someone"}, {"signal": ""}, {"signal": None}, {}):
                answer = target.call("gateway.retrieve", response_id="resp_1", api_key="k2", **signal_given)
                assert answer["status"] == 200
        finally:
            target.close()
    assert [_who(request)[2:] for request in received] == [
        ("k2", None, "someone"),
        ("k2", None, ""),
        ("k2", None, None),
        ("k2", None, signal(1)),
    ]


def test_the_caller_pairs_of_a_gateway_under_test(fake: FakeLSThread) -> None:
    """Two keys give both pairs (the users of the first key: its signal and a third one, and the key alone as
    the probe); one key gives only the users; no signal gives only the keys."""
    from conformance.gateway import GatewayUnderTest
    from conformance.targets import Caller

    def pairs(scope: CallerScope, keys: tuple[str, ...]) -> list[tuple[str, Caller, Caller, Caller | None]]:
        callers = scope.callers(keys)
        gw = GatewayUnderTest(None, None, callers[:2], "m", scope, all_callers=callers)  # type: ignore[arg-type]
        return [(p.kind, p.first, p.second, p.key_alone) for p in gw.caller_pairs()]

    assert pairs(HEADER, ("k1", "k2")) == [
        ("two API keys", Caller("k1", signal(0)), Caller("k2", signal(1)), None),
        ("two end users of one key", Caller("k1", signal(0)), Caller("k1", signal(2)), Caller("k1", None)),
    ]
    assert pairs(HEADER, ("k1",)) == [
        ("two end users of one key", Caller("k1", signal(0)), Caller("k1", signal(1)), Caller("k1", None)),
    ]
    assert pairs(CallerScope("none"), ("k1", "k2")) == [("two API keys", Caller("k1", None), Caller("k2", None), None)]
    assert pairs(CallerScope("none"), ("k1",)) == []

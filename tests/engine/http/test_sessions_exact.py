"""engine.http.sessions: the session log spec, the X-Session-Id header, what a commit keeps and reads back, the
open-session cache (least recently used out, restored from the log) and GET /v1/sessions/{id} with exact bodies."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from engine.http.errors import ApiError
from engine.http.sessions import (
    MAX_OPEN_SESSIONS,
    SessionLogOpenError,
    Sessions,
    open_session_log,
    session_error,
    session_key,
)
from engine.sessions.items import Item, Message, ToolCall, ToolResult
from engine.sessions.log import SessionLog
from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF
from tests.engine.http.responses_exact_support import KEY_B, gateway_client, headers
from tests.support.fake_ls import StartFakeLs

HEADER_RULE = "X-Session-Id must be 1 to 128 characters of letters, digits and ._:@+=- starting with a letter or digit"
CALL, RESULT = ToolCall("c1", "f", "{}"), ToolResult("c1", "r1")


@pytest.fixture
def sessions() -> Iterator[Sessions]:
    opened = Sessions(SessionLog(":memory:"))
    yield opened
    opened.close()


def _request(value: bytes | None) -> Request:
    raw = [] if value is None else [(b"x-session-id", value)]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": raw})


# ---------------------------------------------------------------------------------------- the log


def test_the_log_spec_is_memory_by_default_off_or_a_path(tmp_path: Path) -> None:
    memory = open_session_log(None)
    assert memory is not None
    assert memory.path == ":memory:"
    memory.close()
    assert open_session_log("off") is None
    path = str(tmp_path / "deep" / "s.db")
    on_disk = open_session_log(path)
    assert on_disk is not None
    assert on_disk.path == path
    on_disk.close()


def test_a_log_that_cannot_be_opened_is_one_error_naming_the_cause(tmp_path: Path) -> None:
    blocker = tmp_path / "plain"
    blocker.write_bytes(b"this is not SQLite at all" * 10)
    with pytest.raises(SessionLogOpenError) as caught:
        open_session_log(str(blocker))
    assert str(caught.value) == "DatabaseError: file is not a database"
    with pytest.raises(SessionLogOpenError) as under_a_file:
        open_session_log(str(blocker / "s.db"))
    assert str(under_a_file.value).startswith("FileExistsError: ")


def test_a_session_key_is_compact_ascii_json_of_caller_and_id() -> None:
    assert session_key("caller-a", "s1") == '["caller-a","s1"]'
    assert session_key("é:x", 's"') == '["\\u00e9:x","s\\""]'
    assert session_key("a", "b:c") != session_key("a:b", "c")


def test_a_session_error_is_a_500_api_error() -> None:
    error = session_error("boom")
    assert (error.status, error.body()) == (
        500,
        {
            "error": {
                "message": "the session log failed: boom",
                "type": "api_error",
                "param": None,
                "code": "session_log_error",
            }
        },
    )


# ------------------------------------------------------------------------------------------ header


@pytest.mark.parametrize("value", [b"a", b"0._:@+=-Z", b"x" * 128])
def test_a_well_formed_header_names_the_session(sessions: Sessions, value: bytes) -> None:
    assert sessions.header(_request(value)) == value.decode()


def test_no_header_names_no_session(sessions: Sessions) -> None:
    assert sessions.header(_request(None)) is None


@pytest.mark.parametrize("value", [b"", b"x" * 129, b"-a", b".a", b"a b", b"a/b", b"a\xc3\xa9"])
def test_a_malformed_header_is_a_400_naming_it(sessions: Sessions, value: bytes) -> None:
    with pytest.raises(ApiError) as caught:
        sessions.header(_request(value))
    assert (caught.value.status, caught.value.message, caught.value.param) == (400, HEADER_RULE, "X-Session-Id")


def test_with_sessions_off_the_header_is_ignored_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    off = Sessions(None)
    assert off.enabled is False
    with caplog.at_level(logging.WARNING, logger="engine.http"):
        assert off.header(_request(b"s1")) is None
        assert off.header(_request(b"s2")) is None
    warnings = [r.getMessage() for r in caplog.records if r.name == "engine.http"]
    assert warnings == ["sessions are off (--session-log off): X-Session-Id headers are ignored"]
    with pytest.raises(ApiError):
        off.header(_request(b"bad id"))  # still checked
    with pytest.raises(RuntimeError, match=r"^sessions are off$"):
        off.commit("a", "s", [RESULT])
    assert off.find("a", "s") is None
    off.close()


# ------------------------------------------------------------------------------------------ commit


def test_a_commit_keeps_new_results_with_their_calls_and_reads_the_session_back(sessions: Sessions) -> None:
    assert sessions.enabled is True
    unanswered = ToolCall("c2", "g", "{}")
    durable = sessions.commit("a", "s", [Message("user", "q"), CALL, RESULT, unanswered])
    assert (dict(durable.results), durable.pruned) == ({"c1": RESULT}, frozenset())
    found = sessions.find("a", "s")
    assert found is not None
    assert list(found.items) == [CALL, RESULT]  # messages and unanswered calls are not kept


def test_a_result_already_in_the_session_is_never_committed_again(sessions: Sessions) -> None:
    sessions.commit("a", "s", [CALL, RESULT])
    elided = ToolResult("c1", "changed")
    later = ToolResult("c3", "r3")
    durable = sessions.commit("a", "s", [CALL, elided, ToolCall("c3", "h", "{}"), later, later])
    assert dict(durable.results) == {"c1": RESULT, "c3": later}
    found = sessions.find("a", "s")
    assert found is not None
    assert list(found.items) == [CALL, RESULT, ToolCall("c3", "h", "{}"), later]


def test_a_call_repeated_in_one_request_is_committed_once(sessions: Sessions) -> None:
    sessions.commit("a", "s", [CALL, CALL, RESULT])
    found = sessions.find("a", "s")
    assert found is not None
    assert list(found.items) == [CALL, RESULT]


def test_a_result_without_its_call_is_kept_alone_and_a_stored_call_is_not_repeated(sessions: Sessions) -> None:
    sessions.commit("a", "s", [RESULT])
    items: list[Item] = [ToolCall("c9", "f", "{}"), ToolResult("c9", "x")]
    sessions.commit("a", "s", items)
    sessions.commit("a", "s", [ToolCall("c9", "f", "{}"), ToolResult("c9", "y"), ToolResult("c8", "z")])
    found = sessions.find("a", "s")
    assert found is not None
    assert list(found.items) == [RESULT, *items, ToolResult("c8", "z")]


def test_the_first_result_of_a_call_id_is_the_durable_one(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "s.db")
    history = log.restore(session_key("a", "s"))
    log.attach(session_key("a", "s"), history)
    history.commit(ToolResult("c1", "first"), ToolResult("c1", "second"))
    log.detach(session_key("a", "s"))
    with_log = Sessions(log)
    try:
        assert dict(with_log.commit("a", "s", []).results) == {"c1": ToolResult("c1", "first")}
    finally:
        with_log.close()


def test_sessions_are_per_caller_and_exist_once_something_was_committed(sessions: Sessions) -> None:
    assert sessions.find("a", "s") is None
    sessions.commit("a", "s", [])
    assert sessions.find("a", "s") is None  # opened, but holding nothing
    sessions.commit("a", "s", [RESULT])
    assert sessions.find("b", "s") is None
    assert sessions.find("a", "other") is None


# ------------------------------------------------------------------------------- open-session cache


def test_the_least_recently_used_session_is_evicted_and_restored_from_the_log(tmp_path: Path) -> None:
    assert MAX_OPEN_SESSIONS == 64
    cache = Sessions(SessionLog(tmp_path / "s.db"), max_open=2)
    try:
        for name in ("s0", "s1"):
            cache.commit("a", name, [ToolResult(name, name)])
        s0 = cache.find("a", "s0")
        assert s0 is not None
        assert cache.find("a", "s0") is s0  # two open sessions fit: still the same history
        s1 = cache.find("a", "s1")
        assert cache.find("a", "s0") is s0  # s0 is now the most recently used
        cache.commit("a", "s2", [ToolResult("s2", "s2")])
        assert cache.find("a", "s0") is s0
        again = cache.find("a", "s1")
        assert again is not None
        assert again is not s1  # evicted, then restored from the log
        assert list(again.items) == [ToolResult("s1", "s1")]
        cache.commit("a", "s1", [ToolResult("x", "x")])  # a restored session is attached to the log again
    finally:
        cache.close()
    reopened = SessionLog(tmp_path / "s.db")
    try:
        assert list(reopened.restore(session_key("a", "s1")).items) == [ToolResult("s1", "s1"), ToolResult("x", "x")]
    finally:
        reopened.close()


def test_looking_up_a_session_that_holds_nothing_opens_nothing(tmp_path: Path) -> None:
    cache = Sessions(SessionLog(tmp_path / "s.db"), max_open=1)
    try:
        cache.commit("a", "s0", [RESULT])
        s0 = cache.find("a", "s0")
        assert cache.find("a", "unknown") is None
        assert cache.find("b", "s0") is None
        assert cache.find("a", "s0") is s0  # still open: the lookups evicted nothing
    finally:
        cache.close()


def test_closing_the_sessions_closes_their_log_and_detaches_their_histories(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "s.db")
    closing = Sessions(log)
    closing.commit("a", "s", [RESULT])
    held = closing.find("a", "s")
    assert held is not None
    closing.close()
    held.commit(ToolResult("c2", "after close"))  # no longer written to the closed log
    with pytest.raises(Exception, match="is closed"):
        log.has_records("x")


# ------------------------------------------------------------------------------------ GET /v1/sessions


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF)


def _not_found(session_id: str) -> dict[str, object]:
    message = (
        f"Session with id '{session_id}' not found. A session exists once a request naming it with X-Session-Id "
        "committed a tool result, and only for the caller that named it."
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "session_id",
            "code": "session_not_found",
        }
    }


def test_the_session_view_is_the_exploration_page_and_the_compaction_input(fake: FakeLSThread) -> None:
    with gateway_client(fake) as (gateway, client):
        gateway.sessions.commit("caller-a", "s1", [CALL, RESULT])
        got = client.get("/v1/sessions/s1", headers=headers())
        assert got.status_code == 200
        assert got.json() == {
            "id": "s1",
            "object": "session",
            "exploration": {
                "total": 2,
                "items": [
                    {"index": 0, "type": "tool_call", "call_id": "c1", "name": "f", "summary": "{}"},
                    {"index": 1, "type": "tool_result", "call_id": "c1", "summary": "r1"},
                ],
                "pruned": [],
                "next": None,
            },
            "compaction_input": "[0 ToolCall] f {}\n[1 ToolResult] r1",
        }
        page = client.get("/v1/sessions/s1?start=1", headers=headers()).json()["exploration"]
        assert [item["index"] for item in page["items"]] == [1]
        assert client.get("/v1/sessions/s1?start=2", headers=headers()).json()["exploration"]["items"] == []
        for wanted, key in (("s1", KEY_B), ("s2", None)):
            missing = client.get(f"/v1/sessions/{wanted}", headers=headers() if key is None else headers(key))
            assert (missing.status_code, missing.json()) == (404, _not_found(wanted))


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ("3", "'start' is past the session's 2 items"),
        ("999999999", "'start' is past the session's 2 items"),
        ("1000000000", "'start' must be a non-negative integer"),
        ("-1", "'start' must be a non-negative integer"),
        ("x", "'start' must be a non-negative integer"),
        ("", "'start' must be a non-negative integer"),
    ],
)
def test_a_bad_start_is_a_400(fake: FakeLSThread, start: str, message: str) -> None:
    with gateway_client(fake) as (gateway, client):
        gateway.sessions.commit("caller-a", "s1", [CALL, RESULT])
        got = client.get("/v1/sessions/s1", params={"start": start}, headers=headers())
        error = {"message": message, "type": "invalid_request_error", "param": "start", "code": None}
        assert (got.status_code, got.json()) == (400, {"error": error})


def test_a_session_log_that_fails_on_read_is_a_500(fake: FakeLSThread, caplog: pytest.LogCaptureFixture) -> None:
    with gateway_client(fake) as (gateway, client):
        assert gateway.sessions.log is not None
        gateway.sessions.log.close()
        with caplog.at_level(logging.ERROR, logger="engine.http"):
            got = client.get("/v1/sessions/s1", headers=headers())
        assert (got.status_code, got.json()) == (500, session_error("the session could not be read").body())
        assert [r.getMessage() for r in caplog.records if r.name == "engine.http"] == ["sessions: reading 's1' failed"]


def test_with_sessions_off_every_session_is_not_found(fake: FakeLSThread) -> None:
    with gateway_client(fake, session_log="off") as (_, client):
        got = client.get("/v1/sessions/s1", headers=headers())
        assert (got.status_code, got.json()) == (404, _not_found("s1"))


def test_the_session_view_is_json_for_any_session_id(fake: FakeLSThread) -> None:
    with gateway_client(fake) as (gateway, client):
        gateway.sessions.commit("caller-a", "a:b@c", [RESULT])
        assert json.loads(client.get("/v1/sessions/a:b@c", headers=headers()).text)["id"] == "a:b@c"

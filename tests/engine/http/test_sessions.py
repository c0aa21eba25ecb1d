"""Durable tool-result attachments through the HTTP front (issue 11 §3, seed 002): tool images reach field 6,
``X-Session-Id`` commits them to the session log before the turn is built, ``GET /v1/sessions/{id}`` shows
counts and never base64, and ``cascade-engine serve --session-log``."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import engine.cli
from engine.cli import main as cli_main
from engine.http.gateway import ServedGateway
from engine.http.serve import ServeOptions
from engine.http.sessions import Sessions, session_key
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.sessions.items import Item, ToolCall, ToolResult
from engine.sessions.log import SessionLog, default_log_path
from fakels.server import FakeLSThread
from tests.engine.http.conftest import CSRF, KEY_A, KEY_B, MODEL, play, sends, serve, start_serve
from tests.engine.http.session_support import (
    ATTACHMENT,
    DATA_URL,
    IMAGE_CONTENT,
    PNG,
    PNG_BYTES,
    RESULT_BLOCK,
    TOOLS,
    chat,
    field6,
    get_session,
    post,
    text,
)
from tests.engine.prompt_support import MARKER


def restored(path: Path, caller: str, session: str) -> list[Any]:
    with SessionLog(path) as log:
        return list(log.restore(session_key(caller, session)).items)


def leaks(body: str) -> list[str]:
    """Every 12-character stretch of the image's base64 that ``body`` holds."""
    return [PNG[i : i + 12] for i in range(len(PNG) - 11) if PNG[i : i + 12] in body]


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def durable(fake: FakeLSThread, log_path: Path) -> Iterator[ServedGateway]:
    gateway = serve(fake, session_log=str(log_path))
    yield gateway
    gateway.stop()


# ------------------------------------------------------------------------------------ lowering


def test_a_chat_tool_image_from_an_earlier_turn_rides_field_6_under_the_history_marker(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "red"}]})
    answer = post(served, "/v1/chat/completions", {"model": MODEL, "messages": chat(IMAGE_CONTENT)})
    assert answer.status_code == 200, answer.text
    (send,) = sends(fake)
    assert field6(send) == [PNG_BYTES]
    assert f"{RESULT_BLOCK}\n</human>\n\n<human>\n{MARKER.format(n=1)}\n</human>" in text(send)
    assert IMAGE_PLACEHOLDER not in text(send)
    assert not leaks(text(send))


def test_a_responses_function_call_output_image_rides_field_6_under_the_history_marker(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "red"}]})
    output = [{"type": "input_text", "text": "Attached image a.png"}, {"type": "input_image", "image_url": DATA_URL}]
    items = [
        {"role": "user", "content": "look at a.png"},
        {"type": "function_call", "call_id": "call_a", "name": "ViewImage", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": output},
        {"role": "assistant", "content": "a cat"},
        {"role": "user", "content": "what colour?"},
    ]
    answer = post(served, "/v1/responses", {"model": MODEL, "input": items, "store": False})
    assert answer.status_code == 200, answer.text
    (send,) = sends(fake)
    assert field6(send) == [PNG_BYTES]
    assert f"{RESULT_BLOCK}\n</human>\n\n<human>\n{MARKER.format(n=1)}\n</human>" in text(send)


def test_a_tool_image_in_the_newest_turn_rides_the_resumed_send_with_the_results_text(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    tool_call = {"id": "call_a", "name": "ViewImage", "arguments_json": '{"path": "a.png"}'}
    play(fake, {"chunks": [{"tool_call": tool_call}]}, {"chunks": [{"text": "a red cat"}]})
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look at a.png"}]
    first = post(served, "/v1/chat/completions", {"model": MODEL, "messages": messages, "tools": TOOLS}).json()
    echoed = first["choices"][0]["message"]
    assert [c["id"] for c in echoed["tool_calls"]] == ["call_a"]
    messages += [echoed, {"role": "tool", "tool_call_id": "call_a", "content": IMAGE_CONTENT}]
    second = post(served, "/v1/chat/completions", {"model": MODEL, "messages": messages, "tools": TOOLS})
    assert second.json()["choices"][0]["message"]["content"] == "a red cat"
    first_send, resumed = sends(fake)
    assert resumed.request is not None
    assert first_send.request is not None
    assert resumed.request["cascade_id"] == first_send.request["cascade_id"], "the tool loop did not resume"
    assert text(resumed) == RESULT_BLOCK
    assert field6(resumed) == [PNG_BYTES]


# ------------------------------------------------------------------------------------ sessions


def test_a_session_commits_the_image_before_the_build_and_the_log_restores_its_bytes(
    fake: FakeLSThread, durable: ServedGateway, log_path: Path
) -> None:
    play(fake, {"fault": {"kind": "error", "message": "boom"}})
    failed = post(durable, "/v1/chat/completions", {"model": MODEL, "messages": chat(IMAGE_CONTENT)}, session="s1")
    assert failed.status_code == 502, failed.text  # the turn failed upstream; the result was already durable
    expected = [
        ToolCall("call_a", "ViewImage", '{"path": "a.png"}'),
        ToolResult("call_a", "Attached image a.png", attachments=(ATTACHMENT,)),
    ]
    assert restored(log_path, "caller-a", "s1") == expected
    play(fake, {"chunks": [{"text": "red"}]})
    again = post(durable, "/v1/chat/completions", {"model": MODEL, "messages": chat(IMAGE_CONTENT)}, session="s1")
    assert again.status_code == 200, again.text
    assert restored(log_path, "caller-a", "s1") == expected  # committed once
    assert field6(sends(fake)[-1]) == [PNG_BYTES]


def test_the_session_is_the_durable_record_and_the_request_is_the_conversation(
    fake: FakeLSThread, durable: ServedGateway, log_path: Path
) -> None:
    play(fake, *({"chunks": [{"text": f"answer {n}"}]} for n in range(3)))
    body = {"model": MODEL, "messages": chat(IMAGE_CONTENT)}
    assert post(durable, "/v1/chat/completions", body, session="s1").status_code == 200
    # The client elides the image it already sent: the committed result (with its image) is what is lowered.
    elided = chat("Attached image a.png", {"role": "assistant", "content": "red"}, {"role": "user", "content": "sure?"})
    assert post(durable, "/v1/chat/completions", {"model": MODEL, "messages": elided}, session="s1").status_code == 200
    assert field6(sends(fake)[1]) == [PNG_BYTES]
    assert f"{RESULT_BLOCK}\n</human>\n\n<human>\n{MARKER.format(n=1)}\n</human>" in text(sends(fake)[1])
    # A conversation without the tool message sends no image: the session does not put it back ...
    plain = [{"role": "user", "content": "new topic"}]
    assert post(durable, "/v1/chat/completions", {"model": MODEL, "messages": plain}, session="s1").status_code == 200
    assert field6(sends(fake)[2]) == []
    # ... and still holds it.
    assert restored(log_path, "caller-a", "s1")[1].attachments == (ATTACHMENT,)


def test_a_responses_turn_in_a_session_keeps_its_function_call_output_image(
    fake: FakeLSThread, durable: ServedGateway, log_path: Path
) -> None:
    play(fake, {"chunks": [{"text": "red"}]})
    output = [{"type": "input_image", "image_url": DATA_URL}, {"type": "input_text", "text": "a.png"}]
    items = [
        {"type": "function_call", "call_id": "call_r", "name": "ViewImage", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_r", "output": output},
    ]
    answer = post(durable, "/v1/responses", {"model": MODEL, "input": items}, session="r1")
    assert answer.status_code == 200, answer.text
    assert restored(log_path, "caller-a", "r1") == [
        ToolCall("call_r", "ViewImage", "{}"),
        ToolResult("call_r", "a.png", attachments=(ATTACHMENT,)),
    ]
    assert field6(sends(fake)[0]) == [PNG_BYTES]


def test_without_the_header_nothing_is_persisted(fake: FakeLSThread, durable: ServedGateway, log_path: Path) -> None:
    play(fake, {"chunks": [{"text": "red"}]})
    assert post(durable, "/v1/chat/completions", {"model": MODEL, "messages": chat(IMAGE_CONTENT)}).status_code == 200
    assert field6(sends(fake)[0]) == [PNG_BYTES]  # lowered the same way, from the request alone
    with SessionLog(log_path) as log:
        assert log.sessions() == []


def test_the_session_view_counts_images_never_shows_base64_and_is_per_caller(
    fake: FakeLSThread, durable: ServedGateway, log_path: Path
) -> None:
    play(fake, {"chunks": [{"text": "red"}]}, {"chunks": [{"text": "beta"}]})
    assert post(durable, "/v1/chat/completions", {"model": MODEL, "messages": chat(IMAGE_CONTENT)}, session="s1")
    view = get_session(durable, "s1")
    assert view.status_code == 200, view.text
    body = view.json()
    assert (body["id"], body["object"]) == ("s1", "session")
    result = body["exploration"]["items"][1]
    assert (result["type"], result["call_id"], result["attachments"]) == ("tool_result", "call_a", "1 image(s)")
    assert body["exploration"]["total"] == 2
    assert "[1 ToolResult] Attached image a.png (attachments: 1 image(s))" in body["compaction_input"]
    assert leaks(view.text) == []
    assert get_session(durable, "s1", start=2).json()["exploration"]["items"] == []
    assert get_session(durable, "s1", start="x").status_code == 400
    # Caller-a's session is not found by anyone else; the same id names caller-b's own session.
    for key, session in ((KEY_B, "s1"), (KEY_A, "unknown")):
        missing = get_session(durable, session, key=key)
        assert missing.status_code == 404
        error = missing.json()["error"]
        assert (error["code"], error["param"]) == ("session_not_found", "session_id")
    assert get_session(durable, "s1", key="sk-wrong").status_code == 401
    other = [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_b", "content": "beta's"}]
    beta = post(durable, "/v1/chat/completions", {"model": MODEL, "messages": other}, key=KEY_B, session="s1")
    assert beta.status_code == 200
    assert restored(log_path, "caller-b", "s1") == [ToolResult("call_b", "beta's")]
    assert get_session(durable, "s1", key=KEY_B).json()["exploration"]["total"] == 1
    assert get_session(durable, "s1").json()["exploration"]["total"] == 2
    assert len(restored(log_path, "caller-a", "s1")) == 2


def test_evicted_sessions_are_restored_and_concurrent_commits_land_once(log_path: Path) -> None:
    sessions = Sessions(SessionLog(log_path), max_open=1)
    try:
        items: list[Item] = [ToolCall("c1", "ViewImage", "{}"), ToolResult("c1", "a.png", attachments=(ATTACHMENT,))]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: sessions.commit("caller-a", f"s{n % 2}", items), range(16)))
        assert sessions.commit("caller-a", "s0", items).results == {"c1": items[1]}  # s1 evicted s0: restored
        for session in ("s0", "s1"):
            found = sessions.find("caller-a", session)
            assert found is not None
            assert list(found.items) == items
        assert sessions.find("caller-b", "s0") is None
    finally:
        sessions.close()
    assert restored(log_path, "caller-a", "s0") == items


@pytest.mark.parametrize("session", [b"", b"has space", b"-leading", b"x" * 129, "naïve".encode("latin-1")])
def test_a_malformed_session_id_is_a_400_naming_the_header(served: ServedGateway, session: bytes) -> None:
    headers = {b"Authorization": f"Bearer {KEY_A}".encode(), b"X-Session-Id": session}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(served.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "X-Session-Id"


def test_sessions_off_ignore_the_header_with_a_warning(fake: FakeLSThread, caplog: pytest.LogCaptureFixture) -> None:
    gateway = serve(fake, session_log="off")
    try:
        play(fake, {"chunks": [{"text": "red"}]})
        with caplog.at_level(logging.WARNING, logger="engine.http"):
            body = {"model": MODEL, "messages": chat(IMAGE_CONTENT)}
            assert post(gateway, "/v1/chat/completions", body, session="s1").status_code == 200
        assert "sessions are off (--session-log off): X-Session-Id headers are ignored" in caplog.text
        assert field6(sends(fake)[0]) == [PNG_BYTES]
        assert get_session(gateway, "s1").status_code == 404
    finally:
        gateway.stop()


# ------------------------------------------------------------------------------------ --session-log


def _parsed(monkeypatch: pytest.MonkeyPatch, *args: str) -> ServeOptions:
    seen: list[ServeOptions] = []

    def run_serve(options: ServeOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(engine.cli, "run_serve", run_serve)
    assert cli_main(["serve", "--port", "0", "--ls-address", "127.0.0.1:1", *args]) == 0
    return seen[0]


def test_session_log_option_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _parsed(monkeypatch).session_log == str(default_log_path())
    assert default_log_path().is_relative_to(os.environ["XDG_STATE_HOME"])  # the conftest's temporary one
    assert _parsed(monkeypatch, "--session-log", "off").session_log == "off"
    assert _parsed(monkeypatch, "--session-log", str(tmp_path / "s.db")).session_log == str(tmp_path / "s.db")


def test_an_empty_session_log_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", "--port", "0", "--ls-address", "127.0.0.1:1", "--session-log", " "]) == 2
    assert capsys.readouterr().err == "cascade-engine serve: --session-log: expected a file path or off\n"


@pytest.mark.parametrize("kind", ["under-a-file", "not-a-database"])
def test_a_session_log_that_cannot_be_opened_is_exit_1_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_bytes(b"this is not SQLite at all, not even close" * 4)
    path = blocker / "sessions.db" if kind == "under-a-file" else blocker
    assert cli_main(["serve", "--port", "0", "--ls-address", "127.0.0.1:1", "--session-log", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cascade-engine: cannot open the session log {str(path)!r}: "), err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_the_served_command_keeps_sessions_in_its_default_log(fake: FakeLSThread) -> None:
    args = ["--port", "0", "--ls-address", fake.address, "--csrf-token", CSRF, "--api-key", f"{KEY_A}=caller-a"]
    proc, url = start_serve([*args, "--poll-interval-s", "0.005"])
    try:
        play(fake, {"chunks": [{"text": "red"}]})
        headers = {"Authorization": f"Bearer {KEY_A}", "X-Session-Id": "cli"}
        body = {"model": MODEL, "messages": chat(IMAGE_CONTENT)}
        assert httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=30).status_code == 200
        view = httpx.get(url + "/v1/sessions/cli", headers=headers, timeout=30)
        assert json.loads(view.text)["exploration"]["items"][1]["attachments"] == "1 image(s)"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert restored(default_log_path(), "caller-a", "cli")[1].attachments == (ATTACHMENT,)

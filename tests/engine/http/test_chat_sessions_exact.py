"""The Chat path's durable sessions, exactly: a request commits only to the session it names, under its
caller's identity (``anonymous`` without API keys), and a recorded prune reaches the lowering."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from engine.http.chat import ChatService
from engine.http.chat_request import parse_chat_request
from engine.http.front import Caller, ChatEvent
from engine.http.gateway import Gateway
from engine.http.sessions import Sessions, session_key
from engine.sessions.items import ToolCall, ToolResult
from engine.sessions.log import SessionLog
from fakels.server import FakeLSThread
from tests.engine.http import chat_exact_support
from tests.engine.http.chat_exact_support import (
    MODEL,
    chat,
    gateway_client,
    play,
    sends,
    sent_text,
    user,
)
from tests.engine.ls_requests_exact_support import image_block, png

fake = chat_exact_support.fake
gw = chat_exact_support.gw

VISION_MODEL = "claude-sonnet-4-6"
CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _conversation(result: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


def _sent_images(fake: FakeLSThread) -> list[int]:
    return [len(entry.request.get("images", [])) for entry in sends(fake) if entry.request is not None]


def test_a_request_without_a_session_id_commits_nothing(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    """Sessions on, no X-Session-Id: each request's own tool result is sent, and the log stays empty."""
    gateway, client = gw
    play(fake, {"chunks": [{"text": "a"}]}, {"chunks": [{"text": "b"}]})
    for result in ("first text", "changed"):
        body = {"model": MODEL, "messages": [*_conversation(result), {"role": "user", "content": "?"}], "tools": TOOLS}
        assert chat(client, body).status_code == 200
    texts = [sent_text(entry) for entry in sends(fake)]
    assert ["first text" in text for text in texts] == [True, False]
    assert ["changed" in text for text in texts] == [False, True]
    assert gateway.sessions.log is not None
    assert gateway.sessions.log.sessions() == []


def test_a_session_id_with_sessions_off_is_answered_without_a_session(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    """A service whose sessions are off answers a request naming a session as if it named none."""
    gateway = gw[0]
    service = ChatService(
        gateway.service.engine,
        ledger=gateway.ledger,
        cache=gateway.cache,
        account="off",
        upstream_api_key="off-key",
        sessions=Sessions(None),
    )
    play(fake, {"chunks": [{"text": "answered"}]})
    request = parse_chat_request(
        {"model": MODEL, "messages": _conversation("result"), "tools": TOOLS}, gateway.catalogue
    )
    events: list[ChatEvent] = []
    service.run(replace(request, session_id="s1"), Caller("caller-a", scoped=True), events.append)
    assert [(e.kind, e.text) for e in events if e.kind in ("content", "error")] == [("content", "answered")]
    assert "result" in sent_text(sends(fake)[0])


def test_a_service_emulates_tools_unless_told_native(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    """ChatService's default is the tool preamble (emulated tools), as the serve command's."""
    gateway = gw[0]
    service = ChatService(
        gateway.service.engine, ledger=gateway.ledger, cache=gateway.cache, account="a", upstream_api_key="k"
    )
    play(fake, {"chunks": [{"text": "ok"}]})
    request = parse_chat_request({"model": MODEL, "messages": user("tools"), "tools": TOOLS}, gateway.catalogue)
    service.run(request, Caller("caller-a", scoped=True), lambda event: None)
    entry = sends(fake)[0]
    assert entry.request is not None
    section = entry.request["cascade_config"]["planner_config"]["conversational"]["additional_instructions_section"]
    assert section["content"].startswith("You can call the following functions.")


def test_without_api_keys_a_session_belongs_to_the_caller_anonymous(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "ok"}]})
    with gateway_client(fake, api_keys={}) as (gateway, client):
        body = {"model": MODEL, "messages": _conversation("kept"), "tools": TOOLS}
        assert chat(client, body, key=None, session_id="s1").status_code == 200
        assert gateway.sessions.log is not None
        assert gateway.sessions.log.sessions() == [session_key("anonymous", "s1")]
        found = gateway.sessions.find("anonymous", "s1")
        assert found is not None
        assert found.items == (ToolCall("c1", "lookup", "{}"), ToolResult("c1", "kept"))


def test_a_recorded_prune_sends_the_session_result_without_its_image(fake: FakeLSThread, tmp_path: Path) -> None:
    """The same request in the same session: its image is sent until the session records c1 as pruned."""
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]})
    log_path = str(tmp_path / "sessions.sqlite")
    body = {
        "model": VISION_MODEL,
        "messages": _conversation([{"type": "text", "text": "shot"}, image_block(png())]),
        "tools": TOOLS,
    }
    with gateway_client(fake, session_log=log_path) as (_, client):
        assert chat(client, body, session_id="s1").status_code == 200
    with SessionLog(log_path) as log:
        key = session_key("caller-a", "s1")
        history = log.restore(key)
        log.attach(key, history)
        history.record_prune(["c1"])
    with gateway_client(fake, session_log=log_path) as (_, client):
        assert chat(client, body, session_id="s1").status_code == 200
    assert _sent_images(fake) == [1, 0]
    assert all('<tool_result tool_call_id="c1">\nshot\n</tool_result>' in sent_text(e) for e in sends(fake))

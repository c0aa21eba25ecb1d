"""ChatService behind the chat front, exactly: the response cache and the ledger (seed 001 D4), schema
judging (D2, engine.md §5.B), the JSON hint, tool calls and their check-in shapes, and failed turns."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import pytest
from starlette.testclient import TestClient

from engine.chat.cache import CachedAnswer
from engine.http.chat import ChatService
from engine.http.chat_request import parse_chat_request
from engine.http.front import Caller, ChatEvent
from engine.http.gateway import Gateway
from fakels.journal import JournalEntry
from fakels.server import FakeLSThread
from tests.engine.http import chat_exact_support
from tests.engine.http.chat_exact_support import (
    KEY_A,
    KEY_B,
    MODEL,
    chat,
    gateway_client,
    play,
    sends,
    sent_text,
    sse_payloads,
    user,
)

# The shared fixtures: one fake LS per module, a fresh gateway per test.
fake = chat_exact_support.fake
gw = chat_exact_support.gw

USAGE = {"input_tokens": 11, "output_tokens": 4, "cache_read_tokens": 3}
TOKENS = {"input": 11, "output": 4, "cache_read": 3, "cache_write": 0}
NO_TOKENS = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
HINT = "Respond with valid JSON only. No markdown, no code fences, no prose before or after the JSON value."
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
VIOLATION = {
    "error": {
        "message": "Model output does not conform to the requested JSON Schema: $.answer: 'x' is not of type 'integer'",
        "type": "api_error",
        "param": None,
        "code": "STRUCTURED_OUTPUT_NOT_CONFORMING",
    }
}


def _content(response: Any) -> Any:
    return response.json()["choices"][0]["message"]


def _rows(gateway: Gateway) -> list[tuple[bool, bool]]:
    return [(row["success"], row["cache_served"]) for row in gateway.ledger.document()["rows"]]


def _instructions(entry: JournalEntry) -> str:
    """The planner's additional instructions a Send carried (the tool preamble goes there)."""
    assert entry.request is not None
    conversational = entry.request["cascade_config"]["planner_config"]["conversational"]
    return str(conversational.get("additional_instructions_section", {}).get("content", ""))


# ---------------------------------------------------------------- the response cache and the ledger


def test_a_cache_hit_replays_the_answer_and_adds_no_tokens(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    gateway, client = gw
    play(fake, {"chunks": [{"thinking": "plan"}, {"text": "cached"}], "records": [USAGE]})
    body = {"model": MODEL, "messages": user("cache me")}
    first, second = (chat(client, body).json() for _ in range(2))
    assert len(sends(fake)) == 1
    assert second["choices"] == first["choices"]
    assert second["usage"] == first["usage"]
    assert _content_of(second) == {"role": "assistant", "content": "cached", "reasoning_content": "plan"}
    document = gateway.ledger.document()
    assert (document["tokens"], document["served"], document["cache_served"]) == (TOKENS, 2, 1)
    assert _rows(gateway) == [(True, False), (True, True)]
    assert [row["model"] for row in document["rows"]] == [MODEL, MODEL]
    assert list(document["account_spend"]) == ["upstream-account-1"]
    stats = gateway.ledger.stats()
    assert stats["accounts"] == {"upstream-account-1": {"requests": 2, "success": 2, "errors": 0, "cache_served": 1}}
    assert stats["latency_ms"]["samples"] == 1  # a cache hit takes no time
    kept = CachedAnswer(text="cached", thinking="plan", usage=first["usage"], finish_reason="stop", model=MODEL)
    assert gateway.cache.stats()["bytes"] == kept.size()
    assert gateway.cache.stats()["entries"] == 1


def test_a_cached_answer_keeps_the_whole_thinking_of_its_chunks(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"thinking": "first "}, {"thinking": "second"}, {"text": "done"}]})
    body = {"model": MODEL, "messages": user("two thoughts")}
    replies = [_content_of(chat(gw[1], body).json()) for _ in range(2)]
    assert replies[1] == {"role": "assistant", "content": "done", "reasoning_content": "first second"}
    assert len(sends(fake)) == 1, "the second answer is the cached one"


def test_a_cached_answer_is_the_whole_text_of_its_chunks(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    play(fake, {"chunks": [{"text": "first "}, {"text": "second"}]})
    body = {"model": MODEL, "messages": user("two chunks")}
    answers = [_content(chat(gw[1], body))["content"] for _ in range(2)]
    assert answers == ["first second", "first second"]
    assert len(sends(fake)) == 1


def test_tool_call_ids_differ_between_turns(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    markup = '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'
    play(fake, {"chunks": [{"text": markup}]}, {"chunks": [{"text": markup}]})
    ids = [
        _content(chat(gw[1], {"model": MODEL, "messages": user(f"ids {n}"), "tools": TOOLS}))["tool_calls"][0]["id"]
        for n in range(2)
    ]
    assert ids[0] != ids[1]


def _content_of(body: dict[str, Any]) -> Any:
    return body["choices"][0]["message"]


def test_a_thinking_only_answer_is_cached_and_replayed_without_content(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    gateway, client = gw
    play(fake, {"chunks": [{"thinking": "only thought"}]})
    body = {"model": MODEL, "messages": user("think only"), "stream": True}
    live, hit = (sse_payloads(chat(client, body)) for _ in range(2))
    assert len(sends(fake)) == 1

    def deltas(payloads: list[str]) -> list[object]:
        return [json.loads(p)["choices"][0]["delta"] if p != "[DONE]" else p for p in payloads]

    assert (
        deltas(hit)
        == deltas(live)
        == [
            {"role": "assistant", "content": ""},
            {"reasoning_content": "only thought"},
            {},
            "[DONE]",
        ]
    )
    assert _rows(gateway) == [(True, False), (True, True)]


@pytest.mark.parametrize(
    ("turn", "extra"),
    [
        ({"chunks": []}, {}),
        ({"chunks": [{"tool_call": {"id": "call_1", "name": "lookup"}}]}, {"tools": TOOLS}),
    ],
    ids=["empty-answer", "tool-calls"],
)
def test_an_empty_or_tool_call_answer_is_not_cached(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], turn: dict[str, Any], extra: dict[str, Any]
) -> None:
    play(fake, turn, turn)
    body = {"model": MODEL, "messages": user("not cached"), **extra}
    for _ in range(2):
        assert chat(gw[1], body).status_code == 200
    assert len(sends(fake)) == 2


def test_the_cache_can_be_switched_off(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "a"}]}, {"chunks": [{"text": "b"}]})
    with gateway_client(fake, env={"RESPONSE_CACHE_ENABLED": "off"}) as (_, client):
        body = {"model": MODEL, "messages": user("cache off")}
        assert [_content(chat(client, body))["content"] for _ in range(2)] == ["a", "b"]


def test_a_turn_in_a_durable_session_is_never_served_from_cache(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"text": "a"}]}, {"chunks": [{"text": "b"}]})
    body = {"model": MODEL, "messages": user("in a session")}
    answers = []
    for _ in range(2):
        response = chat(gw[1], body, session_id="s1")
        answers.append(_content(response)["content"])
    assert answers == ["a", "b"]


def test_a_session_log_that_fails_is_a_500_and_a_failed_row(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    gateway, client = gw
    gateway.sessions.close()
    response = chat(client, {"model": MODEL, "messages": user("broken log")}, session_id="s2")
    assert (response.status_code, response.json()) == (
        500,
        {
            "error": {
                "message": "the session log failed: this request's tool results could not be committed",
                "type": "api_error",
                "param": None,
                "code": "session_log_error",
            }
        },
    )
    assert sends(fake) == []
    assert _rows(gateway) == [(False, False)]
    assert [row["model"] for row in gateway.ledger.document()["rows"]] == [MODEL]
    assert list(gateway.ledger.stats()["accounts"]) == ["upstream-account-1"]


def test_an_upstream_failure_records_a_failed_row_and_no_tokens(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    gateway, client = gw
    play(fake, {"fault": {"kind": "error", "message": "boom"}, "records": [USAGE]})
    assert chat(client, {"model": MODEL, "messages": user("fails")}).status_code == 502
    document = gateway.ledger.document()
    assert (document["tokens"], document["served"], document["account_spend"]) == (NO_TOKENS, 0, {})
    assert _rows(gateway) == [(False, False)]
    assert [row["model"] for row in gateway.ledger.document()["rows"]] == [MODEL]
    assert list(gateway.ledger.stats()["accounts"]) == ["upstream-account-1"]


# ---------------------------------------------------------------- structured output


def test_a_violating_answer_is_a_502_its_usage_recorded_and_nothing_cached(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    gateway, client = gw
    play(fake, {"chunks": [{"text": '{"answer":"x"}'}], "records": [USAGE]}, {"chunks": [{"text": '{"answer":1}'}]})
    body = {"model": MODEL, "messages": user("judge me"), "response_format": JSON_SCHEMA}
    response = chat(client, body)
    assert (response.status_code, response.json()) == (502, VIOLATION)
    assert gateway.ledger.document()["tokens"] == TOKENS
    assert _rows(gateway) == [(False, False)]
    assert [row["model"] for row in gateway.ledger.document()["rows"]] == [MODEL]
    assert list(gateway.ledger.stats()["accounts"]) == ["upstream-account-1"]
    assert _content(chat(client, body))["content"] == '{"answer":1}'
    assert len(sends(fake)) == 2


def test_a_violating_stream_is_one_error_frame(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    play(fake, {"chunks": [{"thinking": "t"}, {"text": '{"answer":"x"}'}]})
    body = {"model": MODEL, "messages": user("judge my stream"), "stream": True, "response_format": JSON_SCHEMA}
    assert [json.loads(p) for p in sse_payloads(chat(gw[1], body))] == [VIOLATION]


@pytest.mark.parametrize("text", ["  \n", ""])
def test_a_blank_answer_is_not_judged(fake: FakeLSThread, gw: tuple[Gateway, TestClient], text: str) -> None:
    play(fake, {"chunks": [{"text": text}] if text else []})
    response = chat(gw[1], {"model": MODEL, "messages": user(f"blank {text!r}"), "response_format": JSON_SCHEMA})
    assert (response.status_code, _content(response)["content"]) == (200, text)


@pytest.mark.parametrize(
    ("response_format", "hint"),
    [
        ({"type": "json_object"}, HINT + "\n"),
        (JSON_SCHEMA, HINT + " Conform to this JSON Schema:\n" + json.dumps(SCHEMA, separators=(",", ":")) + "\n"),
        ({"type": "text"}, ""),
    ],
    ids=["json_object", "json_schema", "text"],
)
def test_a_json_request_leads_with_one_system_hint(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], response_format: dict[str, Any], hint: str
) -> None:
    play(fake, {"chunks": [{"text": '{"answer":1}'}]})
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]
    chat(gw[1], {"model": MODEL, "messages": messages, "response_format": response_format})
    assert sent_text(sends(fake)[0]).startswith(hint + "rules\n")


# ---------------------------------------------------------------- tool calls


def test_tool_markup_in_text_becomes_tool_calls_only_when_tools_are_offered(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    markup = 'Let me look. <tool_call>{"name": "lookup", "arguments": {"q": 1}}</tool_call>'
    play(fake, {"chunks": [{"text": markup}]}, {"chunks": [{"text": markup}]})
    offered = _content(chat(gw[1], {"model": MODEL, "messages": user("markup"), "tools": TOOLS}))
    assert offered["content"] == "Let me look. "
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in offered["tool_calls"]] == [
        ("lookup", '{"q":1}')
    ]
    assert _content(chat(gw[1], {"model": MODEL, "messages": user("no tools")})) == {
        "role": "assistant",
        "content": markup,
    }
    play(fake, {"chunks": [{"text": "1 <"}]})
    held_back = _content(chat(gw[1], {"model": MODEL, "messages": user("a held-back tail"), "tools": TOOLS}))
    assert held_back == {"role": "assistant", "content": "1 <"}
    assert _instructions(sends(fake)[0]).startswith("You can call the following functions.")
    assert "You can call the following functions." not in _instructions(sends(fake)[1])


def test_native_mode_sends_no_tool_preamble(fake: FakeLSThread) -> None:
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "ok"}]})
    with gateway_client(fake, native_mode=True) as (_, client):
        chat(client, {"model": MODEL, "messages": user("native"), "tools": TOOLS})
    assert "You can call the following functions." not in _instructions(sends(fake)[0])
    request = sends(fake)[0].request
    assert request is not None
    planner = request["cascade_config"]["planner_config"]
    assert "tool_calling_section" not in planner["conversational"]  # the default planner, with its own tools
    assert "run_command" in planner["tool_config"]


def test_the_language_servers_own_tool_steps_are_not_the_clients_tool_calls(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"text": "looked"}, {"native": {"kind": "view_file"}}]})
    response = chat(gw[1], {"model": MODEL, "messages": user("native step"), "tools": TOOLS}).json()
    assert response["choices"][0]["message"] == {"role": "assistant", "content": "looked"}
    assert response["choices"][0]["finish_reason"] == "stop"


def test_the_tool_preamble_carries_the_requested_tool_choice(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    chat(gw[1], {"model": MODEL, "messages": user("choose"), "tools": TOOLS, "tool_choice": "required"})
    assert "In this reply you must call at least one function." in _instructions(sends(fake)[0])


def test_in_native_mode_a_conversation_resumes_whatever_tools_are_offered(fake: FakeLSThread) -> None:
    """Tools are only fingerprinted when they are emulated by a preamble (engine.reuse.fingerprint)."""
    fake.journal.clear()
    play(fake, {"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]})
    first = user("native resume")
    follow = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "next"}]
    with gateway_client(fake, native_mode=True) as (_, client):
        chat(client, {"model": MODEL, "messages": first, "tools": TOOLS})
        chat(client, {"model": MODEL, "messages": follow, "tools": [*TOOLS, OTHER_TOOL], "tool_choice": "none"})
    cascades = [entry.request["cascade_id"] for entry in sends(fake) if entry.request is not None]
    assert len(cascades) == 2
    assert cascades[0] == cascades[1]


def test_a_proposed_call_without_arguments_has_an_empty_object(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"tool_call": {"id": "call_7", "name": "lookup", "arguments_json": ""}}]})
    message = _content(chat(gw[1], {"model": MODEL, "messages": user("no args"), "tools": TOOLS}))
    assert message["tool_calls"] == [
        {"id": "call_7", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    ]


@pytest.mark.parametrize("echoed", ["text", None, "", "text-only"])
def test_the_next_turn_resumes_whichever_shape_the_answer_is_echoed_in(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], echoed: str | None
) -> None:
    call = {"id": "call_1", "name": "lookup", "arguments_json": '{"q":1}'}
    play(fake, {"chunks": [{"text": "text"}, {"tool_call": call}]}, {"chunks": [{"text": "done"}]})
    first = [{"role": "user", "content": f"resume {echoed!r}"}]
    answer = _content(chat(gw[1], {"model": MODEL, "messages": first, "tools": TOOLS}))
    if echoed == "text-only":
        assistant: dict[str, Any] = {"role": "assistant", "content": "text"}
        follow: list[dict[str, Any]] = [assistant, {"role": "user", "content": "go on"}]
    else:
        assistant = {"role": "assistant", "content": echoed, "tool_calls": answer["tool_calls"]}
        follow = [assistant, {"role": "tool", "tool_call_id": "call_1", "content": "result"}]
    chat(gw[1], {"model": MODEL, "messages": [*first, *follow], "tools": TOOLS})
    cascades = [entry.request["cascade_id"] for entry in sends(fake) if entry.request is not None]
    assert len(cascades) == 2
    assert cascades[0] == cascades[1]


# ---------------------------------------------------------------- usage and an aborted turn


def test_without_wire_usage_tokens_are_estimated_from_every_message(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    play(fake, {"chunks": [{"text": "hello"}]})
    messages = [
        {"role": "system", "content": "abcd"},
        {"role": "user", "content": [{"type": "text", "text": "e"}]},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": "fghij"},
    ]
    usage = chat(gw[1], {"model": MODEL, "messages": messages}).json()["usage"]
    prompt_chars = 4 + len(str([{"type": "text", "text": "e"}])) + 0 + 5
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (-(-prompt_chars // 4), 2)


def test_an_aborted_turn_reports_no_finish_or_usage_and_is_not_cached(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient]
) -> None:
    gateway, client = gw
    play(fake, {"chunks": [{"text": "partial"}], "records": [USAGE]}, {"chunks": [{"text": "again"}]})
    request = parse_chat_request({"model": MODEL, "messages": user("abort")}, gateway.catalogue)
    abort = threading.Event()
    abort.set()
    events: list[ChatEvent] = []
    gateway.service.run(request, Caller("caller-a", scoped=True), events.append, abort)
    assert [e.kind for e in events] == ["role"]  # the turn stopped at once: no content, finish or usage
    assert gateway.ledger.document()["tokens"] == NO_TOKENS
    assert _rows(gateway) == [(False, False)]
    assert [row["model"] for row in gateway.ledger.document()["rows"]] == [MODEL]
    assert list(gateway.ledger.stats()["accounts"]) == ["upstream-account-1"]
    assert _content(chat(client, {"model": MODEL, "messages": user("abort")}))["content"] == "again"


def _timed_service(gateway: Gateway) -> tuple[ChatService, list[float]]:
    """The gateway's service again, on a clock that advances 250 ms between the start and the end of a turn."""
    ticks = [100.0, 100.25]
    service = ChatService(
        gateway.service.engine,
        ledger=gateway.ledger,
        cache=gateway.cache,
        account="timed",
        upstream_api_key="timed-key",
        clock=lambda: ticks.pop(0),
        sessions=gateway.sessions,
    )
    return service, ticks


@pytest.mark.parametrize(
    ("turn", "extra", "success"),
    [
        ({"chunks": [{"text": "ok"}]}, {}, True),
        ({"fault": {"kind": "error", "message": "boom"}}, {}, False),
        ({"chunks": [{"text": '{"answer":"x"}'}]}, {"response_format": JSON_SCHEMA}, False),
    ],
    ids=["answered", "upstream-failure", "violation"],
)
def test_a_turn_records_its_latency_and_account(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], turn: dict[str, Any], extra: dict[str, Any], success: bool
) -> None:
    gateway = gw[0]
    service, ticks = _timed_service(gateway)
    play(fake, turn)
    request = parse_chat_request({"model": MODEL, "messages": user(f"timed {success}"), **extra}, gateway.catalogue)
    events: list[ChatEvent] = []
    service.run(request, Caller("caller-a", scoped=True), events.append)
    assert ticks == []
    stats = gateway.ledger.stats()
    assert stats["latency_ms"] == {"samples": 1, "avg": 250.0, "max": 250.0}
    assert stats["accounts"]["timed"]["success" if success else "errors"] == 1
    assert (events[-1].kind == "usage") is success


def test_a_failed_session_commit_records_its_latency(gw: tuple[Gateway, TestClient]) -> None:
    gateway = gw[0]
    service, ticks = _timed_service(gateway)
    gateway.sessions.close()
    request = parse_chat_request({"model": MODEL, "messages": user("timed session")}, gateway.catalogue)
    events: list[ChatEvent] = []
    service.run(replace(request, session_id="s3"), Caller("caller-a", scoped=True), events.append)
    assert ticks == []
    assert [e.kind for e in events] == ["error"]
    assert gateway.ledger.stats()["latency_ms"] == {"samples": 1, "avg": 250.0, "max": 250.0}


PING_TOOL = {"type": "function", "function": {"name": "ping"}}  # no parameters
EMPTY_OBJECT = {"type": "object", "properties": {}}  # what the preamble shows for no parameters
OTHER_TOOL = {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("key", "changes", "resumed"),
    [
        (KEY_A, {}, True),
        (KEY_B, {}, False),
        (KEY_A, {"tools": [*TOOLS, OTHER_TOOL]}, False),
        (KEY_A, {"tool_choice": "required"}, False),
        (KEY_A, {"tool_choice": "auto"}, False),  # the same preamble, but tool_choice is fingerprinted as sent
    ],
    ids=["same-caller", "other-caller", "other-tools", "other-tool-choice", "explicit-auto"],
)
def test_a_conversation_resumes_only_for_its_caller_tools_and_tool_choice(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], key: str, changes: dict[str, Any], resumed: bool
) -> None:
    play(fake, {"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]})
    first = user(f"resume for {key} {sorted(changes)}")
    chat(gw[1], {"model": MODEL, "messages": first, "tools": TOOLS})
    follow = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "next"}]
    chat(gw[1], {"model": MODEL, "messages": follow, "tools": TOOLS, **changes}, key=key)
    cascades = [entry.request["cascade_id"] for entry in sends(fake) if entry.request is not None]
    assert len(cascades) == 2
    assert (cascades[0] == cascades[1]) is resumed


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [
        ([*TOOLS, OTHER_TOOL], [OTHER_TOOL, *TOOLS]),  # the preamble lists them in the order sent
        ([PING_TOOL], [{"type": "function", "function": {"name": "ping", "parameters": EMPTY_OBJECT}}]),
    ],
    ids=["reordered", "parameters-spelled-out"],
)
def test_a_conversation_does_not_resume_when_its_tools_are_reordered_or_respelled(
    fake: FakeLSThread, gw: tuple[Gateway, TestClient], sent: list[Any], echoed: list[Any]
) -> None:
    """The emulated tool context is fingerprinted both as the tool list and as the preamble it yields: a reorder
    changes the preamble, parameters spelled out as the preamble's default change the list."""
    play(fake, {"chunks": [{"text": "one"}]}, {"chunks": [{"text": "two"}]})
    first = user(f"tools as sent {len(sent)}")
    chat(gw[1], {"model": MODEL, "messages": first, "tools": sent})
    follow = [*first, {"role": "assistant", "content": "one"}, {"role": "user", "content": "next"}]
    chat(gw[1], {"model": MODEL, "messages": follow, "tools": echoed})
    cascades = [entry.request["cascade_id"] for entry in sends(fake) if entry.request is not None]
    assert len(cascades) == 2
    assert cascades[0] != cascades[1]


def _tool_conversation(first: str, result: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [
        {"role": "user", "content": first},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "user", "content": "?"},
    ]


def test_a_session_keeps_the_first_committed_tool_result(fake: FakeLSThread, gw: tuple[Gateway, TestClient]) -> None:
    """The durable record wins: a later request in the session showing another text for c1 sends the stored one."""
    for first, result in (("look", "first text"), ("look again", "changed")):
        body = {"model": MODEL, "messages": _tool_conversation(first, result), "tools": TOOLS}
        response = chat(gw[1], body, session_id="s9")
        assert response.status_code == 200
    texts = [sent_text(entry) for entry in sends(fake)]
    assert len(texts) == 2
    assert all('<tool_result tool_call_id="c1">\nfirst text\n</tool_result>' in text for text in texts)

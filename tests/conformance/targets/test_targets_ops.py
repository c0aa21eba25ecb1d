"""The reference target's gateway, store and session operations, called directly in this process."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.targets.reference import ReferenceTarget, make_target
from conformance.targets.reference.store_ops import answer_items
from tests.support.imagegen import b64, solid

HELLO = [{"role": "user", "content": "hi"}]
FIVE = [{"role": "user", "content": f"m{i}"} for i in range(5)]


@pytest.fixture
def reference() -> Iterator[ReferenceTarget]:
    target = make_target()
    yield target
    target.close()


# ---------------------------------------------------------------------- gateway.*


def test_a_served_gateway_answers_chat_for_its_keys_and_keeps_a_ledger(reference: ReferenceTarget) -> None:
    served = reference.ls_serve({"turns": [{"chunks": [{"text": "hello back"}]}]}, False)
    started = reference.gateway_start(served["address"], served["csrf_token"])
    assert started == {
        "api_keys": ["conformance-key-alpha", "conformance-key-beta"],
        "model": "claude-sonnet-4-6",
        "cache_writes": "prompt",
        "wait_limit_s": 1.5,
        "heartbeat_s": 0.25,
        "other_model": "gpt-5",
    }
    request = {"model": "claude-sonnet-4-6", "messages": HELLO}
    answer = reference.gateway_chat(request, "conformance-key-beta")
    assert answer["status"] == 200
    assert answer["body"]["choices"][0]["message"]["content"] == "hello back"
    assert reference.gateway_chat(request, "wrong-key")["status"] == 401
    [send] = [e for e in reference.ls_journal(0)["entries"] if e["method"] == "SendUserCascadeMessage"]
    metadata = send["request"]["metadata"]
    assert (metadata["request_id"], metadata["os"], metadata["hardware"]) == (1, "linux", "x86_64")
    ledger = reference.gateway_ledger()["ledger"]
    assert ledger["served"] == 1
    assert reference.gateway_stop() == {}
    assert reference.gateway_stop() == {}
    with pytest.raises(RuntimeError) as info:
        reference.gateway_ledger()
    assert str(info.value) == "no gateway is being served: call gateway.start first"


def test_starting_again_replaces_the_served_gateway(reference: ReferenceTarget) -> None:
    served = reference.ls_serve({"turns": []}, False)
    reference.gateway_start(served["address"], served["csrf_token"])
    first = reference._http().url
    reference.gateway_start(served["address"], served["csrf_token"])
    assert reference._http().url != first


# ---------------------------------------------------------------------- store.*


def test_a_put_stores_the_conversation_and_the_answer_items(reference: ReferenceTarget) -> None:
    reference.store_open({"max_messages": 10, "max_entry_bytes": 100_000})
    put = reference.store_put(HELLO, 0, {"text": "yo"})
    assert re.fullmatch(r"resp_[0-9a-f]{32}", put["id"])
    assert put["warnings"] == []
    [item] = put["appended"]
    assert (item["type"], item["role"], item["content"][0]["text"]) == ("message", "assistant", "yo")
    got = reference.store_get(put["id"], 0)
    assert got == {"messages": [*HELLO, item], "answer": "yo"}


def test_entries_belong_to_their_caller(reference: ReferenceTarget) -> None:
    reference.store_open({"max_messages": 10, "max_entry_bytes": 100_000})
    put = reference.store_put(HELLO, 1, {"text": "yo"})
    assert reference.store_get(put["id"], 0) == {"not_found": True}
    assert reference.store_delete(put["id"], 0) == {"deleted": False}
    assert reference.store_get(put["id"], 1)["answer"] == "yo"
    assert reference.store_delete(put["id"], 1) == {"deleted": True}
    assert reference.store_get(put["id"], 1) == {"not_found": True}


def test_trimming_to_the_message_limit_is_reported_as_a_warning(reference: ReferenceTarget) -> None:
    reference.store_open({"max_messages": 3, "max_entry_bytes": 100_000})
    messages = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    put = reference.store_put(messages, 0, {"tool_call": {"name": "f", "arguments": "{}"}})
    assert put["warnings"] == ["[response-store] dropped 3 message(s) to fit RESPONSE_STORE_MAX_MESSAGES"]
    got = reference.store_get(put["id"], 0)
    assert len(got["messages"]) == 3
    assert got["answer"] is None


def test_an_entry_that_cannot_fit_is_rejected_with_the_stores_reason(reference: ReferenceTarget) -> None:
    reference.store_open({"max_messages": 3, "max_entry_bytes": 50})
    # The byte stage's notice leads the answer as its own block, kept whole; the answer's text cannot shrink.
    assert reference.store_put([{"role": "user", "content": "x" * 200}], 0, {"text": "y" * 120}) == {
        "rejected": "the largest shrinkable string (message 0, at ['content', 1, 'text']) cannot shrink: its "
        "120-unit value would become 143 units"
    }


def test_the_store_warnings_are_heard_without_changing_the_loggers_settings(
    reference: ReferenceTarget, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("engine.response_store")
    reference.store_open({"max_messages": 3, "max_entry_bytes": 100_000})
    logger.setLevel(logging.ERROR)
    try:
        with caplog.at_level(logging.WARNING):
            put = reference.store_put(FIVE, 0, {"text": "yo"})
        assert put["warnings"] == ["[response-store] dropped 3 message(s) to fit RESPONSE_STORE_MAX_MESSAGES"]
        assert logger.level == logging.ERROR
        assert logger.propagate is True
        assert not logger.handlers
        assert [r.getMessage() for r in caplog.records if r.name == "engine.response_store"] == []
    finally:
        logger.setLevel(logging.NOTSET)
    with caplog.at_level(logging.WARNING, logger="engine.response_store"):
        reference.store_put(FIVE, 0, {"text": "yo"})
    assert [r.getMessage() for r in caplog.records if r.name == "engine.response_store"] == [
        "[response-store] dropped 3 message(s) to fit RESPONSE_STORE_MAX_MESSAGES"
    ]


def test_a_quieted_store_logger_passes_nothing_on(reference: ReferenceTarget, caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("engine.response_store")
    reference.store_open({"max_messages": 3, "max_entry_bytes": 100_000})
    logger.propagate = False
    try:
        with caplog.at_level(logging.WARNING):
            put = reference.store_put(FIVE, 0, {"text": "yo"})
        assert len(put["warnings"]) == 1
        assert logger.propagate is False
    finally:
        logger.propagate = True


def test_the_store_needs_opening_and_reopening_starts_empty(reference: ReferenceTarget) -> None:
    with pytest.raises(RuntimeError) as info:
        reference.store_get("resp_x", 0)
    assert str(info.value) == "no response store is open: call store.open first"
    reference.store_open({"max_messages": 3, "max_entry_bytes": 1000})
    put = reference.store_put(HELLO, 0, {"text": "yo"})
    reference.store_open({"max_messages": 3, "max_entry_bytes": 1000})
    assert reference.store_get(put["id"], 0) == {"not_found": True}
    reference.store_close()
    reference.store_close()


def test_a_large_entry_budget_is_not_cut_by_the_total_budget(reference: ReferenceTarget) -> None:
    reference.store_open({"max_messages": 3, "max_entry_bytes": 64 * 1024 * 1024})
    assert reference._store is not None
    assert reference._store.limits.max_bytes == 4 * 64 * 1024 * 1024
    reference.store_open({"max_messages": 3, "max_entry_bytes": 1000})
    assert reference._store.limits.max_bytes == 128 * 1024 * 1024


def test_answer_items_are_what_the_responses_front_stores() -> None:
    [text] = answer_items({"text": "hello"})
    assert (text["type"], text["content"][0]["text"]) == ("message", "hello")
    [call] = answer_items({"tool_call": {"name": "lookup", "arguments": '{"q": 1}'}})
    assert (call["type"], call["name"], call["arguments"]) == ("function_call", "lookup", '{"q": 1}')
    assert re.fullmatch(r"call_[0-9a-f]{12}", call["call_id"])


# ---------------------------------------------------------------------- session.*

ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "text": "hello"},
    {"type": "tool_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "tool_result", "call_id": "c1", "summary": "s", "content": "r" * 30000},
    {"type": "message", "role": "assistant", "text": "done"},
    {"type": "message", "role": "user", "text": "next"},
]


def test_a_session_builds_requests_for_either_upstream(reference: ReferenceTarget) -> None:
    assert reference.session_open(False) == {}
    assert reference.session_commit(ITEMS) == {}
    chat = reference.session_build("chat", None)["request"]
    assert [m["role"] for m in chat] == ["user", "assistant", "tool", "assistant", "user"]
    assert chat[2]["content"] == "s\n" + "r" * 30000
    pruned = reference.session_build("chat", {"protected_tokens": 0, "min_savings": 0})["request"]
    assert pruned[2] == {"role": "tool", "content": "s", "tool_call_id": "c1"}
    responses = reference.session_build("responses", None)["request"]
    assert responses[0] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}


def test_a_session_is_restored_from_its_log_after_a_compaction(reference: ReferenceTarget) -> None:
    reference.session_open(False)
    reference.session_commit(ITEMS)
    views = reference.session_views()
    assert (
        views["compaction_input"]
        == "[0 User] hello\n[1 ToolCall] f {}\n[2 ToolResult] s\n[3 Assistant] done\n[4 User] next"
    )
    exploration = json.loads(views["exploration"])
    assert (exploration["total"], exploration["pruned"]) == (5, [])
    assert views["exploration"].startswith('{\n "total": 5,\n "items": [\n  {\n   "index": 0,')
    assert reference.session_compact("sum", 3) == {}
    compacted = reference.session_views()
    assert compacted["compaction_input"] == "[0 System] sum\n[1 Assistant] done\n[2 User] next"
    assert reference.session_restore() == {}
    assert reference.session_views() == compacted


@pytest.mark.parametrize("vision", [True, False])
def test_image_attachments_follow_the_sessions_vision_also_after_a_restore(
    reference: ReferenceTarget, vision: bool
) -> None:
    image = {"type": "image", "payload": {"mime_type": "image/png", "data": b64(solid(4, 4))}}
    reference.session_open(vision)
    reference.session_commit(
        [
            {"type": "message", "role": "user", "text": "look"},
            {"type": "tool_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
            {"type": "tool_result", "call_id": "c1", "summary": "a screenshot", "attachments": [image]},
        ]
    )
    built = reference.session_build("chat", None)["request"]
    if vision:
        assert built[2] == {"role": "tool", "content": "a screenshot", "tool_call_id": "c1"}
        assert built[3]["content"][0]["type"] == "image_url"
    else:
        assert built[2]["content"] == "a screenshot\n[1 image attachment(s) omitted: model does not support images]"
        assert len(built) == 3
    reference.session_restore()
    assert reference.session_build("chat", None)["request"] == built


def test_non_ascii_is_kept_in_the_exploration_view(reference: ReferenceTarget) -> None:
    reference.session_open(True)
    reference.session_commit([{"type": "message", "role": "user", "text": "héllo"}])
    assert '"summary": "héllo"' in reference.session_views()["exploration"]


def test_the_session_needs_opening_and_reopening_starts_empty(reference: ReferenceTarget) -> None:
    with pytest.raises(RuntimeError) as info:
        reference.session_views()
    assert str(info.value) == "no session is open: call session.open first"
    with pytest.raises(RuntimeError):
        reference.session_restore()
    reference.session_open(False)
    reference.session_commit(ITEMS[:1])
    reference.session_open(False)
    assert reference.session_views()["compaction_input"] == ""
    reference.session_close()
    reference.session_close()
    with pytest.raises(RuntimeError):
        reference.session_commit(ITEMS[:1])


def test_a_commit_whose_log_write_fails_says_so_and_leaves_history_and_log_as_they_were(
    reference: ReferenceTarget,
) -> None:
    assert reference.capabilities("session.commit") == {"fail_log_write": True}
    reference.session_open(True)
    reference.session_commit(ITEMS[:2])
    before = reference.session_build("responses", None)["request"]
    assert reference.session_commit(ITEMS[2:4], fail_log_write=True) == {"failed": "DatabaseError: not authorized"}
    assert reference.session_build("responses", None)["request"] == before
    assert reference.session_commit(ITEMS[2:4], fail_log_write=False) == {}, "the fault was for that commit only"
    running = reference.session_build("responses", None)["request"]
    assert len(running) == 4
    reference.session_restore()
    assert reference.session_build("responses", None)["request"] == running, "the log holds the round once"

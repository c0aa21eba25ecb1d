"""REQ-1 on the engine's chat and Responses fronts: a fresh cascade's Send carries every turn of the conversation, in
order, whatever shape carried it (strings, parts arrays, tool calls and their results)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from fakels.server import FakeLSThread
from tests.engine.http.conftest import MODEL, play, sends

LONG_RESULT = "begin|" + "0123456789" * 500 + "|end"  # 5,010 characters: past a 2,000-character cut
CONVERSATION: list[Any] = [
    {"role": "user", "content": [{"type": "text", "text": "first "}, {"type": "text", "text": "question"}]},
    {
        "role": "assistant",
        "content": "let me look",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "ä/b.txt"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": LONG_RESULT}]},
    {"role": "assistant", "content": [{"type": "text", "text": "found it"}]},
    {"role": "user", "content": "and now?"},
]


@pytest.mark.invariant("REQ-1")
def test_a_fresh_send_carries_every_turn_in_order(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    client.chat.completions.create(model=MODEL, messages=CONVERSATION)
    _assert_every_piece_in_order(fake)


RESPONSES_INPUT: list[Any] = [
    {"role": "user", "content": [{"type": "input_text", "text": "first "}, {"type": "input_text", "text": "question"}]},
    {"role": "assistant", "content": [{"type": "output_text", "text": "let me look"}]},
    {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": '{"path": "ä/b.txt"}'},
    {"type": "function_call_output", "call_id": "c1", "output": LONG_RESULT},
    {"role": "assistant", "content": "found it"},
    {"role": "user", "content": "and now?"},
]


@pytest.mark.invariant("REQ-1")
def test_a_fresh_send_carries_every_responses_item_in_order(fake: FakeLSThread, client: openai.OpenAI) -> None:
    play(fake, {"chunks": [{"text": "ok"}]})
    client.responses.create(model=MODEL, input=RESPONSES_INPUT, store=False)
    _assert_every_piece_in_order(fake)


def _assert_every_piece_in_order(fake: FakeLSThread) -> None:
    (send,) = sends(fake)
    text = send.request["items"][0]["text"]
    assert "[object Object]" not in text
    at = 0
    for piece in ("first question", "let me look", "read_file", "ä/b.txt", LONG_RESULT, "found it", "and now?"):
        found = text.find(piece, at)
        assert found >= 0, f"{piece[:40]!r} is not in the Send after offset {at}: {text[at:][:300]!r}"
        at = found + len(piece)

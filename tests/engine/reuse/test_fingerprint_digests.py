"""The digests a fingerprint is made of, pinned to golden payloads: the system digest, the emulated tool
context (with its tool-name collation), and the request key itself with its defaults.

The payload texts below are the exact ``stableStringify`` output of the Node pool (engine.md section 2.A,
conversation-pool.js:351-397 and :463-492); the engine must hash the same text to share keys with it.
"""

from __future__ import annotations

import pytest

from engine.js import stable_stringify
from engine.reuse.fingerprint import (
    FingerprintOptions,
    fingerprint_after,
    fingerprint_before,
    newest_stable_turn_index,
    normalize_system_prompt_for_hash,
    system_digest,
    tool_context_digest,
)
from tests.engine.reuse.fingerprint_support import assistant, sha256_hex, system, user

# ------------------------------------------------------------------------------------ system digest


@pytest.mark.parametrize("text", [None, "", False, 0])
def test_a_missing_system_text_normalises_to_the_empty_string(text: object) -> None:
    assert normalize_system_prompt_for_hash(text) == ""


def test_the_system_digest_covers_every_system_message_and_normalises_only_text() -> None:
    messages = [
        system("Today is 2024-01-01"),
        user("x"),
        system([{"type": "text", "text": "B"}, {"type": "image_url", "image_url": {"url": "https://i/p.png"}}]),
    ]
    payload = (
        '[{"content":[{"text":"Today is <date>","type":"text"}],"role":"system"},'
        '{"content":[{"text":"B","type":"text"},{"type":"image","url":"https://i/p.png"}],"role":"system"}]'
    )
    assert system_digest(messages) == sha256_hex(payload)[:32]


# ------------------------------------------------------------------------------------ tool context

_READ = {
    "type": "function",
    "function": {"name": "Read", "description": "read a file", "parameters": {"type": "object"}},
}
_BASH = {"name": "Bash", "description": "run", "input_schema": {"type": "object", "required": ["command"]}}


def test_the_tool_context_digest_hashes_the_documented_payload() -> None:
    options = FingerprintOptions(
        emulate_tools=True, tools=[_READ, _BASH], tool_choice="auto", tool_preamble="P", preamble_tier=2
    )
    payload = (
        '{"preambleTier":2,"toolPreambleHash":"' + sha256_hex("P")[:16] + '","tool_choice":"auto","tools":['
        '{"description":"run","name":"Bash","parameters":{"required":["command"],"type":"object"}},'
        '{"description":"read a file","name":"Read","parameters":{"type":"object"}}]}'
    )
    assert tool_context_digest(options) == sha256_hex(payload)[:32]


def test_a_bare_tool_context_has_empty_defaults() -> None:
    options = FingerprintOptions(emulate_tools=True, tools=[{"function": {"parameters": {}}}])
    payload = (
        '{"preambleTier":null,"toolPreambleHash":"","tool_choice":null,'
        '"tools":[{"description":"","name":"","parameters":{}}]}'
    )
    assert tool_context_digest(options) == sha256_hex(payload)[:32]


def _digest_of_names_in_order(names: list[str]) -> str:
    tools = [{"description": "", "name": name, "parameters": None} for name in names]
    payload = {"preambleTier": None, "toolPreambleHash": "", "tool_choice": None, "tools": tools}
    return sha256_hex(stable_stringify(payload))[:32]


@pytest.mark.parametrize(
    ("given", "expected_order"),
    [
        (["b", "a"], ["a", "b"]),
        (["t2", "t1"], ["t1", "t2"]),
        (["a", "1"], ["1", "a"]),  # digits before letters
        (["a", "-", "_"], ["_", "-", "a"]),  # punctuation first, in ICU root order
        (["Read", "read"], ["read", "Read"]),  # case is a tertiary difference, lower first
        (["\u20ac", "a"], ["a", "\u20ac"]),  # non-ASCII after ASCII
        (["\u00e9", "\u00d7"], ["\u00d7", "\u00e9"]),  # and among themselves by code point
        (["a", ""], ["", "a"]),  # a nameless tool sorts first
    ],
)
def test_emulated_tools_are_sorted_by_localised_name(given: list[str], expected_order: list[str]) -> None:
    tools = [{"name": name} for name in given]
    options = FingerprintOptions(emulate_tools=True, tools=tools)
    assert tool_context_digest(options) == _digest_of_names_in_order(expected_order)


# ------------------------------------------------------------------------------------ request keys

_CONVO = [user("hi"), assistant("hello"), user("next")]
_BEFORE_PAYLOAD = (
    '{"caller":"","model":"","route":"chat","sys":"","tools":"","turns":['
    '{"content":[{"text":"hi","type":"text"}],"role":"user"},'
    '{"role":"assistant","text":"hello","tool_calls":[]}],"v":2}'
)


def test_fingerprint_before_defaults_to_an_empty_caller_and_model_and_the_chat_route() -> None:
    assert fingerprint_before(_CONVO) == sha256_hex(_BEFORE_PAYLOAD)
    assert fingerprint_before(_CONVO, options=FingerprintOptions(route="")) == sha256_hex(_BEFORE_PAYLOAD)


@pytest.mark.parametrize(
    ("messages", "index"),
    [
        ([], -1),
        ([assistant("a")], -1),
        ([system("s"), assistant("a")], -1),
        ([user("a"), assistant("b"), user("c"), assistant("d")], 2),
        ([user("a"), assistant("b"), {"role": "tool", "content": "r"}, assistant("d"), assistant("e")], 2),
    ],
)
def test_the_newest_stable_turn_is_the_last_user_or_tool_message(messages: list[dict[str, object]], index: int) -> None:
    assert newest_stable_turn_index(messages) == index


def test_a_request_ending_in_assistant_turns_is_keyed_before_its_last_user_turn() -> None:
    prefilled = [user("a"), assistant("b"), user("c"), assistant("d")]
    assert fingerprint_before(prefilled) == fingerprint_after(prefilled[:2])

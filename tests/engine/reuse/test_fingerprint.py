"""Request fingerprints: the JS serialisation they hash, text rules, projection and keys."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.js import js_trim, stable_stringify
from engine.reuse.fingerprint import (
    META_STRIP_MAX_CHARS,
    FingerprintOptions,
    canonical_content_block,
    fingerprint_after,
    fingerprint_before,
    normalize_system_prompt_for_hash,
    project_message,
    short_digest,
    strip_meta_tags,
    system_digest,
    tool_context_digest,
)
from tests.engine.reuse.fingerprint_support import assistant, system, user

Msg = Mapping[str, object]


def call(call_id: str, name: str, arguments: object) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# ------------------------------------------------------------------------------------ JS serialisation


def test_stable_stringify_sorts_keys_by_utf16_code_units() -> None:
    # U+1F600 is D83D DE00 in UTF-16, below U+E000: JS puts it first, Python's str order would not
    value = {"\ue000": 1, "\U0001f600": 2, "b": 3, "B": 4, "10": 5, "2": 6}
    assert stable_stringify(value) == '{"10":5,"2":6,"B":4,"b":3,"\U0001f600":2,"\ue000":1}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (2**64, "18446744073709552000"),
        (2**53 + 1, "9007199254740992"),
        (math.nan, "null"),
        (math.inf, "null"),
        (10**400, "null"),
        ("é\u2028\x7f", '"é\u2028\x7f"'),
        ('\x01\n"\\', '"\\u0001\\n\\"\\\\"'),
        ("\ud800x", '"\\ud800x"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a surrogate pair held as two code points is one character in JS
        ((1, [None, True]), "[1,[null,true]]"),
    ],
)
def test_stable_stringify_prints_values_as_json_stringify(value: object, expected: str) -> None:
    assert stable_stringify(value) == expected


def test_stable_stringify_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        stable_stringify(b"bytes")


def test_digests_hash_the_utf8_of_the_js_string() -> None:
    assert short_digest("abc", 16) == hashlib.sha256(b"abc").hexdigest()[:16]
    assert short_digest(None) == hashlib.sha256(b"").hexdigest()[:16]
    # a lone surrogate is U+FFFD in Node's UTF-8
    assert short_digest("a\udc00") == hashlib.sha256("a\ufffd".encode()).hexdigest()[:16]


def test_a_fingerprint_is_the_sha256_of_the_documented_payload() -> None:
    payload = (
        '{"caller":"","model":"","route":"chat","sys":"","tools":"",'
        '"turns":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"v":2}'
    )
    assert fingerprint_after([user("hi")]) == hashlib.sha256(payload.encode()).hexdigest()


# ------------------------------------------------------------------------------------ text rules


def test_meta_tags_are_stripped_and_blank_runs_tidied() -> None:
    text = "<system-reminder>cwd /x\ntodo</system-reminder>  \n\n\n\nhello <command-name a='1'>/foo</command-name>"
    assert strip_meta_tags(text) == "hello"
    assert strip_meta_tags("a  \t\nb\n\n\n\nc") == "a\nb\n\nc"


def test_unknown_tags_stay_and_are_audited(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="engine.pool"):
        assert strip_meta_tags("<todo>x</todo><todo>y</todo><b-c>z</b-c>") == "<todo>x</todo><todo>y</todo><b-c>z</b-c>"
    assert caplog.messages == ["[META_TAG_AUDIT] Unknown XML tags in user message: todo, b-c"]


def test_meta_stripping_is_capped() -> None:
    long_text = "<summary>s</summary>" + "x" * META_STRIP_MAX_CHARS
    assert strip_meta_tags(long_text) == long_text  # hashed verbatim above the cap
    assert strip_meta_tags(long_text[:META_STRIP_MAX_CHARS]) == "x" * (META_STRIP_MAX_CHARS - 20)


def test_js_trim_uses_the_ecmascript_whitespace_set() -> None:
    assert js_trim("\ufeff\u3000 a \u2029") == "a"
    assert js_trim("\x1ca\x85") == "\x1ca\x85"  # Python's str.strip would remove these


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at 2024-05-06T07:08:09.123+02:00 ok", "at <ts> ok"),
        ("Today's date is 2024-05-06.", "Today's date is <date>."),
        ("released 2024-05-06, 20240506", "released <date>, 20240506"),
        ("id 123E4567-e89b-12d3-a456-426614174000", "id <uuid>"),
        ("env:\n  - Working directory: /home/me/p\ncwd\uff1aC:\\x",
         "env:\n  - Working directory: <cwd>\ncwd\uff1a <cwd>"),
        ("Current time: 10:11\nTime : now", "Current time: <time>\nTime : <time>"),
        ("Session ID: abc\nsession_id: d", "Session ID: <sessionid>\nsession_id: <sessionid>"),
        ("at 1712345678 and 1712345678123, not 1612345678 or 1712345678.5",
         "at <epoch> and <epoch>, not 1612345678 or 1712345678.5"),
        ("Status:\nM a.py\n?? b\n\nRecent commits:\nabc1234 fix\n",
         "Status:\n<git-status>\n\nRecent commits:\n<recent-commits>\n"),
        ("see abc1234f, 'abc1234f', deadbeef and 1234567", "see <gitsha>, 'abc1234f', deadbeef and 1234567"),
        ("line\u2028cwd: /x", "line\u2028cwd: <cwd>"),  # U+2028 ends a line for a JS ^
        ("\u0661\u0662\u0663\u0664-\u0661\u0662-\u0661\u0662", "\u0661\u0662\u0663\u0664-\u0661\u0662-\u0661\u0662"),
    ],
)  # fmt: skip
def test_system_normalisation_rules(text: str, expected: str) -> None:
    assert normalize_system_prompt_for_hash(text) == expected


# ------------------------------------------------------------------------------------ projection


def test_image_blocks_are_digested_by_their_data() -> None:
    data_url = {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    assert canonical_content_block(data_url) == {
        "type": "image",
        "meta": "image/png;base64",
        "hash": short_digest("QUJD"),
    }
    source = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
    assert canonical_content_block(source) == {"type": "image", "meta": "image/png", "hash": short_digest("QUJD")}
    assert canonical_content_block({"type": "image_url", "image_url": {"url": "https://x/y.png"}}) == {
        "type": "image",
        "url": "https://x/y.png",
    }
    assert canonical_content_block({"type": "image", "source": {"file_id": "f1"}}) == {"type": "image", "file_id": "f1"}
    assert canonical_content_block({"type": "input_image"}) == {"type": "image", "unhashable": True}
    assert canonical_content_block({"type": "file", "file": {"file_data": "x"}}) == {"type": "file", "unhashable": True}
    assert canonical_content_block({"type": "Document", "file_id": "d"}) == {"type": "file", "file_id": "d"}
    assert canonical_content_block({"type": "thinking", "b": 1, "a": 2}) == {
        "type": "thinking",
        "json": '{"a":2,"b":1,"type":"thinking"}',
    }


@pytest.mark.invariant("SCOPE-3")
def test_the_assistant_projection_keeps_collapsed_text_and_a_tool_call_digest() -> None:
    openai = assistant(" Let me   look.\n", [call("c1", "Read", '{"path":"a","offset":1.0}')])
    anthropic = assistant(
        [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "name": "Read", "input": {"offset": 1, "path": "a"}},
        ]
    )
    assert project_message(openai) == project_message(anthropic)
    assert project_message(openai) == {
        "role": "assistant",
        "text": "Let me look.",
        "tool_calls": [{"name": "Read", "args": '{"offset":1,"path":"a"}'}],
    }
    broken = project_message(assistant("", [call("c2", "Bash", "{not json")]))
    assert broken["tool_calls"] == [{"name": "Bash", "args": "{not json"}]


def test_tool_messages_project_to_tool_results() -> None:
    assert project_message({"role": "tool", "tool_call_id": 5, "content": "ok"}) == {
        "role": "tool_result",
        "tool_call_id": "",
        "content": [{"type": "text", "text": "ok"}],
    }


# ------------------------------------------------------------------------------------ fingerprints


def test_the_next_request_finds_the_entry_the_turn_checked_in() -> None:
    turn1 = [system("You are helpful."), user("hi")]
    after1 = fingerprint_after([*turn1, assistant("hello")], "m", "caller")
    turn2 = [*turn1, assistant("hello"), user("and now?")]
    assert fingerprint_before(turn2, "m", "caller") == after1
    # a tool loop: the newest stable turn is the tool result
    turn3: list[Msg] = [
        *turn2,
        assistant("", [call("c1", "Bash", '{"command":"ls"}')]),
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
    ]
    after2 = fingerprint_after([*turn2, assistant("", [call("c1", "Bash", '{"command": "ls"}')])], "m", "caller")
    assert fingerprint_before(turn3, "m", "caller") == after2


def test_no_prior_turn_means_no_fingerprint() -> None:
    assert fingerprint_before([user("hi")]) is None
    assert fingerprint_before([system("s"), assistant("a")]) is None
    assert fingerprint_before([]) is None
    assert fingerprint_after([]) is None
    assert fingerprint_before([system("s"), user("hi")]) is not None  # only a system message before it


def test_drift_that_does_not_change_the_conversation_keeps_the_fingerprint() -> None:
    base = [system("Today's date is 2024-01-01.\ncwd: /a"), user("look"), assistant("ok"), user("next")]
    drifted = [
        system("Today's date is 2024-02-02.\ncwd: /b"),
        user("<system-reminder>todo: 3</system-reminder>look"),
        assistant("  ok "),
        user("other"),
    ]
    assert fingerprint_before(base) == fingerprint_before(drifted)
    assert fingerprint_before([system("You are terse."), *base[1:]]) != fingerprint_before(base)


@pytest.mark.invariant("SCOPE-3")
def test_the_key_covers_caller_model_route_system_and_media() -> None:
    convo = [
        user(
            [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
        )
    ]
    convo += [assistant("a cat"), user("colour?")]
    fp = fingerprint_before(convo, "m", "c")
    assert fp != fingerprint_before(convo, "m", "d")
    assert fp != fingerprint_before(convo, "n", "c")
    assert fp != fingerprint_before(convo, "m", "c", FingerprintOptions(route="responses"))
    other_image = [
        user(
            [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]
        )
    ]
    assert fp != fingerprint_before([*other_image, *convo[1:]], "m", "c")
    with_system = [system("S"), *convo]
    assert fingerprint_before(with_system, "m", "c") != fp
    assert fingerprint_before(with_system, "m", "c", FingerprintOptions(hash_system=False)) == fp


def test_unhashable_media_in_a_prior_turn_disables_reuse() -> None:
    convo = [user([{"type": "input_image"}]), assistant("?"), user("again")]
    assert fingerprint_before(convo) is None
    assert fingerprint_after(convo) is None
    assert fingerprint_before([*convo[1:]]) is not None


@pytest.mark.invariant("SCOPE-3")
def test_emulated_tools_are_part_of_the_key_in_any_order() -> None:
    tools = [
        {"type": "function", "function": {"name": "Read", "description": "read", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "bash", "description": "run"}},
    ]
    convo = [user("hi"), assistant("ok"), user("more")]
    emulated = FingerprintOptions(emulate_tools=True, tools=tools, tool_preamble="P")
    reordered = FingerprintOptions(emulate_tools=True, tools=list(reversed(tools)), tool_preamble="P")
    assert tool_context_digest(emulated) == tool_context_digest(reordered)
    assert fingerprint_before(convo, options=emulated) == fingerprint_before(convo, options=reordered)
    assert fingerprint_before(convo, options=emulated) != fingerprint_before(convo)
    changed = FingerprintOptions(emulate_tools=True, tools=tools, tool_preamble="Q")
    assert tool_context_digest(changed) != tool_context_digest(emulated)
    assert tool_context_digest(FingerprintOptions(tools=tools)) == ""


def test_system_digest_normalises_only_text_blocks() -> None:
    assert system_digest([user("x")]) == ""
    one = system_digest([system([{"type": "text", "text": "date 2024-01-01"}])])
    two = system_digest([system([{"type": "text", "text": "date 2025-12-31"}])])
    assert one == two
    assert len(one) == 32
    assert system_digest([system("x")], hash_system=False) == ""


@given(text=st.text(max_size=40))
def test_fingerprints_are_a_pure_function_of_the_request(text: str) -> None:
    convo: list[Msg] = [system(f"S {text}"), user(text), assistant(text), user("next")]
    assert fingerprint_before(convo) == fingerprint_before([dict(m) for m in convo])
    assert fingerprint_after(convo) == fingerprint_after(list(convo))

"""The canonical projection a fingerprint hashes: content blocks, message content, messages and tool calls.

Each case is the exact record the Node pool builds (conversation-pool.js:232-349, engine.md section 2.A):
the strongest check that a key stays stable across client shapes and moves when the conversation does.
"""

from __future__ import annotations

import pytest

from engine.reuse.fingerprint import canonical_content_block, canonicalise_content, project_message, project_tool_calls
from tests.engine.reuse.fingerprint_support import assistant, sha256_hex


def h16(data: str) -> str:
    """The media digest: the first 16 hex digits of the SHA-256 of the base64 text."""
    return sha256_hex(data)[:16]


# ------------------------------------------------------------------------------------ content blocks


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        # a bare string in a content list is a text block, meta-stripped like any text
        ("<summary>old</summary> hello", {"type": "text", "text": "hello"}),
        # a block with neither text nor type keeps its stable JSON under type "unknown"
        ({"b": 1, "a": [2]}, {"type": "unknown", "json": '{"a":[2],"b":1}'}),
        ({"type": "", "x": 1}, {"type": "unknown", "json": '{"type":"","x":1}'}),
        (None, {"type": "unknown", "json": '""'}),
    ],
)  # fmt: skip
def test_text_and_unknown_blocks_project_to_typed_records(part: object, expected: dict[str, object]) -> None:
    assert canonical_content_block(part) == expected


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        # the url may sit on the block itself (Responses input_image)
        ({"type": "input_image", "url": "https://x/y.png"}, {"type": "image", "url": "https://x/y.png"}),
        # data URL: meta is what lies between "data:" and the first comma, the hash is over the rest
        ({"type": "image_url", "image_url": {"url": "data:text/plain;base64,QU,JD"}},
         {"type": "image", "meta": "text/plain;base64", "hash": h16("QU,JD")}),
        # a data URL without a comma: no meta, the whole URL is hashed
        ({"type": "image_url", "image_url": {"url": "data:QUJD"}},
         {"type": "image", "meta": "", "hash": h16("data:QUJD")}),
        # Anthropic base64 source without a media type
        ({"type": "image", "source": {"type": "base64", "data": "QUJD"}},
         {"type": "image", "meta": "", "hash": h16("QUJD")}),
        # Anthropic url source
        ({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}},
         {"type": "image", "url": "https://x/a.png"}),
        # a source that names neither base64 nor url has no stable digest, whatever keys it carries
        ({"type": "image", "source": {"data": "QUJD"}}, {"type": "image", "unhashable": True}),
        ({"type": "image", "source": {"url": "https://x/a.png"}}, {"type": "image", "unhashable": True}),
    ],
)  # fmt: skip
def test_image_blocks_project_to_a_stable_digest(part: object, expected: dict[str, object]) -> None:
    assert canonical_content_block(part) == expected


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"type": "file", "source": {"type": "file", "file_id": "file_9"}}, {"type": "file", "file_id": "file_9"}),
        ({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
         {"type": "file", "meta": "application/pdf", "hash": h16("JVBERi0=")}),
        ({"type": "input_file", "source": {"type": "base64", "data": "QUJD"}},
         {"type": "file", "meta": "", "hash": h16("QUJD")}),
        ({"type": "document", "source": {"type": "url", "url": "https://x/d.pdf"}},
         {"type": "file", "url": "https://x/d.pdf"}),
        # data without a base64 type has no stable digest
        ({"type": "file", "source": {"data": "QUJD"}}, {"type": "file", "unhashable": True}),
    ],
)  # fmt: skip
def test_file_blocks_project_to_a_stable_digest(part: object, expected: dict[str, object]) -> None:
    assert canonical_content_block(part) == expected


# ------------------------------------------------------------------------------------ message content


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, [{"type": "json", "json": '""'}]),
        ({"z": 1, "a": [True, None]}, [{"type": "json", "json": '{"a":[true,null],"z":1}'}]),
        (7, [{"type": "json", "json": "7"}]),
        (["hi", None], [{"type": "text", "text": "hi"}, {"type": "unknown", "json": '""'}]),
    ],
)
def test_content_that_is_not_a_string_or_list_is_kept_as_stable_json(
    content: object, expected: list[dict[str, object]]
) -> None:
    assert canonicalise_content(content) == expected


# ------------------------------------------------------------------------------------ messages


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "tool", "tool_call_id": "call_1", "content": "ok"},
         {"role": "tool_result", "tool_call_id": "call_1", "content": [{"type": "text", "text": "ok"}]}),
        # an unknown role keeps its name and its canonical content
        ({"role": "developer", "content": "be brief"},
         {"role": "developer", "content": [{"type": "text", "text": "be brief"}]}),
        ({"content": "orphan"}, {"role": "unknown", "content": [{"type": "text", "text": "orphan"}]}),
        # assistant: each text block whitespace-collapsed and trimmed, joined by one newline; other blocks dropped
        (assistant([{"type": "text", "text": " a  b "}, {"type": "thinking", "thinking": "x"},
                    {"type": "text", "text": "c\u3000\u3000d"}]),
         {"role": "assistant", "text": "a b\nc d", "tool_calls": []}),
        (assistant(""), {"role": "assistant", "text": "", "tool_calls": []}),
    ],
)  # fmt: skip
def test_messages_project_to_their_documented_records(message: dict[str, object], expected: dict[str, object]) -> None:
    assert project_message(message) == expected


# ------------------------------------------------------------------------------------ tool calls


@pytest.mark.parametrize(
    ("tool_calls", "expected"),
    [
        # a call that carries name and input itself (no "function" wrapper)
        ([{"id": "c1", "name": "Read", "input": {"path": "a", "limit": 2}}],
         [{"name": "Read", "args": '{"limit":2,"path":"a"}'}]),
        # arguments already parsed into an object are stable JSON too
        ([{"id": "c2", "function": {"name": "Write", "arguments": {"b": 1, "a": 2}}}],
         [{"name": "Write", "args": '{"a":2,"b":1}'}]),
        # no arguments and no input: empty args; no name anywhere: empty name
        ([{"id": "c3", "function": {"name": "Ping"}}], [{"name": "Ping", "args": ""}]),
        ([{"id": "c4", "type": "function"}], [{"name": "", "args": ""}]),
        (["junk"], [{"name": "", "args": ""}]),
    ],
)  # fmt: skip
def test_tool_calls_project_to_name_and_stable_args(tool_calls: list[object], expected: list[dict[str, str]]) -> None:
    assert project_tool_calls(assistant("", tool_calls)) == expected


def test_a_tool_use_block_without_a_name_projects_to_an_empty_name() -> None:
    message = assistant([{"type": "tool_use", "id": "t1", "input": {"x": 1}}])
    assert project_tool_calls(message) == [{"name": "", "args": '{"x":1}'}]

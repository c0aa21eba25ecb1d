"""The kit's model of structured output (conformance/models/so.py, seed 001 D2): which answers
conform to a schema, how an event stream reads as OpenAI chunks, and which frames two streams are
compared on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.models.so import VIOLATION_CODE, comparable_frames, conforms, error_code
from conformance.models.stream import StreamView

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["answer"],
    "additionalProperties": False,
}


# ---------------------------------------------------------------------------- conformance of an answer


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": 12}',
        '{"answer": 12, "tags": ["a", "b"]}',
        '{\n  "answer": 12\n}',
        '\n\n  {"answer": 12}  \n',
        '\u00a0{"answer": 12}\u2003',  # Unicode spaces around the payload are stripped too
        '\x0c{"answer": 12}\x0b',  # form feed / vertical tab: whitespace, though not JSON's
    ],
)
def test_strict_json_that_validates_conforms(text: str) -> None:
    assert conforms(text, SCHEMA) is True


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "twelve"}',  # wrong type
        '{"tags": []}',  # missing required
        '{"answer": 12, "unexpected_field": 1}',  # extra property
        '[{"answer": 12}]',  # an array
        "The answer is 12.",  # prose
        '{"answer": 1',  # truncated
        "",
        "   ",
        '```json\n{"answer": 12}\n```',  # fences are not stripped by the model
    ],
)
def test_an_answer_that_breaks_the_schema_or_json_does_not_conform(text: str) -> None:
    assert conforms(text, SCHEMA) is False


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_python_only_json_constants_do_not_conform(constant: str) -> None:
    assert conforms(f'{{"value": {constant}}}', {"type": "object"}) is False
    assert conforms('{"value": 1.5}', {"type": "object"}) is True


def test_a_schema_without_dialect_is_judged_as_draft_2020_12() -> None:
    # prefixItems exists from 2020-12 on; an older draft would ignore it and accept ["x"].
    schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    assert conforms('["x"]', schema) is False
    assert conforms("[1]", schema) is True


def test_a_schema_that_names_its_dialect_is_judged_in_that_dialect() -> None:
    # Draft 4 has no "const": the keyword is ignored there.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "const": 1}
    assert conforms("2", draft4) is True
    assert conforms("2", {"const": 1}) is False


# ---------------------------------------------------------------------------- an event stream


def _chunk(**fields: Any) -> str:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, **fields})


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "finish_reason": finish}


USAGE = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}

TEXT_STREAM = [
    _chunk(choices=[_choice({"role": "assistant", "content": ""})]),
    _chunk(choices=[_choice({"content": '{"answer": '})]),
    _chunk(choices=[_choice({"content": "12}"})]),
    _chunk(choices=[_choice({}, "stop")]),
    _chunk(choices=[], usage=USAGE),
    "[DONE]",
]


def test_a_text_stream_reads_as_its_content_terminal_and_usage() -> None:
    view = StreamView(TEXT_STREAM)
    assert view.content == '{"answer": 12}'
    assert view.finish_reasons == ["stop"]
    assert view.usage == USAGE
    assert view.done is True
    assert view.errors == []
    assert view.unparsable == []
    assert len(view.chunks) == 5
    assert view.tool_call_names == []


def test_a_stream_without_the_done_marker_is_not_done() -> None:
    view = StreamView(TEXT_STREAM[:-1])
    assert view.done is False
    assert view.content == '{"answer": 12}'


def test_frames_written_after_the_done_marker_are_still_read() -> None:
    # A gateway that closes with [DONE] and then keeps writing is judged on everything it sent.
    late_error = json.dumps({"error": {"message": "late", "code": VIOLATION_CODE}})
    view = StreamView([*TEXT_STREAM, _chunk(choices=[_choice({"content": " more"})]), late_error])
    assert view.done is True
    assert view.content == '{"answer": 12} more'
    assert view.errors == [{"message": "late", "code": VIOLATION_CODE}]


def test_events_that_are_not_json_objects_are_unparsable_and_done_is_neither() -> None:
    events = ["not json", "[1, 2]", '"text"', "42", _chunk(choices=[_choice({"content": "x"})]), "[DONE]"]
    view = StreamView(events)
    assert view.unparsable == ["not json", "[1, 2]", '"text"', "42"]
    assert [c["choices"][0]["delta"] for c in view.chunks] == [{"content": "x"}]
    assert view.content == "x"


def test_only_an_error_object_in_a_chunk_is_an_error_frame() -> None:
    typed = {"message": "the answer does not match the schema", "code": VIOLATION_CODE}
    view = StreamView([json.dumps({"error": typed}), json.dumps({"error": "plain text"}), _chunk(choices=[])])
    assert view.errors == [typed]
    assert view.done is False


def test_deltas_skip_choices_that_are_not_objects_and_read_a_missing_delta_as_empty() -> None:
    events = [
        _chunk(choices=["junk", {"index": 0}, _choice({"content": "a"})]),
        _chunk(choices=None),
        _chunk(),
        _chunk(choices=[_choice({"content": None}), _choice({"content": 7})]),
    ]
    view = StreamView(events)
    assert view.deltas() == [{}, {"content": "a"}, {"content": None}, {"content": 7}]
    assert view.content == "a7"


def test_tool_call_names_are_those_of_the_fragments_that_carry_one() -> None:
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": ""}}
    events = [
        _chunk(choices=[_choice({"role": "assistant", "tool_calls": [first]})]),
        _chunk(choices=[_choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": 1}'}}]})]),
        _chunk(choices=[_choice({"tool_calls": [{"index": 1, "function": {"name": "fetch"}}, {"index": 2}]})]),
        _chunk(choices=[_choice({"tool_calls": [{"index": 3, "function": {"name": ""}}]})]),
        _chunk(choices=[_choice({"tool_calls": None}, "tool_calls")]),
        "[DONE]",
    ]
    view = StreamView(events)
    assert view.tool_call_names == ["lookup", "fetch"]
    assert view.finish_reasons == ["tool_calls"]


def test_finish_reasons_keep_every_terminal_in_order_and_skip_empty_ones() -> None:
    events = [
        _chunk(choices=[_choice({}, None), _choice({}, ""), "junk"]),
        _chunk(choices=[_choice({}, "length"), {"index": 1, "finish_reason": "stop"}]),
    ]
    assert StreamView(events).finish_reasons == ["length", "stop"]


def test_the_usage_is_the_last_usage_object_in_the_stream() -> None:
    later = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    events = [_chunk(usage=USAGE), _chunk(usage=None), _chunk(usage=later), _chunk(usage="n/a"), "[DONE]"]
    assert StreamView(events).usage == later
    assert StreamView([_chunk(usage=None), "[DONE]"]).usage is None


# ---------------------------------------------------------------------------- error bodies


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"error": {"message": "m", "code": VIOLATION_CODE}}, VIOLATION_CODE),
        ({"error": {"message": "m"}}, None),
        ({"error": "STRUCTURED_OUTPUT_NOT_CONFORMING"}, None),
        ({"code": VIOLATION_CODE}, None),
        ([{"error": {"code": VIOLATION_CODE}}], None),
        ("STRUCTURED_OUTPUT_NOT_CONFORMING", None),
        (None, None),
    ],
)
def test_the_error_code_is_read_only_from_an_error_object(body: object, code: object) -> None:
    assert error_code(body) == code


def test_the_violation_code_is_the_one_the_seed_names() -> None:
    assert VIOLATION_CODE == "STRUCTURED_OUTPUT_NOT_CONFORMING"


# ---------------------------------------------------------------------------- frame-by-frame comparison


def test_frames_are_compared_without_per_response_identity() -> None:
    schema_stream = [
        json.dumps({"id": "a", "created": 1, "system_fingerprint": "fp1", "model": "m", "choices": [1]}),
        "[DONE]",
    ]
    plain_stream = [
        json.dumps({"id": "b", "created": 2, "system_fingerprint": "fp2", "model": "m", "choices": [1]}),
        "[DONE]",
    ]
    assert comparable_frames(schema_stream) == [{"model": "m", "choices": [1]}, "[DONE]"]
    assert comparable_frames(schema_stream) == comparable_frames(plain_stream)


def test_content_and_nested_ids_still_count_in_a_frame_comparison() -> None:
    call = {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}
    frames = comparable_frames([_chunk(model="m", choices=[_choice(call)])])
    assert frames == [{"object": "chat.completion.chunk", "model": "m", "choices": [_choice(call)]}]
    other_model = comparable_frames([_chunk(model="n", choices=[_choice(call)])])
    assert frames != other_model


def test_frames_that_are_not_objects_are_compared_as_they_are() -> None:
    assert comparable_frames(["[1, 2]", '"text"', "plain", "[DONE]", ": comment"]) == [
        [1, 2],
        "text",
        "plain",
        "[DONE]",
        ": comment",
    ]

"""The kit's model of structured output (conformance/models/so.py, seed 001 D2): which answers
conform to a schema, how an event stream reads as OpenAI chunks, and what two streams are compared
on (SO-3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.models.so import VIOLATION_CODE, conforms, error_code, gathered_into_one_frame, stream_essentials
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


# ---------------------------------------------------------------------------- two streams compared (SO-3)


def _delta(**delta: Any) -> str:
    return _chunk(choices=[_choice(delta)])


def _stream(*deltas: dict[str, Any], finish: str = "stop") -> list[str]:
    return [
        _delta(role="assistant", content=""),
        *(_delta(**d) for d in deltas),
        _chunk(choices=[_choice({}, finish)]),
        _chunk(choices=[], usage=USAGE),
        "[DONE]",
    ]


def test_poll_timing_is_not_compared_channels_are() -> None:
    """The issue's example: one run found the reasoning first, the other the content; chunk
    boundaries differ too. What a schema check could change is the same."""
    schema_run = _stream({"reasoning_content": "\\"}, {"content": '{"a": '}, {"content": "1}"})
    plain_run = _stream({"content": '{"a": 1}'}, {"reasoning_content": "\\"})
    assert stream_essentials(schema_run) == stream_essentials(plain_run)
    assert stream_essentials(schema_run)["reasoning"] == "\\"


def test_per_response_identity_is_not_compared() -> None:
    first = [json.dumps({"id": "a", "created": 1, "system_fingerprint": "fp1", "choices": [_choice({"content": "x"})]})]
    second = [
        json.dumps({"id": "b", "created": 2, "system_fingerprint": "fp2", "choices": [_choice({"content": "x"})]})
    ]
    assert stream_essentials(first) == stream_essentials(second)


_THINK = {"reasoning_content": "\\\\"}
_WHOLE = {"content": '{"a": 1}'}


@pytest.mark.parametrize(
    ("schema_run", "differs_in"),
    [
        (_stream(_THINK, _WHOLE), None),
        (_stream({"content": "1}"}, _THINK, {"content": '{"a": '}), "content"),  # a channel out of its order
        (_stream(_WHOLE, {"reasoning_content": "later"}), "reasoning"),
        (_stream(_WHOLE, {"reasoning": "\\\\"}), None),  # the other name gateways give the channel
        (_stream(_THINK, _WHOLE, finish="length"), "finish reasons"),
        (_stream(_THINK, _WHOLE)[:-1], "ends with [DONE]"),
        ([*_stream(_THINK, _WHOLE), _delta(content="")], "ends with [DONE]"),
        (_stream(_THINK, _WHOLE)[1:], "roles"),
        ([_chunk(error={"code": "x"}), *_stream(_THINK, _WHOLE)], "error frames"),
        ([*_stream(_THINK, _WHOLE)[:4], *_stream(_THINK, _WHOLE)[5:]], "usage"),
        ([": keep-alive", *_stream(_THINK, _WHOLE)], "other events"),
    ],
)
def test_what_a_schema_check_could_change_is_compared(schema_run: list[str], differs_in: str | None) -> None:
    plain_run = _stream({"content": '{"a": '}, _THINK, {"content": "1}"})
    got, want = stream_essentials(schema_run), stream_essentials(plain_run)
    assert [key for key in got if got[key] != want[key]] == ([differs_in] if differs_in else [])


def test_tool_calls_are_joined_by_index_without_their_ids() -> None:
    def call(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    split = _stream(
        call(0, id="call_1", function={"name": "lookup", "arguments": '{"q"'}),
        call(1, id="call_2", function={"name": "search", "arguments": "{}"}),
        call(0, function={"arguments": ': "x"}'}),
    )
    whole = _stream(
        call(0, id="call_9", function={"name": "lookup", "arguments": '{"q": "x"}'}),
        call(1, id="call_8", function={"name": "search", "arguments": "{}"}),
    )
    assert stream_essentials(split)["tool calls"] == [("lookup", '{"q": "x"}'), ("search", "{}")]
    assert stream_essentials(split) == stream_essentials(whole)
    swapped = _stream(call(0, function={"name": "search", "arguments": "{}"}), call(1, function={"name": "lookup"}))
    assert stream_essentials(swapped)["tool calls"] != stream_essentials(whole)["tool calls"]


@pytest.mark.parametrize(
    ("schema_frames", "plain_frames", "gathered"),
    [
        (1, 2, True),  # the limit: several in the plain stream, one in the schema stream
        (1, 3, True),
        (1, 1, False),  # the plain stream shows one frame: nothing beyond it
        (2, 2, False),
        (2, 3, False),  # fewer, but not one: chunk boundaries are poll timing's
        (0, 2, False),  # no content at all is the content comparison's business
    ],
)
def test_gathering_into_one_frame_is_judged_against_the_plain_stream(
    schema_frames: int, plain_frames: int, gathered: bool
) -> None:
    def run(frames: int) -> list[str]:
        return _stream(*({"content": f"p{k}"} for k in range(frames)))

    assert gathered_into_one_frame(run(schema_frames), run(plain_frames)) is gathered

"""Structured output: the requested schema, the payload judged, and the violation reason and body (seed 001 D2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.chat.structured_output import (
    MESSAGE_LIMIT,
    VIOLATION_CODE,
    ResponseFormatError,
    extract_json_payload,
    requested_schema,
    structured_output_violation,
    violation_error_body,
    violation_message,
)
from tests.support.image_server import ImageServer


def _format(schema: object, **extra: object) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True, **extra}}


# ------------------------------------------------------------------------------------ requested_schema


def test_a_json_schema_format_gives_its_schema_as_given() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    assert requested_schema(_format(schema)) is schema


@pytest.mark.parametrize("response_format", [None, {"type": "text"}, {"type": "json_object"}])
def test_no_schema_is_requested_without_a_json_schema_format(response_format: object) -> None:
    assert requested_schema(response_format) is None


def test_an_older_dialect_named_by_dollar_schema_is_accepted() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "integer"}}}
    assert requested_schema(_format(schema)) is schema


@pytest.mark.parametrize(
    ("response_format", "fragment"),
    [
        ("json_schema", "response_format must be an object"),
        (["json_schema"], "response_format must be an object"),
        ({"type": "xml"}, "response_format.type must be one of"),
        ({}, "(got null)"),
        ({"type": "json_schema"}, "response_format.json_schema must be an object"),
        ({"type": "json_schema", "json_schema": "x"}, "response_format.json_schema must be an object"),
        ({"type": "json_schema", "json_schema": {"name": "a"}}, "schema must be an object"),
        (_format(True), "schema must be an object"),
        (_format([{"type": "object"}]), "schema must be an object"),
        (_format({"type": "objekt"}), "is not a valid JSON Schema: $.type:"),
        (_format({"properties": {"a": {"minLength": -1}}}), "is not a valid JSON Schema: $.properties.a.minLength:"),
        (_format({"required": "answer"}), "is not a valid JSON Schema: $.required:"),
        (_format({"$ref": "#/$defs/missing"}), "does not resolve inside the schema"),
        (_format({"properties": {"a": {"$ref": "#/definitions/a"}}}), "does not resolve inside the schema"),
        (_format({"$ref": "http://169.254.169.254/latest/meta-data"}), "does not resolve inside the schema"),
        (_format({"$ref": "other.json"}), "does not resolve inside the schema"),
        (_format({"$schema": "http://example.com/my-dialect"}), "not a known dialect"),
        (_format({"$schema": 7}), "$schema must be a string"),
    ],
)
def test_a_malformed_response_format_is_refused_with_a_clear_message(response_format: object, fragment: str) -> None:
    with pytest.raises(ResponseFormatError) as caught:
        requested_schema(response_format)
    assert fragment in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_refs_resolve_against_the_nearest_dollar_id() -> None:
    schema = {
        "$defs": {"inner": {"$id": "http://example.com/inner", "$ref": "#/$defs/leaf", "$defs": {"leaf": {}}}},
        "$ref": "#/$defs/inner",
    }
    assert requested_schema(_format(schema)) is schema


def test_values_of_enum_and_const_are_not_taken_for_references() -> None:
    schema = {"enum": [{"$ref": "#/nowhere"}], "properties": {"a": {"const": {"$ref": "x.json"}}}}
    assert requested_schema(_format(schema)) is schema


# ------------------------------------------------------------------------------------ extract_json_payload


@pytest.mark.parametrize(
    ("text", "payload"),
    [
        ('{"a":1}', '{"a":1}'),
        ('  \n{"a":1}\n\t ', '{"a":1}'),
        ('```json\n{"a":1}\n```', '{"a":1}'),
        ('```JSON\n{"a":1}\n```', '{"a":1}'),
        ('```\n{"a":1}\n```', '{"a":1}'),
        ('\n ```json\r\n{"a":1}\r\n``` \n', '{"a":1}'),
        ('```json {"a":1}```', '{"a":1}'),
        ('```{"a":"``` inside"}```', '{"a":"``` inside"}'),
        ("``````", ""),
        ("```", "```"),
        ("", ""),
    ],
)
def test_the_payload_is_the_trimmed_text_without_one_surrounding_fence(text: str, payload: str) -> None:
    assert extract_json_payload(text) == payload


@pytest.mark.parametrize(
    "text",
    [
        'Here you go:\n```json\n{"a":1}\n```',  # a preamble is kept: nothing but the fence is stripped
        '```json\n{"a":1}\n```\nDone.',
        '```json\n{"a":1}',
        '{"a":1}\n```',
    ],
)
def test_only_a_fence_around_the_whole_text_is_removed(text: str) -> None:
    assert extract_json_payload(text) == text.strip()


def test_one_fence_only_is_removed() -> None:
    assert extract_json_payload('```\n```json\n{"a":1}\n```\n```') == '```json\n{"a":1}\n```'


def test_the_payload_is_not_rekeyed() -> None:
    assert extract_json_payload('```json\n{"b": 2,  "a": 1}\n```') == '{"b": 2,  "a": 1}'


# ------------------------------------------------------------------------------------ violation

_CASES: list[tuple[str, dict[str, Any], str, str, str]] = [
    # (name, schema, conforming payload, violating payload, reason of the violation)
    ("type", {"type": "string"}, '"twelve"', "12", "$: 12 is not of type 'string'"),
    (
        "required",
        {"type": "object", "required": ["answer"]},
        '{"answer": 1}',
        '{"answr": 1}',
        "$: 'answer' is a required property",
    ),
    (
        "enum",
        {"type": "object", "properties": {"colour": {"enum": ["red", "green"]}}},
        '{"colour": "red"}',
        '{"colour": "blue"}',
        "$.colour: 'blue' is not one of ['red', 'green']",
    ),
    (
        "additionalProperties false",
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        '{"a": 1}',
        '{"a": 1, "b": 2}',
        "$: Additional properties are not allowed ('b' was unexpected)",
    ),
    (
        "nested arrays",
        {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "[[1, 2], [], [3]]",
        '[[1, 2], [3, "4"]]',
        "$[1][1]: '4' is not of type 'integer'",
    ),
    (
        "anyOf",
        {"anyOf": [{"type": "integer"}, {"type": "object", "required": ["n"]}]},
        '{"n": 1}',
        '"n"',
        "$: 'n' is not valid under any of the given schemas",
    ),
    (
        "$ref to $defs",
        {
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/item"}},
            "$defs": {"item": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}},
        },
        '{"item": {"qty": 3}}',
        '{"item": {"qty": 0}}',
        "$.item.qty: 0 is less than the minimum of 1",
    ),
    ("integer vs float", {"type": "integer"}, "12", "12.5", "$: 12.5 is not of type 'integer'"),
    (
        "unicode",
        {"type": "object", "properties": {"名前": {"type": "string", "maxLength": 3}}},
        '{"名前": "日本語"}',
        '{"名前": "日本語です"}',
        "$[\"名前\"]: '日本語です' is too long",
    ),
    (
        "key needing quotes",
        {"type": "object", "properties": {"a b": {"type": "boolean"}}},
        '{"a b": true}',
        '{"a b": "yes"}',
        "$[\"a b\"]: 'yes' is not of type 'boolean'",
    ),
]


@pytest.mark.parametrize(("name", "schema", "good", "bad", "reason"), _CASES, ids=[case[0] for case in _CASES])
def test_conforming_and_violating_payloads(name: str, schema: dict[str, Any], good: str, bad: str, reason: str) -> None:
    accepted = requested_schema(_format(schema))
    assert accepted is not None
    assert structured_output_violation(good, accepted) is None
    assert structured_output_violation(bad, accepted) == reason


@pytest.mark.parametrize("payload", ["12", "12.0", "-0", "1e2"])
def test_a_whole_number_is_an_integer_whatever_its_spelling(payload: str) -> None:
    assert structured_output_violation(payload, {"type": "integer"}) is None


def test_an_older_dialect_is_validated_by_its_own_rules() -> None:
    # Draft 4's exclusiveMaximum is a boolean modifier; in 2020-12 it would be an invalid schema.
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    accepted = requested_schema(_format(schema))
    assert accepted is not None
    assert structured_output_violation("4", accepted) is None
    assert structured_output_violation("5", accepted) == "$: 5 is greater than or equal to the maximum of 5"


def test_a_fenced_payload_validates_once_extracted() -> None:
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}
    text = '```json\n{"answer": 12}\n```'
    assert structured_output_violation(extract_json_payload(text), schema) is None
    assert structured_output_violation(text, schema) is not None


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("twelve", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ('{"answer": 12', "not JSON: Expecting ',' delimiter: line 1 column 14 (char 13)"),
        ('{"a": 1} trailing', "not JSON: Extra data: line 1 column 10 (char 9)"),
        ("NaN", "not JSON: JSON.parse rejects NaN"),
        ('{"x": Infinity}', "not JSON: JSON.parse rejects Infinity"),
        ("-Infinity", "not JSON: JSON.parse rejects -Infinity"),
        ("[" * 100_000 + "]" * 100_000, "not JSON: nested too deeply"),
    ],
)
def test_a_payload_that_is_not_json_is_a_violation(payload: str, reason: str) -> None:
    assert structured_output_violation(payload, {}) == reason


def test_a_payload_nested_deeper_than_validation_can_go_is_a_violation_not_a_crash() -> None:
    schema = {"$ref": "#/$defs/node", "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
    # 600 levels parse (JSON.parse rules) but take several Python frames each to validate
    assert structured_output_violation("[" * 600 + "]" * 600, schema) == "$: nested too deeply to validate"
    assert structured_output_violation("[" * 20 + "]" * 20, schema) is None


def test_the_message_of_a_reason_is_cut_to_the_limit() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    long_value = "x" * 1000
    reason = structured_output_violation(json.dumps({"a": long_value}), schema)
    assert reason is not None
    path, _, message = reason.partition(": ")
    assert path == "$.a"
    assert len(message) == MESSAGE_LIMIT
    assert message.startswith("'xxx")
    assert message.endswith("...")


@pytest.mark.parametrize(
    ("length", "cut"), [(MESSAGE_LIMIT - 1, False), (MESSAGE_LIMIT, False), (MESSAGE_LIMIT + 1, True)]
)
def test_a_message_at_the_limit_is_kept_whole(length: int, cut: bool) -> None:
    # "'<value>' is too short" is the value plus 15 characters
    value = "v" * (length - len("'' is too short"))
    reason = structured_output_violation(json.dumps(value), {"minLength": 10_000})
    assert reason is not None
    message = reason.removeprefix("$: ")
    assert len(message) == min(length, MESSAGE_LIMIT)
    assert message.endswith("...") is cut


def test_a_two_megabyte_payload_validates() -> None:
    schema = {
        "type": "object",
        "required": ["rows"],
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "label"],
                    "properties": {"id": {"type": "integer"}, "label": {"type": "string"}},
                    "additionalProperties": False,
                },
            }
        },
    }
    rows = [{"id": n, "label": f"row number {n}"} for n in range(50_000)]
    payload = json.dumps({"rows": rows})
    assert len(payload) > 2_000_000
    assert structured_output_violation(payload, schema) is None
    rows[49_999] = {"id": 49_999, "label": 7}
    assert (
        structured_output_violation(json.dumps({"rows": rows}), schema)
        == "$.rows[49999].label: 7 is not of type 'string'"
    )


# ------------------------------------------------------------------------------------ error body


def test_the_violation_body_is_a_typed_api_error() -> None:
    reason = "$.answer: 'twelve' is not of type 'integer'"
    assert violation_message(reason) == (
        "Model output does not conform to the requested JSON Schema: $.answer: 'twelve' is not of type 'integer'"
    )
    assert violation_error_body(reason) == {
        "error": {
            "message": "Model output does not conform to the requested JSON Schema: "
            "$.answer: 'twelve' is not of type 'integer'",
            "type": "api_error",
            "code": "STRUCTURED_OUTPUT_NOT_CONFORMING",
        }
    }
    assert VIOLATION_CODE == "STRUCTURED_OUTPUT_NOT_CONFORMING"


# ------------------------------------------------------------------------------------ exact refusals


def _nested_not(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(depth):
        schema = {"not": schema}
    return schema


_REFUSALS: list[tuple[str, object, str]] = [
    ("not an object", "json_schema", "response_format must be an object"),
    (
        "unknown type",
        {"type": "xml"},
        "response_format.type must be one of 'text', 'json_object', 'json_schema' (got \"xml\")",
    ),
    (
        "type is an object",
        {"type": {"name": "json_schema"}},
        "response_format.type must be one of 'text', 'json_object', 'json_schema' (got dict)",
    ),
    (
        "type is a list",
        {"type": ["json_schema"]},
        "response_format.type must be one of 'text', 'json_object', 'json_schema' (got list)",
    ),
    ("no json_schema", {"type": "json_schema"}, "response_format.json_schema must be an object"),
    (
        "no schema",
        {"type": "json_schema", "json_schema": {"name": "a"}},
        "response_format.json_schema.schema must be an object (a JSON Schema)",
    ),
    ("$schema not a string", _format({"$schema": 7}), "response_format.json_schema.schema.$schema must be a string"),
    (
        "remote $ref",
        _format({"$ref": "other.json"}),
        "response_format.json_schema.schema has a $ref that does not resolve inside the schema: other.json",
    ),
    ("nested too deeply", _format(_nested_not(3000)), "response_format.json_schema.schema is nested too deeply"),
]


@pytest.mark.parametrize(("response_format", "message"), [c[1:] for c in _REFUSALS], ids=[c[0] for c in _REFUSALS])
def test_a_refused_response_format_gives_its_exact_message(response_format: object, message: str) -> None:
    # The message is the 400 body's text, so it is pinned whole.
    with pytest.raises(ResponseFormatError) as caught:
        requested_schema(response_format)
    assert str(caught.value) == message


def test_an_older_dialect_resolves_references_by_its_own_rules() -> None:
    # In draft-07 an "$id" of "#name" is a plain-name anchor; 2020-12 has no such anchor.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"count": {"$id": "#count", "type": "integer"}},
        "properties": {"n": {"$ref": "#count"}},
    }
    accepted = requested_schema(_format(schema))
    assert accepted is schema
    assert structured_output_violation('{"n": 3}', accepted) is None
    assert structured_output_violation('{"n": "x"}', accepted) == "$.n: 'x' is not of type 'integer'"


def test_validation_never_fetches_a_remote_reference(fresh: ImageServer) -> None:
    # A schema that skipped requested_schema: its remote $ref is unresolvable, not retrieved.
    url = fresh.url("/schema.json")
    reason = structured_output_violation("1", {"$ref": url})
    assert reason == f"$: schema reference does not resolve: Unresolvable: {url}"
    assert fresh.requests == []

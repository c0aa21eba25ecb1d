"""The operations' schemas as a target is held to them: the capabilities a target may declare for an
operation (``observes``, a subset of its optional result fields, beside the operation's own facts),
the result schema for what it observes (an observed optional field is required, an unobserved one
is not allowed, wherever it sits in the schema), the method implementing an operation in process,
and the lookup of an operation by name."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from conformance.operations import OPERATIONS, Operation, _object, capability_schema, operation, result_schema

CLOSED_EMPTY = {"type": "object", "additionalProperties": False, "properties": {}, "required": []}


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("ls.decode_request", "ls_decode_request"),
        ("engine.parse_generator_metadata", "engine_parse_generator_metadata"),
        ("store.put", "store_put"),
    ],
)
def test_an_operation_is_implemented_in_process_by_its_name_with_underscores(name: str, method: str) -> None:
    assert operation(name).method_name == method


def test_an_unknown_operation_is_named_with_every_operation_the_protocol_has() -> None:
    with pytest.raises(KeyError) as raised:
        operation("ls.decode")
    assert raised.value.args == (f"unknown operation 'ls.decode'; the protocol has: {', '.join(sorted(OPERATIONS))}",)
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__


def test_an_operation_without_optional_fields_or_facts_takes_no_capability() -> None:
    schema = capability_schema(operation("ls.stop"))
    assert schema == {"type": "object", "additionalProperties": False, "properties": {}}
    assert _valid(schema, {})
    assert not _valid(schema, {"observes": []})


def test_observes_names_a_subset_of_the_optional_result_fields() -> None:
    schema = capability_schema(operation("engine.build_send_request"))
    assert schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"observes": {"type": "array", "items": {"enum": ["attached", "drops"]}, "uniqueItems": True}},
    }
    assert _valid(schema, {"observes": ["drops"]})
    assert not _valid(schema, {"observes": ["drops", "drops"]})
    assert not _valid(schema, {"observes": ["request_b64"]})


def test_an_operations_own_facts_are_capabilities_beside_observes() -> None:
    op = Operation("x.y", "toy", params={}, result={}, optional=("a",), capabilities={"limit": {"type": "integer"}})
    assert capability_schema(op)["properties"] == {
        "limit": {"type": "integer"},
        "observes": {"type": "array", "items": {"enum": ["a"]}, "uniqueItems": True},
    }
    assert op.capabilities == {"limit": {"type": "integer"}}, "the operation itself is left as it was"
    store = capability_schema(operation("store.open"))
    assert list(store["properties"]) == ["fixed_limits", "shapes"]
    assert _valid(store, {"fixed_limits": {"max_messages": 12, "max_entry_bytes": 65536}, "shapes": ["responses"]})
    assert not _valid(store, {"shapes": []})


@pytest.mark.parametrize(
    ("observes", "properties", "required"),
    [
        (frozenset(), ["request_b64"], ["request_b64"]),
        (frozenset({"drops"}), ["request_b64", "drops"], ["request_b64", "drops"]),
        (frozenset({"attached", "drops"}), ["request_b64", "attached", "drops"], ["request_b64", "attached", "drops"]),
    ],
)
def test_an_observed_optional_field_is_required_and_an_unobserved_one_is_not_allowed(
    observes: frozenset[str], properties: list[str], required: list[str]
) -> None:
    op = operation("engine.build_send_request")
    schema = result_schema(op, observes)
    assert list(schema["properties"]) == properties
    assert schema["required"] == required
    assert schema["additionalProperties"] is False
    drops = dict.fromkeys(("cap", "bytes", "truncated", "no_vision", "unextractable"), 0)
    full = {"request_b64": "", "attached": 0, "drops": drops}
    assert _valid(schema, {k: v for k, v in full.items() if k in properties})
    assert _valid(schema, full) == (observes == {"attached", "drops"})
    assert op.result["required"] == ["request_b64", "attached", "drops"], "the operation's own schema is unchanged"


def test_optional_fields_are_restricted_inside_arrays_and_alternatives() -> None:
    turns = result_schema(operation("engine.play_turns"), frozenset({"text"}))
    turn = turns["properties"]["turns"]["items"]
    assert turn["properties"] == {"text": {"type": "string"}}
    assert turn["required"] == ["text"]
    assert turns["required"] == ["turns"]
    put = result_schema(operation("store.put"), frozenset())
    assert put["oneOf"][0]["required"] == ["id", "appended"]
    assert list(put["oneOf"][0]["properties"]) == ["id", "appended"]
    assert put["oneOf"][1] == operation("store.put").result["oneOf"][1]
    assert not _valid(put, {"id": "r1", "appended": [], "warnings": []})
    assert _valid(
        result_schema(operation("store.put"), frozenset({"warnings"})), {"id": "r1", "appended": [], "warnings": []}
    )


@pytest.mark.parametrize("name", ["ls.decode_request", "store.get", "gateway.ledger", "session.commit"])
def test_an_operation_without_optional_fields_keeps_its_result_schema(name: str) -> None:
    op = operation(name)
    assert result_schema(op, frozenset()) == op.result
    assert result_schema(op, frozenset({"text"})) == op.result


def test_an_optional_field_is_dropped_from_a_schema_that_has_no_required_list() -> None:
    op = Operation(
        "x.y", "toy", params={}, result={"type": "object", "properties": {"a": {}, "b": {}}}, optional=("b",)
    )
    assert result_schema(op, frozenset()) == {"type": "object", "properties": {"a": {}}, "required": []}
    assert result_schema(op, frozenset({"b"})) == {"type": "object", "properties": {"a": {}, "b": {}}, "required": []}


def test_a_schema_without_optional_fields_is_kept_exactly_even_without_a_required_list() -> None:
    op = Operation("x.y", "toy", params={}, result={"type": "object", "properties": {"a": {}}})
    assert result_schema(op, frozenset()) == {"type": "object", "properties": {"a": {}}}


def test_a_schemas_required_list_defaults_to_every_property_unless_given() -> None:
    assert _object({"a": {"type": "string"}, "b": {}}) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "string"}, "b": {}},
        "required": ["a", "b"],
    }
    assert _object({"a": {}, "b": {}}, required=["b"])["required"] == ["b"]
    assert _object({"a": {}}, required=[])["required"] == [], "an empty list is a list given: nothing required"
    assert operation("ls.stop").params == CLOSED_EMPTY
    assert operation("store.delete").params["required"] == ["id", "caller"]
    item = operation("session.commit").params["properties"]["items"]["items"]["oneOf"][2]
    assert item["required"] == ["type", "call_id", "summary"]
    assert list(item["properties"]) == ["type", "call_id", "summary", "content", "is_error", "attachments"]

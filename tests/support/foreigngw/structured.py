"""Structured output: the JSON schema a request asks for, and whether an answer conforms to it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from tests.support.foreigngw.http_io import GatewayError, bad_request

CODE = "STRUCTURED_OUTPUT_NOT_CONFORMING"


def _checked(schema: Any, param: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise bad_request(f"{param} must be a JSON schema object", param=param)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise bad_request(f"{param} is not a valid JSON schema: {exc.message}", param=param) from exc
    return schema


def chat_schema(response_format: Any) -> dict[str, Any] | None:
    """Chat ``response_format``: ``{"type": "json_schema", "json_schema": {"schema": ...}}``."""
    if not isinstance(response_format, Mapping) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    return _checked(schema, "response_format.json_schema.schema")


def responses_schema(text: Any) -> dict[str, Any] | None:
    """Responses ``text.format``: ``{"type": "json_schema", "schema": ...}``."""
    spec = text.get("format") if isinstance(text, Mapping) else None
    if not isinstance(spec, Mapping) or spec.get("type") != "json_schema":
        return None
    return _checked(spec.get("schema"), "text.format.schema")


def violation(answer: str, schema: Mapping[str, Any]) -> str | None:
    """Why ``answer`` does not conform to ``schema``, None when it does."""
    try:
        document = json.loads(answer)
    except ValueError as exc:
        return f"the answer is not JSON ({exc})"
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "<root>"
    return f"at {where}: {error.message}"


def not_conforming(reason: str) -> GatewayError:
    message = f"The model's answer does not conform to the requested JSON schema: {reason}"
    return GatewayError(502, message, "invalid_response", CODE)

"""Structured output: the JSON Schema of a ``response_format`` and the check of an answer against it (seed 001, D2).

engine.md section 5.B: every arm that answers a ``json_schema`` request validates the payload the client
would receive. A violation ends the turn with one ``STRUCTURED_OUTPUT_NOT_CONFORMING`` error (a stream
error frame with no ``[DONE]``, or a 502 with the same body); the turn is neither cached nor committed.

* :func:`requested_schema` reads the schema of a request, refusing a malformed ``response_format`` with
  :class:`ResponseFormatError` (the HTTP layer answers 400).
* :func:`extract_json_payload` is the text that is validated: trimmed, one surrounding code fence removed.
* :func:`structured_output_violation` is ``None`` for a conforming payload, else a short reason.
* :func:`violation_error_body` is the error body, with :func:`violation_message` as its message.

Validation is ``jsonschema`` (Q5.1 resolved with the full library rather than the mirror's subset), with
the dialect of the schema's ``$schema`` (Draft 2020-12 when absent). Only references inside the
schema resolve: a remote ``$ref`` is refused up front and never fetched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

import referencing
import referencing.jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from engine.js import js_json_parse, js_quote, js_trim

VIOLATION_CODE: Final = "STRUCTURED_OUTPUT_NOT_CONFORMING"
VIOLATION_PREFIX: Final = "Model output does not conform to the requested JSON Schema: "

#: Longest error message kept in a reason (jsonschema messages quote the offending instance).
MESSAGE_LIMIT: Final = 200

_FENCE: Final = "```"
_FENCE_TAG: Final = "json"
# No retrieval function: a $ref outside the schema (and the dialects' meta-schemas) is unresolvable.
# jsonschema's default registry would fetch it over the network.
_NO_RETRIEVAL: Final = referencing.Registry()


class ResponseFormatError(ValueError):
    """A ``response_format`` the engine cannot honour: the request is malformed (HTTP 400)."""


def requested_schema(response_format: object) -> Mapping[str, Any] | None:
    """The JSON Schema a request asks its answer to conform to, or ``None`` when it asks for none.

    ``None`` for an absent ``response_format`` and for types ``text`` and ``json_object``. A
    ``json_schema`` format must carry ``json_schema.schema``, an object that is a valid schema of its
    dialect whose every ``$ref`` resolves inside it; anything else raises :class:`ResponseFormatError`.
    """
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise ResponseFormatError("response_format must be an object")
    kind = response_format.get("type")
    if kind in ("text", "json_object"):
        return None
    if kind != "json_schema":
        raise ResponseFormatError(
            f"response_format.type must be one of 'text', 'json_object', 'json_schema' (got {_describe(kind)})"
        )
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping):
        raise ResponseFormatError("response_format.json_schema must be an object")
    schema = spec.get("schema")
    if not isinstance(schema, Mapping):
        raise ResponseFormatError("response_format.json_schema.schema must be an object (a JSON Schema)")
    validator_class = _validator_class(schema)
    try:
        validator_class.check_schema(dict(schema))
        _check_references(schema)
    except SchemaError as exc:
        raise ResponseFormatError(
            f"response_format.json_schema.schema is not a valid JSON Schema: {_path(exc.absolute_path)}: "
            f"{_shorten(exc.message)}"
        ) from None
    except Unresolvable as exc:
        raise ResponseFormatError(
            "response_format.json_schema.schema has a $ref that does not resolve inside the schema: "
            + _shorten(str(exc))
        ) from None
    except RecursionError:
        raise ResponseFormatError("response_format.json_schema.schema is nested too deeply") from None
    return schema


def extract_json_payload(text: str) -> str:
    """The text that is validated: ``text`` trimmed, and without one code fence around all of it.

    The fence is ```` ```json ```` (any case) or a bare ```` ``` ````; the payload inside is trimmed
    again. Nothing else is changed: no preamble strip, no re-keying.
    """
    payload = js_trim(text)
    if len(payload) >= 2 * len(_FENCE) and payload.startswith(_FENCE) and payload.endswith(_FENCE):
        inner = payload[len(_FENCE) : -len(_FENCE)]
        # JSON never starts with these letters, so the info string can be dropped without a line break.
        if inner[: len(_FENCE_TAG)].lower() == _FENCE_TAG:
            inner = inner[len(_FENCE_TAG) :]
        return js_trim(inner)
    return payload


def structured_output_violation(payload: str, schema: Mapping[str, Any]) -> str | None:
    """``None`` when ``payload`` is JSON (``JSON.parse`` rules) valid against ``schema``, else a short reason.

    Reasons: ``not JSON: <parser message>``, or the most relevant validation error as
    ``$.path.to[0]: <message>`` with the message cut to :data:`MESSAGE_LIMIT` characters. ``schema`` is
    one :func:`requested_schema` accepted.
    """
    try:
        instance = js_json_parse(payload)
    except RecursionError:
        return "not JSON: nested too deeply"
    except ValueError as exc:
        return f"not JSON: {exc}"
    validator = _validator_class(schema)(schema, registry=_NO_RETRIEVAL)
    try:
        error = best_match(validator.iter_errors(cast(Any, instance)))
    except RecursionError:
        return "$: nested too deeply to validate"
    except Unresolvable as exc:
        return f"$: schema reference does not resolve: {_shorten(str(exc))}"
    if error is None:
        return None
    return _reason(error)


def violation_message(reason: str) -> str:
    return VIOLATION_PREFIX + reason


def violation_error_body(reason: str) -> dict[str, Any]:
    """The error of a violating turn: the stream's single error frame and the non-stream 502 body (Q5.3)."""
    return {"error": {"message": violation_message(reason), "type": "api_error", "code": VIOLATION_CODE}}


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    dialect = schema.get("$schema")
    if dialect is None:
        return Draft202012Validator
    if not isinstance(dialect, str):
        raise ResponseFormatError("response_format.json_schema.schema.$schema must be a string")
    found: type[Validator] | None = validator_for(schema, default=None)  # type: ignore[arg-type]
    if found is None:
        raise ResponseFormatError(f"response_format.json_schema.schema.$schema is not a known dialect: {dialect!r}")
    return found


def _check_references(schema: Mapping[str, Any]) -> None:
    """Resolve every ``$ref`` of ``schema`` where validation would, raising ``Unresolvable`` on the first miss.

    Stricter than validation by one case: a ``$ref`` to a dialect's meta-schema is refused here.
    """
    dialect = schema.get("$schema")
    specification = referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "", default=referencing.jsonschema.DRAFT202012
    )
    root = specification.create_resource(schema)
    pending = [(_NO_RETRIEVAL.resolver_with_root(root), root)]
    while pending:  # a loop, not recursion: the nesting depth is the client's
        resolver, resource = pending.pop()
        ref = resource.contents.get("$ref") if isinstance(resource.contents, Mapping) else None
        if isinstance(ref, str):
            resolver.lookup(ref)
        pending.extend((resolver.in_subresource(sub), sub) for sub in resource.subresources())


def _reason(error: ValidationError) -> str:
    return f"{_path(error.absolute_path)}: {_shorten(error.message)}"


def _path(parts: Iterable[str | int]) -> str:
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier() and part.isascii():
            out.append(f".{part}")
        else:
            out.append(f"[{js_quote(part)}]")
    return "".join(out)


def _shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(value: object) -> str:
    return json.dumps(value) if isinstance(value, str | int | float | bool) or value is None else type(value).__name__

"""Turn request bytes into a field-named dict without losing anything.

``google.protobuf.json_format`` drops unknown fields; a conformance kit must report them
(protocol drift, mistyped fields such as the planner's field 11). This module walks the parsed
message, converts known fields to plain JSON values and lists every unknown field with the path
of field names that leads to it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

JsonValue = Any

_WIRE_TYPE_NAMES = {0: "varint", 1: "fixed64", 2: "len", 3: "start-group", 4: "end-group", 5: "fixed32"}


@dataclass(frozen=True)
class UnknownField:
    """A field the schema does not declare (or declares with another wire type)."""

    path: str
    number: int
    wire_type: int
    value: JsonValue

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "path": self.path,
            "number": self.number,
            "wire_type": _WIRE_TYPE_NAMES.get(self.wire_type, str(self.wire_type)),
            "value": self.value,
        }


@dataclass(frozen=True)
class Decoded:
    message: Message
    fields: dict[str, JsonValue]
    unknown: tuple[UnknownField, ...]


class RequestDecodeError(ValueError):
    """The bytes are not a valid encoding of the expected message."""


def decode(message_type: type[Message], raw: bytes) -> Decoded:
    message = message_type()
    try:
        message.ParseFromString(raw)
    except DecodeError as exc:
        raise RequestDecodeError(
            f"proto: cannot parse invalid wire-format data for {message.DESCRIPTOR.full_name} ({len(raw)} bytes): {exc}"
        ) from exc
    unknown: list[UnknownField] = []
    fields = message_to_dict(message, path="", unknown=unknown)
    return Decoded(message=message, fields=fields, unknown=tuple(unknown))


def message_to_dict(
    message: Message, *, path: str = "", unknown: list[UnknownField] | None = None
) -> dict[str, JsonValue]:
    """Known fields by name (enums by name when known, bytes as base64, 64-bit ints as ints)."""
    out: dict[str, JsonValue] = {}
    for field, value in message.ListFields():
        field_path = f"{path}.{field.name}" if path else field.name
        if field.is_repeated:
            out[field.name] = [
                _value_to_json(field, item, f"{field_path}[{i}]", unknown) for i, item in enumerate(value)
            ]
        else:
            out[field.name] = _value_to_json(field, value, field_path, unknown)
    if unknown is not None:
        unknown_set = UnknownFieldSet(message)
        for index in range(len(unknown_set)):
            item = unknown_set[index]
            unknown.append(
                UnknownField(
                    path=path or "<root>",
                    number=item.field_number,
                    wire_type=item.wire_type,
                    value=_unknown_value(item.wire_type, item.data),
                )
            )
    return out


def _value_to_json(field: FieldDescriptor, value: Any, path: str, unknown: list[UnknownField] | None) -> JsonValue:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return message_to_dict(value, path=path, unknown=unknown)
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return value


def _unknown_value(wire_type: int, data: Any) -> JsonValue:
    if isinstance(data, bytes | bytearray):
        return {"hex": bytes(data).hex()}
    if isinstance(data, int):
        return data
    # A group: an UnknownFieldSet of its own.
    return [
        {"number": f.field_number, "wire_type": f.wire_type, "value": _unknown_value(f.wire_type, f.data)} for f in data
    ]

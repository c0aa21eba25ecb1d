"""A tiny, independent protobuf writer for hand-assembling request and response bytes.

It knows nothing about our ``.proto`` files or the generated classes: a message is a list of
``(field number, value)`` pairs written in the order given, exactly as a hand-rolled client
(WindsurfAPI's ``proto.js``) emits them. Repeated fields are simply repeated pairs.

Values map to wire types as follows:

* ``int`` / ``bool``: varint (wire type 0); negative ints as 10-byte two's complement, like int32/int64;
* ``str``: UTF-8, length-delimited (wire type 2); ``bytes``: raw, length-delimited;
* a list or tuple of pairs: a nested message, length-delimited;
* ``float``: IEEE-754 single, fixed32 (wire type 5); :class:`Fixed32` / :class:`Fixed64` for raw bits.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

VARINT = 0
FIXED64 = 1
LEN = 2
FIXED32 = 5


@dataclass(frozen=True)
class Fixed32:
    """Raw 32 bits written as wire type 5."""

    bits: int


@dataclass(frozen=True)
class Fixed64:
    """Raw 64 bits written as wire type 1."""

    bits: int


Value: TypeAlias = "int | str | bytes | float | Fixed32 | Fixed64 | Fields"
Fields: TypeAlias = "Sequence[tuple[int, Value]]"


def varint(n: int) -> bytes:
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


def field(number: int, value: Value) -> bytes:
    """One encoded field: key then payload."""
    if isinstance(value, bool | int):
        return key(number, VARINT) + varint(int(value))
    if isinstance(value, float):
        return key(number, FIXED32) + struct.pack("<f", value)
    if isinstance(value, Fixed32):
        return key(number, FIXED32) + struct.pack("<I", value.bits)
    if isinstance(value, Fixed64):
        return key(number, FIXED64) + struct.pack("<Q", value.bits)
    payload = value.encode("utf-8") if isinstance(value, str) else value if isinstance(value, bytes) else message(value)
    return key(number, LEN) + varint(len(payload)) + payload


def message(fields: Fields) -> bytes:
    """A message from ``(number, value)`` pairs, in the order given."""
    return b"".join(field(number, value) for number, value in fields)

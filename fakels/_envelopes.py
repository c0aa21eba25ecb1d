"""Length-prefixed messages as gRPC and Connect frame them: a flag byte, a 4-byte big-endian length, then
the payload. Connect calls them envelopes, gRPC frames; the layout is the same."""

from __future__ import annotations

from collections.abc import Iterator

HEADER_BYTES = 5


class FramingError(ValueError):
    """A body is not a sequence of well-formed length-prefixed messages; the message says where and why."""


def envelope(flags: int, payload: bytes) -> bytes:
    return bytes([flags]) + len(payload).to_bytes(4, "big") + payload


def split_envelopes(body: bytes, noun: str) -> Iterator[tuple[int, int, bytes]]:
    """Each message of ``body`` as (its offset, its flags, its payload); :class:`FramingError` (naming the
    message ``noun``) when a header or a payload is cut short. The flags are the caller's to judge."""
    offset = 0
    while offset < len(body):
        left = len(body) - offset
        if left < HEADER_BYTES:
            article = "an" if noun[0] in "aeiou" else "a"
            raise FramingError(
                f"truncated {noun} at byte {offset}: {left} bytes left, {article} {noun} header has {HEADER_BYTES}"
            )
        length = int.from_bytes(body[offset + 1 : offset + HEADER_BYTES], "big")
        start, end = offset + HEADER_BYTES, offset + HEADER_BYTES + length
        if end > len(body):
            raise FramingError(
                f"{noun} at byte {offset} declares {length} payload bytes but only {len(body) - start} follow"
            )
        yield offset, body[offset], body[start:end]
        offset = end

"""Server-sent events as the kit reads them from a gateway's stream: lines split as the SSE format
says, and the data of each event."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator


def sse_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of an event stream: split at CRLF, LF or CR only, as the SSE format says. (A
    ``splitlines`` would also split at U+0085, U+2028 and the like, which JSON data may carry raw.)
    Linear in the stream: a long line arriving in many chunks is scanned once."""
    parts: list[str] = []  # the current line's text so far
    held_cr = False  # the last chunk ended with a CR: a LF opening the next one belongs to it
    for chunk in chunks:
        if not chunk:
            continue
        at = 0
        if held_cr and chunk.startswith("\n"):
            at = 1
        held_cr = False
        for found in _BREAK.finditer(chunk, at):
            parts.append(chunk[at : found.start()])
            yield "".join(parts)
            parts = []
            at = found.end()
            held_cr = found.group() == "\r" and at == len(chunk)
        parts.append(chunk[at:])
    if "".join(parts):
        yield "".join(parts)


_BREAK = re.compile(r"\r\n|\r|\n")


def sse_events(lines: Iterable[str]) -> Iterator[str]:
    """The data of each server-sent event, in order: its ``data:`` lines joined with newlines
    (one leading space dropped), dispatched at a blank line; comments (``: ping``) and the other
    fields are left out, and an event the stream ends in the middle of is not dispatched."""
    data: list[str] | None = None
    for line in lines:
        if not line:
            if data is not None:
                yield "\n".join(data)
            data = None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if name != "data":
            continue
        if colon and value.startswith(" "):
            value = value[1:]
        data = [*(data or []), value]

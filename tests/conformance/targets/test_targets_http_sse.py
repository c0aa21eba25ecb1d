"""The HTTP target reads an event stream as the SSE format says: lines end at CRLF, LF or CR only.

JSON data may carry U+0085, U+2028 or U+2029 raw (``ensure_ascii=False``); a reader that splits
lines the way ``str.splitlines`` does cuts such an event in two and misjudges a correct stream
(seen on the reference: SO-3 failed with a thinking chunk of ``"\\x85"``)."""

from __future__ import annotations

import json

import pytest

from conformance.targets._sse import sse_events, sse_lines

FRAME = json.dumps({"delta": {"reasoning_content": "a\x85b\u2028c\u2029d\x0be\x1cf"}}, ensure_ascii=False)


@pytest.mark.parametrize(
    "chunks",
    [
        [f"data: {FRAME}\n\ndata: [DONE]\n\n"],
        [f"data: {FRAME}\r\n\r\ndata: [DONE]\r\n\r\n"],
        [f"data: {FRAME}\r\rdata: [DONE]\r\r"],
        # Split anywhere, a CRLF across two chunks included.
        [f"data: {FRAME[:9]}", f"{FRAME[9:]}\r", "\n\r", "\ndata: [DO", "NE]\r\n", "\r\n"],
        [char for char in f": ping\n\ndata: {FRAME}\n\ndata: [DONE]\n\n"],
    ],
)
def test_events_whose_data_carries_unicode_line_separators_are_read_whole(chunks: list[str]) -> None:
    assert list(sse_events(sse_lines(chunks))) == [FRAME, "[DONE]"]


def test_lines_end_at_crlf_lf_or_cr_only() -> None:
    assert list(sse_lines(["a\x85b\r", "\nc\rd\n\ne"])) == ["a\x85b", "c", "d", "", "e"]
    assert list(sse_lines(["x\r", "y"])) == ["x", "y"]  # a CR at a chunk's end, no LF after it
    assert list(sse_lines(["x\r", "", "\ny"])) == ["x", "y"]  # an empty chunk between: still one CRLF
    assert list(sse_lines([])) == []
    assert list(sse_lines(["tail"])) == ["tail"]


def test_a_long_line_in_many_chunks_is_read_in_one_pass() -> None:
    pieces = ["data: "] + ["x" * 1000] * 2000 + ["\n\n"]
    [event] = list(sse_events(sse_lines(pieces)))
    assert len(event) == 2_000_000

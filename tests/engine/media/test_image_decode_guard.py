"""The decode guard's verdicts and the decode slots' contract: what ``decode_image`` says when bytes do
not decode (the parser's own reason), which refusals are decompression bombs, and how ``DecodeSlots``
validates its limit, reports its state and gives up waiting."""

from __future__ import annotations

import re
import threading

import pytest

from engine.media.decode import (
    Bomb,
    DecodeSlots,
    DecodeSlotsState,
    Undecodable,
    decode_image,
    reason_of,
)
from engine.media.gate import ImageData, ShrinkOutcome, shrink_image
from tests.engine.media.image_headers_support import gif_first_frame_resized
from tests.support.imagegen import b64, solid

BUDGET = 40 * 1024 * 1024

# --- reasons ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "reason"),
    [(ValueError("bad header"), "bad header"), (EOFError(), "EOFError"), (OSError(""), "OSError")],
)
def test_a_reason_is_the_exception_message_or_else_its_type(exc: BaseException, reason: str) -> None:
    assert reason_of(exc) == reason


@pytest.mark.parametrize(
    ("raw", "fmt", "reason"),
    [
        (b"GIF89a-but-declared-png", "png", "undecodable: not a PNG file"),  # the parser refuses
        (b"", "jpeg", "undecodable: not a JPEG file"),
        (solid(100, 100)[:60], "png", "undecodable: image file is truncated"),  # the parse passes, the load fails
        (solid(20, 20, "GIF")[:40], "gif", "undecodable: image file is truncated (4 bytes not processed)"),
    ],
    ids=["not-png", "empty-jpeg", "truncated-png", "truncated-gif"],
)
def test_bytes_that_do_not_decode_are_undecodable_with_the_parsers_reason(raw: bytes, fmt: str, reason: str) -> None:
    with pytest.raises(Undecodable) as caught:
        decode_image(raw, fmt, BUDGET)
    assert str(caught.value) == reason
    assert not isinstance(caught.value, Bomb)


def test_a_gif_frame_past_its_canvas_and_pillows_own_limit_is_a_decompression_bomb() -> None:
    # A 10x10 canvas whose first frame claims 65535x65535: Pillow grows the canvas to the frame while
    # parsing and refuses 4 294 836 225 pixels itself, before the engine's budget can look.
    raw = gif_first_frame_resized(65535, 65535)
    with pytest.raises(Bomb) as caught:
        decode_image(raw, "gif", BUDGET)
    assert str(caught.value).startswith("decompression bomb: Image size (4294836225 pixels) exceeds limit of ")

    result = shrink_image(ImageData(b64(raw), "image/gif"))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason == str(caught.value)
    assert (result.width, result.height) == (10, 10)  # the header's logical screen


# --- decode slots -----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, -1, True, False, 2.0, "2", None])
def test_the_decode_slot_limit_must_be_a_positive_int(limit: object) -> None:
    message = f"the concurrent decode limit must be a positive int, got {limit!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DecodeSlots(limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [1, 2, 7])
def test_fresh_decode_slots_report_their_limit_and_nothing_running(limit: int) -> None:
    slots = DecodeSlots(limit)
    assert slots.limit == limit
    assert slots.state() == DecodeSlotsState(limit=limit, active=0, waiting=0, peak=0)


def test_waiting_for_a_slot_state_returns_it_or_gives_up_after_the_timeout() -> None:
    slots = DecodeSlots(2)
    with slots.hold():
        assert slots.wait_until(lambda s: s.active == 1, timeout=5) == DecodeSlotsState(2, 1, 0, 1)
    outcome: list[DecodeSlotsState | None] = []
    waiter = threading.Thread(target=lambda: outcome.append(slots.wait_until(lambda s: s.active > 0, 0.05)))
    waiter.daemon = True  # a waiter that never gives up must not hold the test process
    waiter.start()
    waiter.join(5)
    assert not waiter.is_alive(), "wait_until ignored its timeout"
    assert outcome == [None]
    assert slots.state() == DecodeSlotsState(2, 0, 0, 1)

"""The kit's check that views never show image bytes (conformance/models/att.py ``base64_leaks``,
ATT-7): pieces of ``span`` characters of an attachment's base64 or of its raw bytes (read as latin-1),
taken every ``span // 2`` characters, are looked for in a view's text; the first piece found of each
source is reported."""

from __future__ import annotations

import pytest

from conformance.models.att import base64_leaks
from tests.conformance.models.model_att_support import JPEG, PNG, b64, image, result, user

SHOT = b"\x00\x01binary\xffpixels-of-a-screenshot!!!!"  # 35 bytes: 48 base64 characters
ENCODED = b64(SHOT)
RAW = SHOT.decode("latin-1")
HISTORY = [
    user("look"),
    result("c1", "Viewed", None, PNG),
    result("c2", "Looked", "both", JPEG, image("image/png", SHOT)),
]


def test_a_view_that_only_counts_images_leaks_nothing() -> None:
    view = "c1: Viewed [1 image]\nc2: Looked [2 images]\n"
    assert base64_leaks(view, HISTORY) == []
    assert (
        base64_leaks(
            view + ENCODED, [user("look"), result("c3", "Read", "text"), {**result("c4", "x"), "attachments": None}]
        )
        == []
    )


@pytest.mark.parametrize(
    ("piece", "leak"),
    [
        pytest.param(ENCODED, "base64 of c2 at 0", id="the-whole-base64-once"),
        pytest.param(ENCODED[6:18], "base64 of c2 at 6", id="one-window"),
        pytest.param(ENCODED[1:18], "base64 of c2 at 6", id="17-characters-from-1"),
        pytest.param(ENCODED[5:22], "base64 of c2 at 6", id="17-characters-from-5"),
        pytest.param(ENCODED[7:24], "base64 of c2 at 12", id="17-characters-from-7"),
        pytest.param(ENCODED[36:], "base64 of c2 at 36", id="the-last-window"),
        pytest.param(RAW, "raw bytes of c2 at 0", id="the-whole-raw-bytes-once"),
        pytest.param(RAW[12:24], "raw bytes of c2 at 12", id="a-raw-window"),
        pytest.param(RAW[18:], "raw bytes of c2 at 18", id="the-raw-tail"),
    ],
)
def test_a_piece_of_an_image_in_a_view_is_a_leak(piece: str, leak: str) -> None:
    assert base64_leaks(f"c2: Looked ({piece}) end", HISTORY) == [leak]


@pytest.mark.parametrize(
    "piece",
    [
        pytest.param(ENCODED[:11], id="11-base64-characters"),
        pytest.param(ENCODED[3:15], id="12-characters-across-two-windows"),
        pytest.param(RAW[24:], id="the-last-11-raw-characters"),
    ],
)
def test_fewer_characters_than_a_window_in_common_are_no_leak(piece: str) -> None:
    assert base64_leaks(f"c2: Looked ({piece}) end", HISTORY) == []


def test_every_leaking_source_of_every_attachment_is_reported_in_order() -> None:
    view = f"{RAW} and {b64(b'JFIF-' + bytes(range(200, 220)))}"
    history = [result("c1", "a", None, image("image/jpeg", b"JFIF-" + bytes(range(200, 220)))), *HISTORY[1:]]
    assert base64_leaks(view + ENCODED, history) == ["base64 of c1 at 0", "base64 of c2 at 0", "raw bytes of c2 at 0"]


@pytest.mark.parametrize(
    ("raw", "view", "leaks"),
    [
        pytest.param(b"nine-byte", b64(b"nine-byte"), ["base64 of c1 at 0"], id="12-base64-characters-are-checked"),
        pytest.param(b"nine-byte", "nine-byte", [], id="9-raw-characters-are-too-short"),
        pytest.param(b"twelve-bytes", "twelve-bytes", ["raw bytes of c1 at 0"], id="12-raw-characters-are-checked"),
        pytest.param(b"eleven-byte", "eleven-byte", [], id="11-raw-characters-are-too-short"),
    ],
)
def test_a_source_shorter_than_the_span_is_not_looked_for(raw: bytes, view: str, leaks: list[str]) -> None:
    assert base64_leaks(view, [result("c1", "Viewed", None, image("image/png", raw))]) == leaks


def test_a_smaller_span_finds_smaller_pieces_at_every_offset() -> None:
    assert base64_leaks(f"[{ENCODED[1:4]}]", HISTORY, span=3) == ["base64 of c2 at 1"]
    assert base64_leaks(f"[{ENCODED[2:6]}]", HISTORY, span=4) == ["base64 of c2 at 2"]
    assert base64_leaks(f"[{ENCODED[3:7]}]", HISTORY, span=4) == []

"""Format sniffing and the PNG, GIF and WebP header readers (``detectImageFormat`` and
``readImageDimensions`` of image.js): magic bytes at their exact lengths, every size field at its
offset, byte order and width, the zero-size refusals and the shortest header each reader accepts."""

from __future__ import annotations

import pytest
from PIL import Image

from engine.media.gate import ImageData, ShrinkOutcome, read_dimensions, shrink_image, sniff_base64, sniff_format
from tests.engine.media.image_headers_support import (
    PNG_SIGNATURE,
    gif_header,
    png_chunk,
    png_header,
    riff_webp,
    webp_vp8,
    webp_vp8l,
    webp_vp8x,
)
from tests.support.imagegen import FORMATS, b64, encode, solid

# --- sniffing ---------------------------------------------------------------------------------------

MAGIC_BYTES = {"png": 8, "jpeg": 4, "gif": 6, "webp": 12}
"""How many leading bytes identify each format: the PNG signature, FF D8 FF plus the 4-byte minimum,
GIF87a/GIF89a, and RIFF....WEBP."""


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_format_is_recognised_from_exactly_its_magic_bytes(fmt: str) -> None:
    raw = solid(5, 3, FORMATS[fmt])
    n = MAGIC_BYTES[fmt]
    assert sniff_format(raw[:n]) == fmt
    assert sniff_format(raw[: n - 1]) is None


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_base64_payload_is_sniffed_from_whole_four_character_groups(fmt: str) -> None:
    # 4 characters carry 3 bytes: the PNG signature (8 bytes) needs 12 characters, a JPEG or GIF
    # (4 and 6 bytes) 8, RIFF....WEBP (12 bytes) 16; a partial group at the end is not read.
    need = {"png": 12, "jpeg": 8, "gif": 8, "webp": 16}[fmt]
    data = b64(solid(5, 3, FORMATS[fmt]))
    sniffed = {k: sniff_base64(data[:k]) for k in range(21)}
    assert sniffed == {k: fmt if k >= need else None for k in range(21)}


# --- PNG --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (1, 1, (1, 1)),
        (300, 77, (300, 77)),
        (2**31, 1, (2**31, 1)),  # unsigned: the top bit is size, not sign
        (2**32 - 1, 3, (2**32 - 1, 3)),
        (0, 5, None),
        (5, 0, None),
        (0, 0, None),
    ],
)
def test_a_png_size_is_the_ihdr_width_and_height(width: int, height: int, expected: tuple[int, int] | None) -> None:
    assert read_dimensions(b64(png_header(width, height))) == expected


def test_a_png_size_needs_the_first_24_bytes() -> None:
    raw = solid(300, 77)
    assert read_dimensions(b64(raw[:24])) == (300, 77)
    assert read_dimensions(b64(raw[:23])) is None


def test_a_png_whose_first_chunk_is_not_ihdr_has_no_header_size() -> None:
    raw = PNG_SIGNATURE + png_chunk(b"tEXt", b"Comment\0" + b"x" * 24) + png_header(300, 77)[8:]
    assert read_dimensions(b64(raw)) is None


# --- GIF --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (1, 1, (1, 1)),
        (300, 77, (300, 77)),
        (65535, 40000, (65535, 40000)),  # unsigned 16-bit fields
        (0, 5, None),
        (5, 0, None),
    ],
)
def test_a_gif_size_is_the_logical_screen_width_and_height(
    width: int, height: int, expected: tuple[int, int] | None
) -> None:
    assert read_dimensions(b64(gif_header(width, height))) == expected


def test_a_gif_size_needs_the_first_10_bytes() -> None:
    raw = solid(300, 77, "GIF")
    assert read_dimensions(b64(raw[:10])) == (300, 77)
    assert read_dimensions(b64(raw[:9])) is None


# --- WebP -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width_field", "height_field", "expected"),
    [
        (1, 1, (1, 1)),
        (300, 77, (300, 77)),
        (0x3FFF, 0x3FFF, (16383, 16383)),
        (0xC000 | 300, 0x4000 | 77, (300, 77)),  # the 2 upscaling bits are no part of the size
        (0, 5, None),
        (5, 0, None),
        (0xC000, 77, None),  # upscaling bits over a zero width
    ],
)
def test_a_lossy_webp_size_is_the_14_bit_key_frame_fields(
    width_field: int, height_field: int, expected: tuple[int, int] | None
) -> None:
    assert read_dimensions(b64(webp_vp8(width_field, height_field))) == expected


@pytest.mark.parametrize(
    ("width", "height", "alpha"),
    [
        *[(1, 1, False), (2, 1, False), (1, 2, False), (300, 77, False), (1, 1025, False), (16384, 16384, False)],
        *[(1, 1, True), (300, 77, True), (16384, 1, True), (1, 16384, True)],  # the alpha hint is no part of it
    ],
)
def test_a_lossless_webp_size_is_the_packed_14_bit_fields(width: int, height: int, alpha: bool) -> None:
    assert read_dimensions(b64(webp_vp8l(width, height, alpha))) == (width, height)


@pytest.mark.parametrize(
    ("mode", "size"), [("RGB", (16383, 1)), ("RGB", (1, 1025)), ("RGBA", (2, 1025)), ("RGBA", (1027, 3))]
)
def test_a_real_lossless_webp_reads_its_size_from_the_header(mode: str, size: tuple[int, int]) -> None:
    raw = encode(Image.new(mode, size), "WEBP", lossless=True)
    assert raw[12:16] == b"VP8L"
    assert read_dimensions(b64(raw)) == size


@pytest.mark.parametrize(
    ("width", "height"), [(1, 1), (300, 77), (2**24, 1), (1, 2**24), (2**24, 2**24), (0x123456, 0xABCDEF)]
)
def test_an_extended_webp_size_is_the_24_bit_canvas_fields(width: int, height: int) -> None:
    assert read_dimensions(b64(webp_vp8x(width, height))) == (width, height)


@pytest.mark.parametrize(
    ("raw", "size"),
    [
        (webp_vp8(300, 77), 30),
        (webp_vp8l(300, 77), 25),
        (webp_vp8x(300, 77), 30),
    ],
    ids=["VP8", "VP8L", "VP8X"],
)
def test_a_webp_size_needs_its_chunk_up_to_the_last_size_byte(raw: bytes, size: int) -> None:
    assert read_dimensions(b64(raw[:size])) == (300, 77)
    assert read_dimensions(b64(raw[: size - 1])) is None


@pytest.mark.parametrize(
    "raw",
    [
        webp_vp8(300, 77, sync=b"\x9d\x01\x2b"),  # no key frame start code
        webp_vp8l(300, 77, signature=0x2E),  # no lossless signature byte
        riff_webp(b"ALPH", b"\0" * 24),  # a chunk no reader knows
        riff_webp(b"VP8X", b"")[:16],  # the chunk name and nothing after it
    ],
    ids=["VP8-bad-start-code", "VP8L-bad-signature", "unknown-chunk", "bare-chunk-name"],
)
def test_a_webp_without_a_known_size_field_has_no_header_size(raw: bytes) -> None:
    assert read_dimensions(b64(raw)) is None


# --- the format hint ---------------------------------------------------------------------------------

NOT_A_GIF = gif_header(7, 9, version=b"GIF90a")
"""A GIF logical screen under an unknown version: no magic bytes match, yet the GIF reader reads 7x9."""


def test_the_hint_chooses_the_reader_only_when_the_magic_bytes_say_nothing() -> None:
    data = b64(NOT_A_GIF)
    assert sniff_base64(data) is None
    assert read_dimensions(data, "gif") == (7, 9)
    assert read_dimensions(data) is None
    assert read_dimensions(data, "png") is None  # the PNG reader finds no IHDR
    assert read_dimensions(data, "bmp") is None  # a hint that names no reader
    assert read_dimensions(data, "image/gif") is None  # a MIME is not a format name


@pytest.mark.parametrize(
    ("mime", "fmt"),
    [
        ("image/png", "png"),
        ("image/jpeg", "jpeg"),
        ("image/jpg", "jpeg"),
        ("image/gif", "gif"),
        ("IMAGE/GIF", "gif"),
        ("image/webp", "webp"),
        ("image/bmp", None),
        ("image/svg+xml", None),
        ("gif", None),
        ("", "png"),  # no declared MIME is image/png
    ],
)
def test_a_refused_image_reports_the_format_its_declared_mime_names(mime: str, fmt: str | None) -> None:
    result = shrink_image(ImageData(b64(NOT_A_GIF), mime))
    assert result.outcome is ShrinkOutcome.DROPPED
    assert result.reason == "not a PNG, JPEG, GIF or WebP image (magic bytes); refused"
    assert result.format == fmt
    assert (result.width, result.height) == ((7, 9) if fmt == "gif" else (None, None))

"""The JPEG header reader (``readImageDimensions`` of image.js): a marker scan from SOI to the first
frame header (SOFn), skipping fill bytes, stand-alone markers and length-prefixed segments, within the
first 256 KiB of the payload."""

from __future__ import annotations

import pytest

from engine.media.gate import read_dimensions
from tests.engine.media.image_headers_support import SOI, jpeg_frame, jpeg_padding, jpeg_segment
from tests.support.imagegen import b64, dims_of, solid

SOF_MARKERS = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]
"""Every frame header: baseline, extended, progressive, lossless, their differential and arithmetic
variants. C4 (DHT), C8 (JPG) and CC (DAC) share the range but are tables, not frames."""

FRAME = jpeg_frame(0xC0, 300, 77)
DECOYS = jpeg_frame(0xC0, 999, 999) * 40
"""Frame headers declaring 999x999 to fill segment payloads: a scan that lands inside a payload finds one."""


def dims(raw: bytes, hint: str | None = None) -> tuple[int, int] | None:
    return read_dimensions(b64(raw), hint)


@pytest.mark.parametrize("marker", SOF_MARKERS, ids=[f"SOF-{m:02X}" for m in SOF_MARKERS])
def test_every_frame_header_marker_gives_the_size(marker: int) -> None:
    # Right after SOI, both fields over 255: the big-endian height and width at offsets 5 and 7.
    assert dims(SOI + jpeg_frame(marker, 300, 1000)) == (300, 1000)


@pytest.mark.parametrize("marker", [0xC4, 0xC8, 0xCC], ids=["DHT", "JPG", "DAC"])
def test_a_table_in_the_frame_marker_range_is_skipped_as_a_segment(marker: int) -> None:
    decoy = jpeg_frame(0xC0, 999, 999)[4:]  # a payload that would read as 999x999
    assert dims(SOI + jpeg_segment(marker, decoy) + FRAME) == (300, 77)


@pytest.mark.parametrize("marker", [0xD8, 0xD9, 0x01, 0xD0, 0xD3, 0xD7], ids=lambda m: f"FF{m:02X}")
def test_a_stand_alone_marker_has_no_length_and_is_skipped(marker: int) -> None:
    assert dims(SOI + bytes((0xFF, marker)) + FRAME) == (300, 77)
    assert dims(SOI + jpeg_segment(0xE0, b"JFIF\0") + bytes((0xFF, marker)) + FRAME) == (300, 77)


@pytest.mark.parametrize("fill", [b"\x00", b"\x00\x00\x00", b"\x12\x34\x56\x78\x9a"], ids=["1", "3", "5"])
def test_bytes_between_segments_that_are_no_marker_are_skipped_one_by_one(fill: bytes) -> None:
    assert dims(SOI + jpeg_segment(0xE0, b"JFIF\0") + fill + FRAME) == (300, 77)
    assert dims(SOI + fill + FRAME, "jpeg") == (300, 77)  # FF D8 then fill: too little magic to sniff


@pytest.mark.parametrize(
    "segments",
    [
        jpeg_segment(0xFE, b""),  # an empty comment: length 2
        jpeg_segment(0xFE, DECOYS[:289]),  # length 0x0123: big-endian, both bytes count
        jpeg_segment(0xE0, b"JFIF\0") + jpeg_segment(0xDB, DECOYS[:65]) + jpeg_segment(0xFE, DECOYS[:300]),
    ],
    ids=["empty", "length-0x0123", "app0-dqt-com"],
)
def test_a_segment_is_skipped_whole_by_its_length_field(segments: bytes) -> None:
    assert dims(SOI + segments + FRAME) == (300, 77)


@pytest.mark.parametrize("length", [0, 1])
def test_a_segment_length_below_2_ends_the_scan(length: int) -> None:
    assert dims(SOI + b"\xff\xe0" + length.to_bytes(2, "big") + FRAME) is None


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [(1, 1, (1, 1)), (65535, 65535, (65535, 65535)), (0, 77, None), (300, 0, None), (0, 0, None)],
)
def test_a_frame_of_zero_width_or_height_has_no_header_size(
    width: int, height: int, expected: tuple[int, int] | None
) -> None:
    # A height of 0 is legal JPEG (the size follows in a DNL segment), but the header cannot say it.
    assert dims(SOI + jpeg_frame(0xC0, width, height)) == expected


@pytest.mark.parametrize(
    "prefix",
    [b"", jpeg_segment(0xFE, b"\0" * 6), jpeg_segment(0xFE, b"\0" * 7)],
    ids=["frame-at-2", "frame-at-12", "frame-at-13"],
)
def test_a_frame_header_is_read_once_its_width_field_is_complete(prefix: bytes) -> None:
    # The reader needs 9 bytes from the frame marker: FF Cn, length, precision, height, width.
    head = SOI + prefix + FRAME[:9]
    assert dims(head) == (300, 77)
    assert dims(head[:-1]) is None


@pytest.mark.parametrize(
    "raw",
    [b"\xff\x00" + FRAME, b"\x00\xd8" + FRAME, b"\xd8\xff" + FRAME],
    ids=["FF00", "00D8", "D8FF"],
)
def test_with_the_jpeg_hint_bytes_without_soi_have_no_size(raw: bytes) -> None:
    assert dims(raw, "jpeg") is None


# --- the probe's reach ----------------------------------------------------------------------------

PROBE_BYTES = 262_146
"""256 KiB rounded up to whole base64 groups: ceil(262 144 / 3) groups of 4 characters, 3 bytes each."""


def far_frame_jpeg(frame_end: int) -> bytes:
    """A real JPEG whose frame header's width field ends at byte ``frame_end``, behind APP15 padding."""
    real = solid(40, 30, "JPEG")
    at = real.index(b"\xff\xc0")
    raw = SOI + jpeg_padding(frame_end - 9 - at) + real[2:]
    assert raw[frame_end - 9 : frame_end - 7] == b"\xff\xc0"
    return raw


def test_the_jpeg_probe_reads_the_first_256_kib_in_whole_base64_groups() -> None:
    within = far_frame_jpeg(PROBE_BYTES)
    beyond = far_frame_jpeg(PROBE_BYTES + 1)
    assert dims_of(b64(within)) == dims_of(b64(beyond)) == (40, 30)  # both are sound JPEGs
    assert dims(within) == (40, 30)
    assert dims(beyond) is None

"""Hand-built image headers for the header-reader tests: each builder writes the bytes the format's
specification lays down (PNG IHDR, GIF logical screen, JPEG segments, WebP RIFF chunks), so a test can
place every field and cut the bytes at exact offsets."""

from __future__ import annotations

import struct
import zlib

from tests.support.imagegen import solid

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SOI = b"\xff\xd8"
VP8_SYNC = b"\x9d\x01\x2a"


# --- PNG ------------------------------------------------------------------------------------------


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_header(width: int, height: int) -> bytes:
    """The signature and an IHDR chunk declaring ``width`` x ``height`` (unsigned 32-bit big-endian)."""
    return PNG_SIGNATURE + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))


# --- GIF ------------------------------------------------------------------------------------------


def gif_header(width: int, height: int, version: bytes = b"GIF89a") -> bytes:
    """The 13-byte header and logical screen descriptor (unsigned 16-bit little-endian size)."""
    return version + struct.pack("<HHBBB", width, height, 0, 0, 0)


def gif_first_frame_resized(frame_width: int, frame_height: int, canvas: tuple[int, int] = (10, 10)) -> bytes:
    """A real GIF of ``canvas`` size whose first image descriptor claims ``frame_width`` x
    ``frame_height`` at (0, 0): a frame larger than its canvas."""
    raw = solid(*canvas, "GIF")
    i = 13
    if raw[10] & 0x80:  # the global colour table
        i += 3 << ((raw[10] & 7) + 1)
    while raw[i : i + 1] == b"!":  # extension blocks: label, then sub-blocks up to a 0 length
        i += 2
        while raw[i]:
            i += raw[i] + 1
        i += 1
    assert raw[i : i + 1] == b",", "no image descriptor where one was expected"
    return raw[: i + 5] + struct.pack("<HH", frame_width, frame_height) + raw[i + 9 :]


# --- JPEG -----------------------------------------------------------------------------------------


def jpeg_segment(marker: int, payload: bytes) -> bytes:
    """``FF marker``, a big-endian length counting itself (2) and the payload, then the payload."""
    return bytes((0xFF, marker)) + struct.pack(">H", 2 + len(payload)) + payload


def jpeg_frame(marker: int, width: int, height: int) -> bytes:
    """A one-component frame header (SOFn): precision 8, height, width, then the component."""
    return jpeg_segment(marker, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")


def jpeg_padding(total: int, marker: int = 0xEF) -> bytes:
    """APPn segments filling exactly ``total`` bytes (each at most 65 537 bytes, at least 4)."""
    out = []
    while total:
        size = min(total, 2 + 65535)
        if 0 < total - size < 4:  # leave room for a last segment of at least its 4-byte head
            size -= 4
        out.append(jpeg_segment(marker, b"\0" * (size - 4)))
        total -= size
    return b"".join(out)


# --- WebP -----------------------------------------------------------------------------------------


def riff_webp(fourcc: bytes, payload: bytes) -> bytes:
    """A RIFF/WEBP container holding one chunk (``fourcc`` at bytes 12..15, its payload from byte 20)."""
    chunk = fourcc + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def webp_vp8(width_field: int, height_field: int, sync: bytes = VP8_SYNC) -> bytes:
    """A lossy (``VP8 ``) key frame header: 3-byte frame tag, start code, then the two 16-bit
    little-endian size fields (14 bits of size, 2 bits of upscaling)."""
    return riff_webp(b"VP8 ", b"\x30\x01\x00" + sync + struct.pack("<HH", width_field, height_field) + b"\0" * 4)


def webp_vp8l(width: int, height: int, alpha: bool = False, signature: int = 0x2F) -> bytes:
    """A lossless (``VP8L``) header: the signature byte, then 14 bits of width - 1, 14 bits of
    height - 1, the alpha hint and a 3-bit version (0), packed little-endian."""
    bits = (width - 1) | (height - 1) << 14 | int(alpha) << 28
    return riff_webp(b"VP8L", bytes((signature,)) + bits.to_bytes(4, "little") + b"\0" * 3)


def webp_vp8x(canvas_width: int, canvas_height: int) -> bytes:
    """An extended (``VP8X``) header: flags, 3 reserved bytes, then canvas width - 1 and height - 1
    as 24-bit little-endian fields."""
    payload = b"\x10\0\0\0" + (canvas_width - 1).to_bytes(3, "little") + (canvas_height - 1).to_bytes(3, "little")
    return riff_webp(b"VP8X", payload)

"""Real test images: Pillow-encoded PNG/JPEG/GIF/WebP, seeded noise, and hand-built hostile headers."""

from __future__ import annotations

import base64
import io
import random
import struct
import zlib

import pytest
from PIL import Image, ImageFile


def encode(img: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **options)
    return out.getvalue()


def solid(width: int, height: int, fmt: str = "PNG", color: tuple[int, int, int] = (200, 30, 90)) -> bytes:
    return encode(Image.new("RGB", (width, height), color), fmt)


def gradient(width: int, height: int, fmt: str = "PNG") -> bytes:
    img = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    return encode(img, fmt)


def noise(width: int, height: int, fmt: str = "PNG", seed: int = 7, **options: object) -> bytes:
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    return encode(img, fmt, **options)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def bomb_png(width: int, height: int, padding: int = 0) -> bytes:
    """A PNG whose IHDR declares ``width`` x ``height`` RGB pixels over a few bytes of IDAT (a decode
    bomb); ``padding`` adds a private ancillary chunk so the file can also be byte-oversized."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunks = [png_chunk(b"IHDR", ihdr)]
    if padding:
        chunks.append(png_chunk(b"zzZz", b"\0" * padding))
    chunks.append(png_chunk(b"IDAT", zlib.compress(b"\0" * 4096, 9)))
    chunks.append(png_chunk(b"IEND", b""))
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks)


def jpeg_with_far_sof(jpeg: bytes, app_segments: int = 5, sof_size: tuple[int, int] | None = None) -> bytes:
    """A JPEG whose SOF sits behind ``app_segments`` maximal APP15 segments (past the 256 KiB header
    probe); ``sof_size`` rewrites the dimensions the SOF declares."""
    assert jpeg[:2] == b"\xff\xd8"
    pad = b"".join(b"\xff\xef" + struct.pack(">H", 65535) + b"\0" * 65533 for _ in range(app_segments))
    body = jpeg[2:]
    if sof_size is not None:
        i = 0
        while True:
            i = body.index(b"\xff", i)
            marker = body[i + 1]
            if marker in (0xC0, 0xC1, 0xC2):
                width, height = sof_size
                body = body[: i + 5] + struct.pack(">HH", height, width) + body[i + 9 :]
                break
            i += 2 + struct.unpack(">H", body[i + 2 : i + 4])[0]
    return b"\xff\xd8" + pad + body


def dims_of(data_b64: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data_b64))) as img:
        return img.size


def jpeg_header_only(width: int, height: int) -> bytes:
    """24 bytes: SOI, a bare ``JFIF`` APP0 and a one-component SOF0 declaring ``width`` x ``height``;
    no tables, no scan. Every header reader finds the size; nothing can be decoded."""
    app0 = b"\xff\xe0" + struct.pack(">H", 7) + b"JFIF\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    raw = b"\xff\xd8" + app0 + sof0
    assert len(raw) == 24
    return raw


def padded_png(total: int, width: int = 4, height: int = 4) -> bytes:
    """A real ``width`` x ``height`` PNG of exactly ``total`` bytes: a private ancillary chunk after
    IHDR carries the padding, so the file decodes completely whatever its size."""
    base = solid(width, height)
    pad = total - len(base) - 12
    assert pad >= 0, f"a {width}x{height} PNG needs at least {len(base) + 12} bytes"
    raw = base[:33] + png_chunk(b"zzZz", b"\0" * pad) + base[33:]
    assert len(raw) == total
    return raw


def animated(width: int, height: int, frames: int, fmt: str = "GIF") -> bytes:
    """An animated GIF or WebP of ``frames`` distinct solid frames."""
    images = [Image.new("RGB", (width, height), (40 * i % 256, 90, 200 - 30 * i % 200)) for i in range(frames)]
    return encode(images[0], fmt, save_all=True, append_images=images[1:], duration=40, loop=0)


# The four formats the engine accepts: Pillow's name and the MIME type, by short name.
FORMATS = {"png": "PNG", "jpeg": "JPEG", "gif": "GIF", "webp": "WEBP"}
FORMATS_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


def count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Record the size of every image Pillow decodes (``ImageFile.load``) while the test runs."""
    loads: list[tuple[int, int]] = []
    real_load = ImageFile.ImageFile.load

    def counting_load(self: ImageFile.ImageFile) -> object:
        loads.append(self.size)
        return real_load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", counting_load)
    return loads

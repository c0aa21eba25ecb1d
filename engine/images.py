"""Inbound image gate (image.js): data model, format sniffing, data-URL parsing and the shrink pipeline.

``shrink_image`` is ``maybeShrinkImage`` plus ``shrinkPixels``:

* the format comes from the magic bytes and overrides the declared MIME (default ``image/png``);
* byte-oversized (base64 longer than the hard ceiling) -> re-encode to JPEG; kept when the result
  fits the ceiling, dropped otherwise; a byte-oversized GIF is always dropped (it may be animated);
* within the ceiling but with a long side above the cap -> re-encode, or forward unchanged when the
  re-encode is unavailable (WebP, undecodable, over the decode-pixel budget); a GIF is never touched;
* the re-encode decodes PNG or JPEG only, refuses anything whose header declares more pixels than
  the decode budget (checked before Pillow decodes a single pixel), scales bilinearly to the long
  side cap, then steps JPEG quality down by 10 to 60 and, still too big, shrinks the long side by
  0.8 (floor 128), always rescaling from the original.

Identical input gives byte-identical output (no timestamps, no EXIF/ICC, fixed encoder options).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from PIL import Image

from engine.config import positive_int_env
from engine.js import JS_SPACE_CLASS, utf16_len

MAX_SIZE = 5 * 1024 * 1024
"""Fetch/decode hard cap in bytes (image.js ``MAX_SIZE``)."""
MAX_BASE64_LEN = math.ceil(MAX_SIZE * 4 / 3) + 100
"""Hard drop ceiling in base64 characters (``MAX_BASE64_LEN`` / ``IMAGE_MAX_BASE64_LEN``)."""
MAX_REDIRECTS = 3
MIME_OK = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
IMAGE_MAX_LONG_SIDE = 1568
IMAGE_MAX_BYTES = 400_000
"""Re-encode target in base64 characters."""
IMAGE_JPEG_QUALITY = 85
MAX_DECODE_PIXELS = 40 * 1024 * 1024
MIN_JPEG_QUALITY = 60
MIN_LONG_SIDE = 128

ENV_MAX_LONG_SIDE = "WINDSURFAPI_IMAGE_MAX_LONG_SIDE"
ENV_MAX_BYTES = "WINDSURFAPI_IMAGE_MAX_BYTES"
ENV_JPEG_QUALITY = "WINDSURFAPI_IMAGE_JPEG_QUALITY"

FORMAT_TO_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

_JPEG_HEAD_BYTES = 256 * 1024
_JPEG_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_JS_SPACE_RE = re.compile(JS_SPACE_CLASS)
_IMAGE_DATA_URL_RE = re.compile(r"data:(image/[a-z+]+);base64,(.+)", re.IGNORECASE | re.ASCII | re.DOTALL)
_GENERIC_DATA_URL_RE = re.compile(r"data:([a-z0-9][a-z0-9.+/-]+);base64,(.+)", re.IGNORECASE | re.ASCII | re.DOTALL)
_B64_CHARS = re.compile(r"[^A-Za-z0-9+/]")
_URLSAFE = str.maketrans("-_", "+/")


@dataclass(frozen=True)
class ImageData:
    """One field-6 entry: ``ImageData{1 base64_data, 2 mime_type}``."""

    base64_data: str
    mime_type: str


class DataUrlError(ValueError):
    """A data URL that cannot become an image: ``reason`` is ``malformed`` or ``too_large``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ImageSettings:
    """The image limits; the defaults are the baseline constants."""

    max_long_side: int = IMAGE_MAX_LONG_SIDE
    max_bytes: int = IMAGE_MAX_BYTES
    jpeg_quality: int = IMAGE_JPEG_QUALITY
    max_base64_len: int = MAX_BASE64_LEN
    max_decode_pixels: int = MAX_DECODE_PIXELS

    def __post_init__(self) -> None:
        for name in ("max_long_side", "max_bytes", "jpeg_quality", "max_base64_len", "max_decode_pixels"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"ImageSettings.{name} must be a positive int, got {value!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ImageSettings:
        return cls(
            max_long_side=positive_int_env(env, ENV_MAX_LONG_SIDE, IMAGE_MAX_LONG_SIDE),
            max_bytes=positive_int_env(env, ENV_MAX_BYTES, IMAGE_MAX_BYTES),
            jpeg_quality=positive_int_env(env, ENV_JPEG_QUALITY, IMAGE_JPEG_QUALITY),
        )


def b64decode_lenient(data: str) -> bytes:
    """``Buffer.from(data, 'base64')``: never raises; skips foreign characters, accepts the URL-safe
    alphabet, stops at the first ``=``, and decodes a trailing partial group as far as it goes."""
    body = data.split("=", 1)[0].translate(_URLSAFE)
    body = _B64_CHARS.sub("", body)
    if len(body) % 4 == 1:
        body = body[:-1]
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):  # pragma: no cover - the alphabet is clean by construction
        return b""


def _decode_head(data: str, n_bytes: int) -> bytes:
    chars = min(len(data), math.ceil(n_bytes / 3) * 4) & ~3
    return b64decode_lenient(data[:chars]) if chars > 0 else b""


def sniff_format(raw: bytes) -> str | None:
    """Magic-byte detection: ``png``, ``jpeg``, ``gif``, ``webp`` or ``None`` (undetectable)."""
    b = bytes(raw[:16])
    if len(b) < 4:
        return None
    if b.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if b.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if b[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if len(b) >= 12 and b[:4] == b"RIFF" and b[8:12] == b"WEBP":
        return "webp"
    return None


def sniff_base64(data: str) -> str | None:
    """``detectImageFormat``: sniff the first bytes of a base64 payload."""
    return sniff_format(_decode_head(data, 16)) if data else None


def _png_dims(b: bytes) -> tuple[int, int] | None:
    if len(b) < 24 or b[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", b[16:24])
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_dims(b: bytes) -> tuple[int, int] | None:
    if len(b) < 4 or b[0] != 0xFF or b[1] != 0xD8:
        return None
    i = 2
    while i + 9 <= len(b):
        if b[i] != 0xFF:
            i += 1
            continue
        marker = b[i + 1]
        if marker in (0xD8, 0xD9, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        seg_len = int.from_bytes(b[i + 2 : i + 4], "big")
        if seg_len < 2:
            break
        if marker in _JPEG_SOF_MARKERS:
            height = int.from_bytes(b[i + 5 : i + 7], "big")
            width = int.from_bytes(b[i + 7 : i + 9], "big")
            return (width, height) if width > 0 and height > 0 else None
        i += 2 + seg_len
    return None


def _gif_dims(b: bytes) -> tuple[int, int] | None:
    if len(b) < 10:
        return None
    width, height = struct.unpack("<HH", b[6:10])
    return (width, height) if width > 0 and height > 0 else None


def _webp_dims(b: bytes) -> tuple[int, int] | None:
    if len(b) < 16:
        return None
    chunk = b[12:16]
    if chunk == b"VP8 ":
        if len(b) < 30 or b[23:26] != b"\x9d\x01\x2a":
            return None
        width = int.from_bytes(b[26:28], "little") & 0x3FFF
        height = int.from_bytes(b[28:30], "little") & 0x3FFF
        return (width, height) if width > 0 and height > 0 else None
    if chunk == b"VP8L":
        if len(b) < 25 or b[20] != 0x2F:
            return None
        b0, b1, b2, b3 = b[21], b[22], b[23], b[24]
        return 1 + (((b1 & 0x3F) << 8) | b0), 1 + (((b3 & 0x0F) << 10) | (b2 << 2) | (b1 >> 6))
    if chunk == b"VP8X":
        if len(b) < 30:
            return None
        return 1 + int.from_bytes(b[24:27], "little"), 1 + int.from_bytes(b[27:30], "little")
    return None


_DIM_READERS = {"png": _png_dims, "jpeg": _jpeg_dims, "gif": _gif_dims, "webp": _webp_dims}


def read_dimensions(data: str, hint: str | None = None) -> tuple[int, int] | None:
    """``readImageDimensions``: (width, height) from the header only, no pixel decode.

    Magic-byte detection wins over ``hint``; the hint is used only when detection fails.
    """
    if not data:
        return None
    fmt = sniff_base64(data) or (hint if hint in FORMAT_TO_MIME else None)
    if fmt is None:
        return None
    head = _decode_head(data, _JPEG_HEAD_BYTES if fmt == "jpeg" else 64)
    return _DIM_READERS[fmt](head)


def _mime_to_format(mime: str) -> str | None:
    parts = mime.lower().split("/")
    sub = parts[1] if len(parts) > 1 else ""
    if sub in ("jpg", "jpeg"):
        return "jpeg"
    return sub if sub in ("png", "gif", "webp") else None


def parse_data_url(url: str) -> ImageData:
    """``parseDataUrl``: ``data:image/<type>;base64,<payload>`` after removing all whitespace.

    Raises ``DataUrlError`` (``malformed`` when the URL does not match, ``too_large`` when the payload
    is longer than ``MAX_BASE64_LEN``). The MIME is lower-cased.
    """
    clean = _JS_SPACE_RE.sub("", url)
    match = _IMAGE_DATA_URL_RE.fullmatch(clean)
    if match is None:
        raise DataUrlError("malformed", "not an image data URL")
    if utf16_len(match.group(2)) > MAX_BASE64_LEN:
        raise DataUrlError("too_large", f"Image data URL exceeds {MAX_SIZE} byte limit")
    return ImageData(base64_data=match.group(2), mime_type=match.group(1).lower())


def parse_generic_data_url(url: str) -> ImageData | None:
    """``parseGenericDataUrl``: a base64 data URL of any MIME (used for PDFs); ``None`` when malformed.

    Raises ``DataUrlError("too_large", ...)`` above ``MAX_BASE64_LEN``.
    """
    clean = _JS_SPACE_RE.sub("", url)
    match = _GENERIC_DATA_URL_RE.fullmatch(clean)
    if match is None:
        return None
    if utf16_len(match.group(2)) > MAX_BASE64_LEN:
        raise DataUrlError("too_large", f"Data URL exceeds {MAX_SIZE} byte limit")
    return ImageData(base64_data=match.group(2), mime_type=match.group(1).lower())


class ShrinkOutcome(StrEnum):
    KEPT = "kept"
    RESIZED = "resized"
    DROPPED = "dropped"


@dataclass(frozen=True)
class ShrinkResult:
    """The gate's decision. ``image`` is what to send (the original, MIME-corrected, when kept or
    dropped; the JPEG re-encode when resized). ``reason`` is the baseline's log text."""

    outcome: ShrinkOutcome
    image: ImageData
    reason: str | None
    format: str | None
    width: int | None
    height: int | None
    oversize_dimensions: bool

    @property
    def dropped(self) -> bool:
        return self.outcome is ShrinkOutcome.DROPPED


class _ReencodeError(Exception):
    pass


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def _encode_jpeg(img: Image.Image, quality: int) -> str:
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=max(1, min(100, quality)), optimize=False, progressive=False)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _decode_original(raw: bytes, settings: ImageSettings) -> Image.Image:
    if not (raw[:4] == b"\x89PNG" or raw[:2] == b"\xff\xd8"):
        raise _ReencodeError("unsupported image format for re-encode (only PNG/JPEG)")
    with Image.open(io.BytesIO(raw), formats=("PNG", "JPEG")) as img:
        width, height = img.size
        # Second guard on the size Pillow parsed, before any pixel is decoded.
        if width * height > settings.max_decode_pixels:
            raise _ReencodeError(f"image {width}x{height} exceeds decode pixel budget")
        img.load()
        return img.convert("RGB")


def _shrink_pixels(data: str, settings: ImageSettings) -> str:
    """``shrinkPixels``: re-encode to JPEG toward ``settings.max_bytes``; returns base64.

    Raises ``_ReencodeError`` on any decode or encode failure, including the decode-pixel budget; the
    caller turns it into a passthrough or a drop.
    """
    try:
        header = read_dimensions(data)
        if header is not None and header[0] * header[1] > settings.max_decode_pixels:
            raise _ReencodeError(f"image {header[0]}x{header[1]} exceeds decode pixel budget")
        original = _decode_original(b64decode_lenient(data), settings)
        src_w, src_h = original.size
        if not src_w or not src_h:
            raise _ReencodeError("decoded image has no dimensions")
        src_long = max(src_w, src_h)
        cur_long = min(settings.max_long_side, src_long)
        while True:
            frame = original
            if src_long > cur_long:
                scale = cur_long / src_long
                size = (max(1, _round_half_up(src_w * scale)), max(1, _round_half_up(src_h * scale)))
                frame = original.resize(size, Image.Resampling.BILINEAR)
            quality = settings.jpeg_quality
            while True:
                out = _encode_jpeg(frame, quality)
                if len(out) <= settings.max_bytes or quality <= MIN_JPEG_QUALITY:
                    break
                quality = max(MIN_JPEG_QUALITY, quality - 10)
            if len(out) <= settings.max_bytes or cur_long <= MIN_LONG_SIDE:
                return out
            cur_long = max(MIN_LONG_SIDE, _round_half_up(cur_long * 0.8))
    except _ReencodeError:
        raise
    except Exception as exc:  # Pillow raises OSError, ValueError, SyntaxError, DecompressionBombError, ...
        raise _ReencodeError(str(exc) or type(exc).__name__) from exc


def shrink_image(img: ImageData, settings: ImageSettings | None = None) -> ShrinkResult:
    """``maybeShrinkImage``: decide kept / resized / dropped for one image. Never raises."""
    s = settings or ImageSettings()
    data = img.base64_data or ""
    declared = (img.mime_type or "image/png").lower()
    detected = sniff_base64(data)
    fmt = detected or _mime_to_format(declared)
    mime = FORMAT_TO_MIME[detected] if detected else declared
    dims = read_dimensions(data, fmt)
    width, height = dims if dims else (None, None)
    long_side = max(dims) if dims else 0
    oversize_dims = dims is not None and long_side > s.max_long_side
    size = len(data)
    original = ImageData(base64_data=data, mime_type=mime)

    def result(outcome: ShrinkOutcome, image: ImageData, reason: str | None, oversize: bool) -> ShrinkResult:
        return ShrinkResult(outcome, image, reason, fmt, width, height, oversize)

    # Refusals the baseline lacked (issue 4): bytes that are no image format on the MIME allowlist,
    # and decompression bombs, never reach field 6, whatever the client declared.
    if detected is None:
        reason = "not a PNG, JPEG, GIF or WebP image (magic bytes); refused"
        return result(ShrinkOutcome.DROPPED, original, reason, oversize_dims)
    if dims is not None and dims[0] * dims[1] > s.max_decode_pixels:
        reason = f"decompression bomb: {dims[0]}x{dims[1]} pixels exceeds the decode budget of {s.max_decode_pixels}"
        return result(ShrinkOutcome.DROPPED, original, reason, oversize_dims)

    if size > s.max_base64_len:
        over = f"base64 length {size} exceeds limit {s.max_base64_len}"
        if fmt == "gif":
            reason = f"{over} and GIF is not re-encoded (may be animated)"
            return result(ShrinkOutcome.DROPPED, original, reason, oversize_dims)
        try:
            shrunk = _shrink_pixels(data, s)
        except _ReencodeError as exc:
            reason = f"{over} and re-encode failed: {exc}"
            return result(ShrinkOutcome.DROPPED, original, reason, oversize_dims)
        if len(shrunk) <= s.max_base64_len:
            reason = f"re-encoded {size}B -> {len(shrunk)}B JPEG (was byte-oversized)"
            return result(ShrinkOutcome.RESIZED, ImageData(shrunk, "image/jpeg"), reason, False)
        reason = f"{over}; re-encode reached {len(shrunk)} but still over limit"
        return result(ShrinkOutcome.DROPPED, original, reason, oversize_dims)

    if oversize_dims and fmt != "gif":
        try:
            resized: str | None = _shrink_pixels(data, s)
        except _ReencodeError:
            resized = None
        if resized is not None and len(resized) <= s.max_base64_len:
            reason = f"re-encoded long side {long_side}px -> <={s.max_long_side}px JPEG"
            return result(ShrinkOutcome.RESIZED, ImageData(resized, "image/jpeg"), reason, False)
        reason = f"long side {long_side}px exceeds {s.max_long_side}px (forwarded as-is; re-encode unavailable)"
        return result(ShrinkOutcome.KEPT, original, reason, True)

    note = f"long side {long_side}px exceeds {s.max_long_side}px (GIF forwarded as-is)" if oversize_dims else None
    return result(ShrinkOutcome.KEPT, original, note, oversize_dims)

"""Inbound image gate (image.js): data model, format sniffing, data-URL parsing, the decode guard
and the shrink pipeline.

``shrink_image`` is ``maybeShrinkImage`` plus ``shrinkPixels``, with the guards the baseline lacked:

* the format comes from the magic bytes and overrides the declared MIME (default ``image/png``);
  bytes that are no PNG, JPEG, GIF or WebP are dropped;
* a header that declares more pixels than the decode budget is dropped before Pillow sees a byte;
* **the decode guard**: every other image is decoded completely (Pillow ``load()``) before it may be
  forwarded; one that does not decode (truncated, a header without a scan, corrupt data) or whose
  parsed size is over the budget is dropped (``undecodable: ...`` / ``decompression bomb: ...``).
  For an animation (GIF, WebP, APNG) the first frame is decoded and ``n_frames`` x width x height
  must be within the budget, so the frames a renderer would decode all fit it;
* byte-oversized (more than ``MAX_SIZE`` **decoded** bytes, or a canonical base64 longer than
  ``max_base64_len``) -> re-encode to JPEG; kept when the result fits, dropped otherwise; a
  byte-oversized GIF or WebP is dropped without a decode (neither is re-encoded);
* within the limits but with a long side above the cap -> re-encode, or forward unchanged when the
  re-encode is unavailable (GIF, WebP); the re-encode scales the decoded image bilinearly to the
  long side cap, then steps JPEG quality down by 10 to 60 and, still too big, shrinks the long side
  by 0.8 (floor 128), always rescaling from the original.

Limits are exact, in the unit they are stated in: ``MAX_SIZE`` decoded bytes are within the cap and
one more byte is not, whatever the base64 padding or whitespace (a base64 length cannot say it:
5 MiB and 5 MiB + 1 byte both take 6 990 508 characters); ``width * height`` equal to the decode
budget decodes and one pixel more is a bomb. The engine's budget is the only judge: images are
parsed by the format's Pillow plugin directly, so Pillow's process-wide ``Image.MAX_IMAGE_PIXELS``
check (a warning above it, ``DecompressionBombError`` above twice it) never decides first, except
for a GIF frame larger than its canvas and past that limit: Pillow's GIF plugin refuses it while
parsing, and :func:`engine.media.decode.decode_image` reports that as a bomb too.

A kept image is forwarded as the canonical base64 of the bytes that decoded (byte-identical to the
input when that was canonical already), so field 6 carries exactly what was checked.

Full decodes are bounded process-wide: at most ``CASCADE_MAX_CONCURRENT_DECODES`` (default 4, read
from the environment at import) run at once, each holding one decoded image (at most 4 bytes per
pixel of the 40 Mi-pixel budget, 160 MiB; a 36-megapixel RGB photo is about 108 MB) plus, for a
re-encode, its RGB copy and scaled frames. Further images wait for a slot (:data:`DECODE_SLOTS`), so
50 concurrent image requests hold at most 4 decodes in memory, not 50. Within one request the
verdict on each image is decided once (:class:`ImageVerdicts`): a resumed request's rebuild and an
image repeated across turns do not decode the same bytes again.

Identical input gives byte-identical output (no timestamps, no EXIF/ICC, fixed encoder options).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from PIL import Image

from engine.config import positive_int_env
from engine.js import JS_SPACE_CLASS
from engine.media.decode import (
    DECODE_SLOTS,
    Undecodable,
    decode_image,
    reason_of,
)

MAX_SIZE = 5 * 1024 * 1024
"""The hard cap in **decoded** bytes (image.js ``MAX_SIZE``): a data URL, a fetched body and the gate
count the bytes the base64 decodes to; exactly ``MAX_SIZE`` is within it, one byte more is not."""
MAX_BASE64_LEN = math.ceil(MAX_SIZE * 4 / 3) + 100
"""The baseline's ceiling in base64 characters (``MAX_BASE64_LEN`` / ``IMAGE_MAX_BASE64_LEN``). It no
longer measures the 5 MiB cap; the gate holds the canonical base64 it forwards to it
(``ImageSettings.max_base64_len``), which ``MAX_SIZE`` decoded bytes never reach."""
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
"""Full decodes the process runs at once (``CASCADE_MAX_CONCURRENT_DECODES``, a positive int)."""

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
    """The image limits; the defaults are the baseline constants. ``max_decoded_bytes`` and
    ``max_decode_pixels`` are inclusive: an image of exactly that many bytes or pixels is within."""

    max_long_side: int = IMAGE_MAX_LONG_SIDE
    max_bytes: int = IMAGE_MAX_BYTES
    jpeg_quality: int = IMAGE_JPEG_QUALITY
    max_base64_len: int = MAX_BASE64_LEN
    max_decode_pixels: int = MAX_DECODE_PIXELS
    max_decoded_bytes: int = MAX_SIZE

    def __post_init__(self) -> None:
        for name in (
            "max_long_side",
            "max_bytes",
            "jpeg_quality",
            "max_base64_len",
            "max_decode_pixels",
            "max_decoded_bytes",
        ):
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


def decoded_size(data: str) -> int:
    """How many bytes :func:`b64decode_lenient` makes of ``data``, without decoding it: the base64
    characters before the first ``=`` (whitespace and other foreign characters are no part of it)."""
    body = _B64_CHARS.sub("", data.split("=", 1)[0].translate(_URLSAFE))
    return len(body) // 4 * 3 + (0, 0, 1, 2)[len(body) % 4]


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
    decodes to more than ``MAX_SIZE`` bytes). The MIME is lower-cased.
    """
    clean = _JS_SPACE_RE.sub("", url)
    match = _IMAGE_DATA_URL_RE.fullmatch(clean)
    if match is None:
        raise DataUrlError("malformed", "not an image data URL")
    if decoded_size(match.group(2)) > MAX_SIZE:
        raise DataUrlError("too_large", f"Image data URL exceeds {MAX_SIZE} byte limit")
    return ImageData(base64_data=match.group(2), mime_type=match.group(1).lower())


def parse_generic_data_url(url: str) -> ImageData | None:
    """``parseGenericDataUrl``: a base64 data URL of any MIME (used for PDFs); ``None`` when malformed.

    Raises ``DataUrlError("too_large", ...)`` when the payload decodes to more than ``MAX_SIZE`` bytes.
    """
    clean = _JS_SPACE_RE.sub("", url)
    match = _GENERIC_DATA_URL_RE.fullmatch(clean)
    if match is None:
        return None
    if decoded_size(match.group(2)) > MAX_SIZE:
        raise DataUrlError("too_large", f"Data URL exceeds {MAX_SIZE} byte limit")
    return ImageData(base64_data=match.group(2), mime_type=match.group(1).lower())


class ShrinkOutcome(StrEnum):
    KEPT = "kept"
    RESIZED = "resized"
    DROPPED = "dropped"


@dataclass(frozen=True)
class ShrinkResult:
    """The gate's decision. ``image`` is what to send: when kept, the canonical base64 of the bytes
    that decoded (MIME-corrected); when resized, the JPEG re-encode; when dropped, the input as given
    (MIME-corrected). ``reason`` is the log text. ``width``/``height`` are the header's size, or the
    size Pillow parsed when the header probe could not read one."""

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


# --------------------------------------------------------------------------- re-encode


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def _encode_jpeg(img: Image.Image, quality: int) -> str:
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=max(1, min(100, quality)), optimize=False, progressive=False)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _shrink_pixels(decoded: Image.Image, settings: ImageSettings) -> str:
    """``shrinkPixels``: re-encode a decoded PNG or JPEG to JPEG toward ``settings.max_bytes``; returns
    base64. Any Pillow error propagates; the caller turns it into a passthrough or a drop."""
    original = decoded.convert("RGB")
    src_w, src_h = original.size
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


# --------------------------------------------------------------------------- the gate


def _byte_oversize(decoded: int, chars: int, settings: ImageSettings) -> str | None:
    """Why an image is byte-oversized (``None`` when it is not): decoded bytes first, then the
    canonical base64 length."""
    if decoded > settings.max_decoded_bytes:
        return f"decoded size {decoded} bytes exceeds limit {settings.max_decoded_bytes}"
    if chars > settings.max_base64_len:
        return f"base64 length {chars} exceeds limit {settings.max_base64_len}"
    return None


def _fits(data: str, settings: ImageSettings) -> bool:
    return _byte_oversize(decoded_size(data), len(data), settings) is None


def _as_decoded(original: ImageData, raw: bytes) -> ImageData:
    """What a kept image forwards: the canonical base64 of the bytes that decoded; the input itself
    when it was canonical already (no whitespace, URL-safe characters, missing padding or trailer)."""
    canonical = base64.b64encode(raw).decode("ascii")
    return original if canonical == original.base64_data else ImageData(canonical, original.mime_type)


def _gate(img: ImageData, s: ImageSettings) -> ShrinkResult:
    data = img.base64_data or ""
    declared = (img.mime_type or "image/png").lower()
    detected = sniff_base64(data)
    fmt = detected or _mime_to_format(declared)
    mime = FORMAT_TO_MIME[detected] if detected else declared
    dims = read_dimensions(data, fmt)
    original = ImageData(base64_data=data, mime_type=mime)

    def result(outcome: ShrinkOutcome, image: ImageData, reason: str | None, oversize: bool) -> ShrinkResult:
        width, height = dims if dims else (None, None)
        return ShrinkResult(outcome, image, reason, fmt, width, height, oversize)

    def drop(reason: str) -> ShrinkResult:
        oversize = dims is not None and max(dims) > s.max_long_side
        return result(ShrinkOutcome.DROPPED, original, reason, oversize)

    # Refusals the baseline lacked (issue 4): bytes that are no image format on the MIME allowlist,
    # and decompression bombs, never reach field 6, whatever the client declared.
    if detected is None:
        return drop("not a PNG, JPEG, GIF or WebP image (magic bytes); refused")
    if dims is not None and dims[0] * dims[1] > s.max_decode_pixels:
        return drop(
            f"decompression bomb: {dims[0]}x{dims[1]} pixels exceeds the decode budget of {s.max_decode_pixels}"
        )

    raw = b64decode_lenient(data)
    canonical_len = -(-len(raw) // 3) * 4
    over = _byte_oversize(len(raw), canonical_len, s)
    if over is not None and detected == "gif":
        return drop(f"{over} and GIF is not re-encoded (may be animated)")
    if over is not None and detected == "webp":
        return drop(f"{over} and re-encode failed: unsupported image format for re-encode (only PNG/JPEG)")

    with DECODE_SLOTS.hold():
        try:
            decoded = decode_image(raw, detected, s.max_decode_pixels)
        except Undecodable as exc:
            if over is None:  # the decode guard: what does not decode completely is never forwarded
                return drop(str(exc))
            return drop(f"{over} and re-encode failed: {exc}")
        with decoded:
            if dims is None:  # the header probe missed the size; Pillow's parse has it
                dims = decoded.size
            long_side = max(dims)
            oversize = long_side > s.max_long_side
            reencodable = detected in ("png", "jpeg")
            if over is None and not (oversize and reencodable):
                forwarded = _as_decoded(original, raw)
                if not oversize:
                    return result(ShrinkOutcome.KEPT, forwarded, None, False)
                how = "GIF forwarded as-is" if detected == "gif" else "forwarded as-is; re-encode unavailable"
                return result(
                    ShrinkOutcome.KEPT, forwarded, f"long side {long_side}px exceeds {s.max_long_side}px ({how})", True
                )
            try:
                shrunk: str | None = _shrink_pixels(decoded, s)
                failure = ""
            except Exception as exc:  # an encoder failure: the image decoded, the re-encode did not
                shrunk, failure = None, reason_of(exc)

    if over is not None:
        if shrunk is None:
            return drop(f"{over} and re-encode failed: {failure}")
        if _fits(shrunk, s):
            reason = f"re-encoded {canonical_len}B -> {len(shrunk)}B JPEG (was byte-oversized)"
            return result(ShrinkOutcome.RESIZED, ImageData(shrunk, "image/jpeg"), reason, False)
        return drop(f"{over}; re-encode reached {len(shrunk)} but still over limit")
    if shrunk is not None and _fits(shrunk, s):
        reason = f"re-encoded long side {long_side}px -> <={s.max_long_side}px JPEG"
        return result(ShrinkOutcome.RESIZED, ImageData(shrunk, "image/jpeg"), reason, False)
    forwarded = _as_decoded(original, raw)
    reason = f"long side {long_side}px exceeds {s.max_long_side}px (forwarded as-is; re-encode unavailable)"
    return result(ShrinkOutcome.KEPT, forwarded, reason, True)


class ImageVerdicts:
    """The gate's verdicts within one request, keyed by the image (base64 text, declared MIME) and the
    settings: the same bytes are decoded once per request, however often they are replayed (the same
    image in several turns, a resumed request's rebuild). Thread-safe; never shared between requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, ImageSettings], ShrinkResult] = {}

    def decide(self, img: ImageData, settings: ImageSettings) -> ShrinkResult:
        key = (img.base64_data or "", img.mime_type or "", settings)
        with self._lock:
            known = self._seen.get(key)
        if known is not None:
            return known
        decision = _gate(img, settings)
        with self._lock:
            return self._seen.setdefault(key, decision)


def shrink_image(
    img: ImageData, settings: ImageSettings | None = None, verdicts: ImageVerdicts | None = None
) -> ShrinkResult:
    """``maybeShrinkImage`` plus the decode guard: kept / resized / dropped for one image. Never
    raises. With ``verdicts``, an image this request already judged is not decoded again."""
    s = settings or ImageSettings()
    return verdicts.decide(img, s) if verdicts is not None else _gate(img, s)

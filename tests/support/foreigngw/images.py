"""Image blocks: which blocks are image-like, and which of them yield an image for field 6.

An image is extracted only from a ``data:`` URL (OpenAI ``image_url`` / Responses ``input_image``) or
an Anthropic base64 ``source``, when its MIME type is PNG, JPEG, GIF or WebP, its decoded size is at
most 5 MB and Pillow opens and verifies it. Its base64 text goes to the LS unchanged. Remote URLs
are never fetched.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PIL import Image

IMAGE_LIKE_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})
ALLOWED_MIME = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PIL_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
MAX_DECODED_BYTES = 5 * 1024 * 1024
MAX_BASE64_CHARS = -(-MAX_DECODED_BYTES * 4 // 3) + 100
MAX_PIXELS = 40 * 1024 * 1024
_DATA_URL = re.compile(r"^data:([^;,]*)((?:;[^;,]*)*);base64,(.*)$", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Picture:
    """One image for field 6: its base64 text as received and its MIME type."""

    b64: str
    mime: str


def is_image_like(block: Any) -> bool:
    """An image, document or file block, a base64 ``source``, a truthy ``image_url`` or an
    ``image/*`` media type (these become placeholders in text history)."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if isinstance(kind, str) and kind.lower() in IMAGE_LIKE_TYPES:
        return True
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        return True
    if block.get("image_url"):
        return True
    media_type = block.get("media_type")
    return isinstance(media_type, str) and media_type.startswith("image/")


def extract_image(block: Any) -> Picture | None:
    """The image ``block`` carries, or None when it yields none."""
    payload = _payload(block)
    if payload is None:
        return None
    mime, data = payload
    mime = mime.strip().lower()
    if mime not in ALLOWED_MIME or len(data) > MAX_BASE64_CHARS:
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw or len(raw) > MAX_DECODED_BYTES or not _verifies(raw):
        return None
    return Picture(data, mime)


def _payload(block: Any) -> tuple[str, str] | None:
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind in ("image_url", "input_image") or (kind is None and "image_url" in block):
        reference = block.get("image_url")
        url = reference.get("url") if isinstance(reference, Mapping) else reference
        if not isinstance(url, str):
            return None
        found = _DATA_URL.match(url.strip())
        if found is None:
            return None  # http(s) and every other scheme: never fetched
        return found.group(1), found.group(3)
    if kind == "image":
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("type") in ("base64", None):
            media_type, data = source.get("media_type"), source.get("data")
            if isinstance(media_type, str) and isinstance(data, str):
                return media_type, data
    return None


def _verifies(raw: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(raw), formats=PIL_FORMATS) as image:
            if image.width * image.height > MAX_PIXELS:
                return False
            image.verify()
    except Exception:  # Pillow raises many kinds for a broken file; none of them is an image
        return False
    return True

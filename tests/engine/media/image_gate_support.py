"""Independent goldens for the image gate's re-encode (engine.md 1.A.5 ``shrinkPixels``): what a
bilinear scale plus a baseline JPEG at a given quality makes of a real image, computed with Pillow
directly, and the text Pillow gives when its JPEG encoder refuses an image."""

from __future__ import annotations

import io
import random

from PIL import Image

from tests.support.imagegen import b64, encode

JPEG_MAX_DIMENSION = 65_500
"""libjpeg's widest encodable side: a wider frame decodes fine but cannot be re-encoded."""


def golden_jpeg(raw: bytes, size: tuple[int, int], quality: int = 85) -> str:
    """The re-encode of ``raw`` at ``size``: decoded, as RGB, scaled bilinearly when ``size`` differs,
    saved as a baseline (not progressive), non-optimised JPEG at ``quality``; base64."""
    with Image.open(io.BytesIO(raw)) as img:
        rgb = img.convert("RGB")
    if rgb.size != size:
        rgb = rgb.resize(size, Image.Resampling.BILINEAR)
    return b64(encode(rgb, "JPEG", quality=quality, optimize=False, progressive=False))


def noise_png(width: int, height: int, mode: str = "RGB", seed: int = 11) -> bytes:
    """A PNG of seeded noise in ``mode`` (``RGB``, ``RGBA``, ``L`` or ``P``)."""
    rng = random.Random(seed)
    bands = {"RGB": 3, "RGBA": 4, "L": 1, "P": 1}[mode]
    img = Image.frombytes(mode, (width, height), rng.randbytes(width * height * bands))
    if mode == "P":
        img.putpalette([v for i in range(256) for v in (i, 255 - i, (i * 7) % 256)])
    return encode(img, "PNG")


def jpeg_encoder_refusal(width: int) -> str:
    """The error text Pillow raises when asked to write a ``width`` x 1 JPEG (past
    :data:`JPEG_MAX_DIMENSION`)."""
    assert width > JPEG_MAX_DIMENSION
    try:
        encode(Image.new("RGB", (width, 1)), "JPEG")
    except OSError as exc:
        return str(exc)
    raise AssertionError(f"Pillow wrote a {width}px wide JPEG")


def wrapped(data: str, every: int = 76) -> str:
    """``data`` as MIME-style base64: a newline after every ``every`` characters."""
    return "\n".join(data[i : i + every] for i in range(0, len(data), every))

"""Full decodes of inbound images, and the process-wide bound on how many run at once.

An image is forwarded only after it decoded completely within the pixel budget
(:func:`decode_image`); a full decode of a 36-megapixel image costs about 108 MB, so at most
``CASCADE_MAX_CONCURRENT_DECODES`` (default 4) run at once (:data:`DECODE_SLOTS`).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from PIL import GifImagePlugin, Image, ImageFile, JpegImagePlugin, PngImagePlugin, WebPImagePlugin

from engine.config import positive_int_env

ENV_MAX_CONCURRENT_DECODES = "CASCADE_MAX_CONCURRENT_DECODES"
DEFAULT_MAX_CONCURRENT_DECODES = 4


# --------------------------------------------------------------------------- bounded decodes


@dataclass(frozen=True)
class DecodeSlotsState:
    limit: int
    active: int  # decodes running now
    waiting: int  # callers queued for a slot
    peak: int  # the most decodes that ever ran at once


class DecodeSlots:
    """A process-wide bound on simultaneous full decodes (a ``BoundedSemaphore`` of ``limit``).

    A slot is held for the life of one decoded image: the decode and, when there is one, its
    re-encode. The bookkeeping (active, waiting, peak) is what tests and operators observe.
    """

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"the concurrent decode limit must be a positive int, got {limit!r}")
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._changed = threading.Condition()
        self._active = self._waiting = self._peak = 0

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._changed:
            self._waiting += 1
            self._changed.notify_all()
        try:
            self._slots.acquire()
        finally:
            with self._changed:
                self._waiting -= 1
                self._changed.notify_all()
        with self._changed:
            self._active += 1
            self._peak = max(self._peak, self._active)
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._active -= 1
                self._changed.notify_all()
            self._slots.release()

    def _state(self) -> DecodeSlotsState:
        return DecodeSlotsState(self.limit, self._active, self._waiting, self._peak)

    def state(self) -> DecodeSlotsState:
        with self._changed:
            return self._state()

    def wait_until(self, predicate: Callable[[DecodeSlotsState], bool], timeout: float) -> DecodeSlotsState | None:
        """Block until ``predicate`` holds for the state (returned), or ``None`` after ``timeout`` seconds."""
        with self._changed:
            if self._changed.wait_for(lambda: predicate(self._state()), timeout):
                return self._state()
            return None


def max_concurrent_decodes(env: Mapping[str, str]) -> int:
    """``CASCADE_MAX_CONCURRENT_DECODES``: a positive int, else :data:`DEFAULT_MAX_CONCURRENT_DECODES`."""
    return positive_int_env(env, ENV_MAX_CONCURRENT_DECODES, DEFAULT_MAX_CONCURRENT_DECODES)


DECODE_SLOTS = DecodeSlots(max_concurrent_decodes(os.environ))
"""The process's decode slots, sized from the environment at import."""


# --------------------------------------------------------------------------- the decode guard


class Undecodable(Exception):
    """The bytes do not decode completely: ``str()`` is the log reason."""


class Bomb(Undecodable):
    """The size Pillow parsed (times the frames) is over the decode budget."""


# The format's own parser, chosen from the magic bytes. ``Image.open`` is not used: it would run
# Pillow's process-wide MAX_IMAGE_PIXELS check before the engine's budget could decide.
_PARSERS: dict[str, Callable[[io.BytesIO], ImageFile.ImageFile]] = {
    "png": PngImagePlugin.PngImageFile,
    "jpeg": JpegImagePlugin.JpegImageFile,
    "gif": GifImagePlugin.GifImageFile,
    "webp": WebPImagePlugin.WebPImageFile,
}


def reason_of(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def decode_image(raw: bytes, fmt: str, budget: int) -> ImageFile.ImageFile:
    """Parse and fully decode ``raw`` (the first frame of an animation) within ``budget`` pixels;
    the caller closes the image. Raises ``Bomb`` or ``Undecodable``, never anything else."""
    try:
        img = _PARSERS[fmt](io.BytesIO(raw))
    except Image.DecompressionBombError as exc:  # a GIF frame past Pillow's own limit, refused while parsing
        raise Bomb(f"decompression bomb: {reason_of(exc)}") from exc
    except Exception as exc:  # SyntaxError, OSError, ValueError, struct.error, ...
        raise Undecodable(f"undecodable: {reason_of(exc)}") from exc
    try:
        width, height = img.size
        # Checked on the size Pillow parsed, before a single pixel is decoded.
        if width * height > budget:
            raise Bomb(f"decompression bomb: {width}x{height} pixels exceeds the decode budget of {budget}")
        frames = getattr(img, "n_frames", 1)
        if frames * width * height > budget:
            raise Bomb(
                f"decompression bomb: {frames} frames of {width}x{height} pixels exceed the decode budget of {budget}"
            )
        img.load()
    except Undecodable:
        img.close()
        raise
    except Exception as exc:  # truncated data, a header without a scan, corrupt streams
        img.close()
        raise Undecodable(f"undecodable: {reason_of(exc)}") from exc
    return img

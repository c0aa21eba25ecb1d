"""Messages, image blocks, a fake fetcher and a build helper shared by the prompt-builder tests."""

from __future__ import annotations

import base64
import io
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
from PIL import Image

from engine.config import HistoryImageLimits
from engine.media.gate import ImageData, ImageSettings
from engine.prompt.build import Message, PromptBuild, build_cascade_prompt
from engine.prompt.extract import IMAGE_PLACEHOLDER
from engine.prompt.metrics import ImageHistoryMetrics

LOGGER = "engine.cascade"
CLAUDE = "claude-sonnet-4-6"
PLAIN_MODEL = "test-model"  # names no provider: no context line
MARKER = "[Image #{n} attached to this request \u2014 from an earlier turn]"
DROP_SUFFIX = (
    " \u2014 SendUserCascadeMessage carries images only as one flat message-level list (field 6), "
    "so these could not be replayed with their turn"
)
CONTEXT_CLAUDE = "[Context: The underlying model serving this request is claude-sonnet-4-6, developed by Anthropic.]"


@cache
def png_b64(seed: int, side: int = 3) -> str:
    """A small noise PNG, distinct per seed, as base64 (small enough to pass the shrink gate as is)."""
    rng = random.Random(seed)
    pixels = bytes(rng.randrange(256) for _ in range(side * side * 3))
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def b64_image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def data_url_image(data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def url_image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


FILE_ID_BLOCK: dict[str, Any] = {"type": "file", "file": {"file_id": "file-123"}}


def png(data: str) -> ImageData:
    return ImageData(data, "image/png")


class FakeFetcher:
    """Serves the URLs it knows, raises for the rest, and records every call."""

    def __init__(self, images: Mapping[str, str] | None = None) -> None:
        self.images = dict(images or {})
        self.calls: list[str] = []

    def __call__(self, url: str) -> ImageData:
        self.calls.append(url)
        data = self.images.get(url)
        if data is None:
            raise OSError(f"fetch failed: {url}")
        return png(data)


def build(
    messages: Sequence[Message],
    *,
    env: Mapping[str, str] | None = None,
    metrics: ImageHistoryMetrics | None = None,
    fetcher: FakeFetcher | None = None,
    model_uid: str = CLAUDE,
    tool_preamble: str = "",
    native_mode: bool = False,
    is_resume: bool = False,
    rebuild: bool = False,
    display_model: str | None = None,
) -> PromptBuild:
    env = dict(env or {})
    return build_cascade_prompt(
        messages,
        model_uid=model_uid,
        tool_preamble=tool_preamble,
        native_mode=native_mode,
        is_resume=is_resume,
        rebuild=rebuild,
        limits=HistoryImageLimits.from_env(env),
        image_settings=ImageSettings(),
        fetcher=fetcher if fetcher is not None else FakeFetcher(),
        env=env,
        display_model=display_model,
        metrics=metrics if metrics is not None else ImageHistoryMetrics(),
    )


def drop_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.getMessage().startswith("cascade_image_history_dropped")
    ]


@contextmanager
def captured(logger: str = LOGGER, level: int = logging.INFO) -> Iterator[list[str]]:
    """Messages logged on ``logger`` inside the block (usable inside Hypothesis examples)."""
    messages: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    target = logging.getLogger(logger)
    handler = _Collect(level)
    previous = target.level
    target.addHandler(handler)
    target.setLevel(level)
    try:
        yield messages
    finally:
        target.removeHandler(handler)
        target.setLevel(previous)


IMG_A = png_b64(1)
IMG_B = png_b64(2)
IMG_C = png_b64(3)


def probe_messages(image: str = IMG_A) -> list[Message]:
    """engine.md 1.A.2's probe: system "You are helpful.", a 3-turn conversation, an image in turn 1."""
    return [
        Message("system", "You are helpful."),
        Message("user", [text_block("look"), b64_image(image)]),
        Message("assistant", "a cat"),
        Message("user", "what colour?"),
    ]


PROBE_BASELINE_TEXT = (
    "The assistant is helpful.\n[Context: The underlying model serving this request is claude-sonnet-4-6, developed "
    "by Anthropic.]\n\nThe following is a multi-turn conversation. You MUST remember and use all information from "
    "prior turns.\n\n<human>\nlook[Image omitted from text history]\n</human>\n\n<assistant>\na cat\n</assistant>\n\n"
    "<human>\nwhat colour?\n</human>"
)
PROBE_FIXED_TEXT = PROBE_BASELINE_TEXT.replace(IMAGE_PLACEHOLDER, MARKER.format(n=1))

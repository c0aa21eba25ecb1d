"""Hand-built IMG cases for the unit tests of the kit's IMG model (conformance/models/img.py).

Conversations are plain message dicts exactly as the IMG strategies draw them; images are the
kit's identifiable PNGs (``png_b64``), so an attached image's label is ``img<index>``.
"""

from __future__ import annotations

from typing import Any

from conformance.fixtures.images import guard_block, image_block, png_b64

Message = dict[str, Any]


def b64(index: int, rows: int = 0) -> str:
    """The base64 of the kit's PNG number ``index`` (its length is what the byte budget counts)."""
    return png_b64(index, rows)


def img(index: int, rows: int = 0, style: str = "image") -> dict[str, Any]:
    """An image block carrying the kit's PNG number ``index``, in the Anthropic or OpenAI shape."""
    return image_block(png_b64(index, rows), style)


def refused() -> dict[str, Any]:
    """An image-like block that yields no image (an SSRF target)."""
    return guard_block("ssrf-loopback-v4")


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*blocks: Any) -> Message:
    """A user turn: one string argument is string content, anything else a list of blocks."""
    if len(blocks) == 1 and isinstance(blocks[0], str):
        return {"role": "user", "content": blocks[0]}
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> Message:
    if len(blocks) == 1 and isinstance(blocks[0], str):
        return {"role": "assistant", "content": blocks[0]}
    return {"role": "assistant", "content": list(blocks)}


def case(
    *messages: Message,
    env: dict[str, str] | None = None,
    tool_preamble: str = "",
    native_mode: bool = False,
) -> dict[str, Any]:
    """An IMG case as the properties pass it to the model (vision on by default: no preamble)."""
    return {
        "messages": list(messages),
        "env": dict(env or {}),
        "tool_preamble": tool_preamble,
        "native_mode": native_mode,
    }


def no_drops(**counts: int) -> dict[str, int]:
    """The five drop reasons, all 0 except the given ones."""
    return {"cap": 0, "bytes": 0, "truncated": 0, "no_vision": 0, "unextractable": 0} | counts

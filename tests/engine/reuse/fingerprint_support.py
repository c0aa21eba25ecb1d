"""Helpers for the fingerprint tests: message builders and digests computed independently of the engine."""

from __future__ import annotations

import hashlib


def sha256_hex(text: str) -> str:
    """The SHA-256 of the UTF-8 of an (ASCII or well-formed) text, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def user(content: object) -> dict[str, object]:
    return {"role": "user", "content": content}


def assistant(content: object, tool_calls: object = None) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def system(content: object) -> dict[str, object]:
    return {"role": "system", "content": content}

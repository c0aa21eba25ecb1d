"""A tag that makes one example's request unique, as a real client's text would be.

A gateway that outlives examples (one launched for the whole run) keeps a response cache and a
conversation pool; the tag keeps an example from being answered from an earlier one's turn, without
sampling parameters a gateway may refuse. Checks that compare prompts remove it (:data:`TAG_RE`).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

TAG_RE = re.compile(r"\[case [0-9a-f]{12}\] ")


def new_tag() -> str:
    return f"[case {uuid.uuid4().hex[:12]}] "


def tagged(messages: list[dict[str, Any]], tag: str | None = None) -> list[dict[str, Any]]:
    """``messages`` with the tag in front of the first message's text (a text block in front of a
    parts list); the caller's objects are not changed."""
    if not messages:
        return messages
    tag = tag or new_tag()
    first = messages[0]
    content = first.get("content")
    if isinstance(content, str):
        first = {**first, "content": tag + content}
    elif isinstance(content, list):
        first = {**first, "content": [{"type": "text", "text": tag}, *content]}
    return [first, *messages[1:]]


def untagged(text: str) -> str:
    return TAG_RE.sub("", text)

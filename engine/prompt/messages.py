"""Chat messages as the Cascade prompt builder sees them, and the role split of client.js."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A message's content: a string, a list of content blocks (parsed JSON, normally dicts), or None.
Content = str | Sequence[Any] | None

CONVERSATION_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True)
class Message:
    role: str
    content: Content


def split_roles(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """``(system, convo)``: role ``system``, and roles ``user``/``assistant`` in order.

    Every other role (``tool``, ``developer``, ...) is dropped, as in client.js.
    """
    system = [m for m in messages if m.role == "system"]
    convo = [m for m in messages if m.role in CONVERSATION_ROLES]
    return system, convo

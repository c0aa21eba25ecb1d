"""The kit's model of SCOPE: what one request did upstream, read from the fake's journal.

A request reached the LS when the fake accepted a Send for it; it was answered from a cache when it
reached none. A Send resumed a cascade when an earlier Send named the same cascade id; otherwise the
cascade is fresh. Each turn a property sends carries a marker (:func:`marker`), ASCII and unique to the
example, so whether a turn's text reached a Send is read without guessing how a gateway escapes or
frames the rest of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.models.journal import cascade_of, send_text, sends, unescaped


def marker(tag: str, name: str) -> str:
    """The marker of one turn (``name``) of the example with ``tag``: ASCII, no JSON or markup escapes it."""
    return f"(({name}-{tag}))"


def marked(text: str, mark: str) -> str:
    """``text`` carrying ``mark`` at its end."""
    return f"{text} {mark}"


@dataclass(frozen=True)
class Upstream:
    """What one request did on the wire: the Sends the fake accepted for it, in order, and which of them
    continued a cascade an earlier Send had named."""

    sends: tuple[Mapping[str, Any], ...]
    continued: tuple[bool, ...]  # per Send: whether it went to a cascade an earlier Send had named

    @property
    def reached(self) -> bool:
        """Whether the request reached the LS (False: it was answered from a cache)."""
        return bool(self.sends)

    @property
    def fresh(self) -> bool:
        """Whether the request's last Send went to a cascade no earlier Send had named."""
        return bool(self.continued) and not self.continued[-1]

    @property
    def resumed(self) -> bool:
        """Whether the request's last Send continued a cascade an earlier Send had named."""
        return bool(self.continued) and self.continued[-1]

    @property
    def cascade(self) -> str:
        return cascade_of(self.sends[-1]) if self.sends else ""

    @property
    def text(self) -> str:
        """The text of the request's last Send, read modulo escaped closing tags."""
        return unescaped(send_text(self.sends[-1])) if self.sends else ""

    def describe(self) -> str:
        if not self.sends:
            return "no Send (answered from a cache)"
        return f"a {'fresh' if self.fresh else 'resumed'} cascade ({self.cascade})"


def upstream(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> Upstream:
    """What the request made between the journal ``before`` it and the journal ``after`` it."""
    named = {cascade_of(entry) for entry in sends(before)}
    made = sends(after[len(before) :])
    continued: list[bool] = []
    for entry in made:
        continued.append(cascade_of(entry) in named)
        named.add(cascade_of(entry))
    return Upstream(tuple(made), tuple(continued))


def missing(text: str, marks: Iterable[str]) -> list[str]:
    """The markers of ``marks`` that ``text`` does not carry."""
    return [mark for mark in marks if mark not in text]


def carried(text: str, marks: Iterable[str]) -> list[str]:
    """The markers of ``marks`` that ``text`` carries."""
    return [mark for mark in marks if mark in text]

"""STORE through the wire: what a store kept, read from the conversation a gateway replays.

A gateway that does not serve an entry's items still shows what it stored: a turn continuing the
entry (``previous_response_id``) replays the stored conversation to the LS, in the gateway's own
framing. The kit reads that prompt text with the same tokens as :mod:`conformance.models.store`:
every generated message starts its first text with ``⟦mN⟧``, so which messages were kept, in which
order, and where the notices are is plain from the text; an ``arguments`` value is found whole,
replaced by the ``__truncated__`` document, or cut (its start without its whole).

What the text cannot show (ids of calls, whether a notice is a text block or a string prefix) is
not judged from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    TRUNCATION_MARKER,
    looks_like_json_document,
    text_of,
    token,
)

# A notice anywhere in the replayed text (the stored one starts a message's text).
NOTICE_IN_TEXT = re.compile(r"\[\.\.\. (\d+) earlier message\(s\) dropped by the response store[^\]]*\]")
# This many characters of an argument's start, found without the whole, are a cut argument.
_CUT_PROBE = 40


@dataclass(frozen=True)
class Replayed:
    """The prompt a gateway replayed for a stored conversation, against what was submitted."""

    text: str
    submitted: Sequence[Mapping[str, Any]]

    def kept(self) -> list[int]:
        """Positions of the submitted messages whose token is in the text, in submitted order."""
        return [i for i in self.tokened() if str(_token_of(self.submitted[i], i)) in self.text]

    def tokened(self) -> list[int]:
        """Positions of the submitted messages that carry their token (tool calls carry an id)."""
        return [i for i, message in enumerate(self.submitted) if _token_of(message, i) is not None]

    def order_problem(self) -> str | None:
        """The kept messages must appear in their submitted order."""
        places = [(self.text.find(str(_token_of(self.submitted[i], i))), i) for i in self.kept()]
        found = [i for _, i in sorted(places)]
        return None if found == self.kept() else f"the replayed messages are out of order: {found}"

    def notice_counts(self) -> list[int]:
        return [int(found.group(1)) for found in NOTICE_IN_TEXT.finditer(self.text)]

    def argument_fate(self, arguments: str) -> str:
        """``whole``, ``cut`` (its start without the whole), ``compacted`` (absent, and the
        ``__truncated__`` document is in the text) or ``absent``."""
        if arguments in self.text:
            return "whole"
        if arguments[:_CUT_PROBE] in self.text or self._cut_shorter_than_the_probe(arguments):
            return "cut"
        if ARGUMENTS_TRUNCATION_JSON in self.text:
            return "compacted"
        return "absent"

    def _cut_shorter_than_the_probe(self, arguments: str) -> bool:
        """A cut that kept fewer characters than the probe (a store that cuts by bytes may keep one): the
        truncation marker right after a start of ``arguments`` that is more than whitespace."""
        at = self.text.find(TRUNCATION_MARKER)
        while at >= 0:
            for kept in range(min(_CUT_PROBE, len(arguments)) - 1, 0, -1):
                if arguments[:kept].strip() and self.text.endswith(arguments[:kept], 0, at):
                    return True
            at = self.text.find(TRUNCATION_MARKER, at + 1)
        return False

    def compacted_more_than_json(self) -> bool:
        """Whether the ``__truncated__`` document stands in the text more often than there are JSON
        documents among the submitted arguments that are not there whole: then some other value (plain
        text) was replaced by it. A JSON document under the budget may be replaced too, to fit the entry."""
        documents = [a for a in call_arguments(self.submitted) if looks_like_json_document(a) and a not in self.text]
        return self.text.count(ARGUMENTS_TRUNCATION_JSON) > len(documents)

    @property
    def has_cut_marker(self) -> bool:
        return TRUNCATION_MARKER.strip() in self.text


def _token_of(message: Mapping[str, Any], index: int) -> str | None:
    text = text_of(message)
    return token(index) if isinstance(text, str) and text.startswith(token(index)) else None


def call_arguments(submitted: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every ``arguments`` string of the submitted calls (Chat tool calls, Responses items)."""
    found: list[str] = []
    for message in submitted:
        if isinstance(message.get("arguments"), str):
            found.append(message["arguments"])
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, Mapping) else None
            if isinstance(arguments, str):
                found.append(arguments)
    return found

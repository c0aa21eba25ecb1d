"""The ``stop`` parameter applied to streamed text: the answer ends before the first stop sequence.

Text arrives in pieces, and a stop sequence may straddle two of them, so :class:`StopCut` holds back
the last ``longest - 1`` characters until it knows they do not start one. Each piece is searched
together with that short tail only, so a megabyte answer costs linear time.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopCut:
    """Feed text pieces in order; each call returns what may be delivered now. After a hit, nothing
    more is delivered and :attr:`hit` is true."""

    def __init__(self, sequences: Sequence[str]) -> None:
        self._sequences = tuple(s for s in sequences if s)
        self._hold = max((len(s) for s in self._sequences), default=1) - 1
        self._tail = ""
        self.hit = False

    @property
    def active(self) -> bool:
        return bool(self._sequences)

    def feed(self, text: str) -> str:
        if self.hit:
            return ""
        if not self._sequences:
            return text
        window = self._tail + text
        first = min((i for i in (window.find(s) for s in self._sequences) if i >= 0), default=-1)
        if first >= 0:
            self.hit = True
            self._tail = ""
            return window[:first]
        keep = min(self._hold, len(window))
        self._tail = window[len(window) - keep :] if keep else ""
        return window[: len(window) - keep]

    def finish(self) -> str:
        """What is still held back once the answer has ended (no stop sequence started in it)."""
        tail, self._tail = self._tail, ""
        return "" if self.hit else tail

"""How a turn's polls reach the stream (``FGW_POLLING``).

Off (the default), the answer's text is streamed as each poll finds it and the reasoning is not
streamed. On, the gateway streams what a window of two polls found, the reasoning too, the way a
gateway that emits per poll of a real LS does: which channel a window finds first is a matter of
timing, and turns fall alternately (the issue's example: one run gave the reasoning before the
content, the next run the content before the reasoning). Windows count polls that found something,
so the same answer is cut into the same windows on every run and only the interleaving differs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOW_POLLS = 2
_turns = itertools.count()


@dataclass
class PollWindows:
    """Feeds a stream's two channels from what the polls found."""

    content: Callable[[str], None]
    reasoning: Callable[[str], None]
    polling: bool
    content_first: bool = field(default_factory=lambda: next(_turns) % 2 == 1)
    _window: list[tuple[str, str]] = field(default_factory=list)

    def found(self, thinking: str, text: str) -> None:
        """One poll's growth: the reasoning and the text."""
        if not self.polling:
            if text:
                self.content(text)
            return
        self._window.append((thinking, text))
        if len(self._window) >= WINDOW_POLLS:
            self.flush()

    def flush(self) -> None:
        """Stream what the open window found, each channel whole, in the order this turn finds them."""
        thinking = "".join(piece for piece, _ in self._window)
        text = "".join(piece for _, piece in self._window)
        self._window.clear()
        for emit, piece in ((self.content, text), (self.reasoning, thinking))[:: 1 if self.content_first else -1]:
            if piece:
                emit(piece)

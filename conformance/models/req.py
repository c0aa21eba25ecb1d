"""The kit's model of REQ: what ``stop`` leaves of an answer."""

from __future__ import annotations

from collections.abc import Sequence


def stop_sequences(stop: str | Sequence[str]) -> list[str]:
    return [stop] if isinstance(stop, str) else list(stop)


def text_before_stop(text: str, stop: str | Sequence[str]) -> str:
    """``text`` up to (not including) the earliest occurrence of any stop sequence; all of it when none occurs."""
    found = [i for i in (text.find(s) for s in stop_sequences(stop)) if i >= 0]
    return text[: min(found)] if found else text

"""JavaScript's string length, as every seed measures text: ``text.length``, in UTF-16 units."""

from __future__ import annotations


def utf16_units(text: str) -> int:
    """``text.length`` in JavaScript (a lone surrogate, which JavaScript strings may hold, is one unit)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2

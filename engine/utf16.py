"""JavaScript string lengths: ``String.prototype.length`` counts UTF-16 code units, not code points."""

from __future__ import annotations


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: an astral character counts 2, a lone surrogate 1."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2

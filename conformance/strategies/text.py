"""Texts and JSON the properties and tests generate: unicode that breaks naive clients, JSON values
and tool-call arguments up to tens of kilobytes.

Texts mix arbitrary UTF-8-encodable characters with the ones that break naive clients: newlines,
astral-plane characters (surrogate pairs in UTF-16 clients), combining marks, ZWJ sequences,
right-to-left script and NUL. Shrinking goes towards short ASCII-ish text.
"""

from __future__ import annotations

import json
import string
from functools import cache
from typing import Any

from hypothesis import strategies as st

from conformance.models.js_text import utf16_units

# Characters (and grapheme clusters) worth having in every generated text.
SPECIAL_TEXTS: tuple[str, ...] = (
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\U0001f600",  # emoji, astral plane
    "\U0001d518",  # mathematical fraktur U, astral plane
    "\U00010348",  # gothic letter hwair, astral plane
    "\U0001f9d1\u200d\U0001f4bb",  # ZWJ sequence
    "e\u0301",  # combining acute accent
    "\u4e2d\u6587",  # CJK
    "\u05e2\u05d1\u05e8\u05d9\u05ea",  # right-to-left script
    "\u2028",  # line separator
    "\ufeff",  # byte order mark
    '"\\',  # JSON-significant characters
)

# Single characters the alphabet over-weights; sequences such as "\r\n", ZWJ emoji and combining
# accents arise from them and from :data:`SPECIAL_TEXTS`.
SPECIAL_CHARS: tuple[str, ...] = tuple(
    sorted({c for text in SPECIAL_TEXTS for c in text} | {"\U0001f680", "\u00e9", "\u0645"})
)

_ALPHABET = st.one_of(
    # Anything UTF-8 can carry: every code point but the surrogates. Said as a category, not as
    # codec="utf-8", which makes Hypothesis test all 1.1 million code points (over a second) in each
    # process whose storage has not kept that answer yet: every fresh run, every worker.
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from(SPECIAL_CHARS),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
)


@cache
def unicode_text(*, min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Text of ``min_size`` to about ``max_size`` characters, over-weighting
    :data:`SPECIAL_CHARS`, sometimes with one of :data:`SPECIAL_TEXTS` spliced in."""
    plain = st.text(_ALPHABET, min_size=min_size, max_size=max_size)
    half = st.text(_ALPHABET, max_size=max(1, max_size // 2))
    spliced = st.tuples(half, st.sampled_from(SPECIAL_TEXTS), half).map("".join)
    return st.one_of(plain, spliced) if min_size <= 1 else plain


@cache
def identifiers(prefix: str = "") -> st.SearchStrategy[str]:
    """``prefix`` then a lowercase ASCII identifier: tool names, ids, path segments."""
    first = st.sampled_from(string.ascii_lowercase)
    rest = st.text(string.ascii_lowercase + string.digits + "_", max_size=15)
    return st.tuples(first, rest).map(lambda parts: prefix + "".join(parts))


@cache
def json_values() -> st.SearchStrategy[Any]:
    """JSON scalars, and lists and objects of them (nested up to two levels)."""
    scalars: st.SearchStrategy[Any] = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        unicode_text(max_size=16),
    )
    keys = unicode_text(max_size=8)
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=4),
        st.dictionaries(keys, st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=4),
    )


@st.composite
def large_json_arguments(draw: st.DrawFn) -> str:
    """A JSON object of a few to tens of kilobytes: a file write with a long, repeated body."""
    seed = draw(unicode_text(min_size=1, max_size=12))
    repeat = draw(st.integers(min_value=50, max_value=2000))
    return json.dumps(
        {
            "path": "/work/" + draw(identifiers()) + ".txt",
            "content": seed * repeat,
            "lines": draw(st.lists(unicode_text(max_size=16), max_size=20)),
        },
        ensure_ascii=False,
    )


@cache
def json_arguments() -> st.SearchStrategy[str]:
    small = st.dictionaries(identifiers(), json_values(), max_size=5).map(lambda d: json.dumps(d, ensure_ascii=False))
    return st.one_of(small, large_json_arguments())


@cache
def prompts() -> st.SearchStrategy[str]:
    """A user message as the gateway would send it: multi-line unicode, sometimes empty."""
    return unicode_text(max_size=80)


# ---------------------------------------------------------------------------- lengths at a floor

#: What a text measured in UTF-16 units is made of where a length meets a floor or a cap: the kit's
#: usual unicode mix, astral characters (one code point, two units: a count in code points comes out
#: short), lone surrogates (one unit each; a high one followed by a low one reads as a pair in UTF-16
#: but stays two code points), or combining sequences (a base and its marks: one glyph, a unit a code
#: point). Lone surrogates cannot cross a UTF-8 wire (protobuf, or a gateway forwarding them): draw
#: them only where the text goes to the target's code directly.
UNIT_SHAPES: tuple[str, ...] = ("mixed", "astral", "lone_surrogates", "combining")
WIRE_SAFE_SHAPES: tuple[str, ...] = tuple(s for s in UNIT_SHAPES if s != "lone_surrogates")

_ASTRAL = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF)
_LONE = st.integers(0xD800, 0xDFFF).map(chr)
_SPLIT_PAIR = st.tuples(st.integers(0xD800, 0xDBFF), st.integers(0xDC00, 0xDFFF)).map(lambda p: chr(p[0]) + chr(p[1]))
_COMBINING = st.tuples(
    st.sampled_from(string.ascii_letters), st.lists(st.integers(0x300, 0x36F).map(chr), min_size=1, max_size=3)
).map(lambda p: p[0] + "".join(p[1]))
_PIECES: dict[str, st.SearchStrategy[str]] = {
    "astral": _ASTRAL,
    "lone_surrogates": st.one_of(_LONE, _SPLIT_PAIR, st.sampled_from(string.ascii_letters)),
    "combining": _COMBINING,
}


def around(*floors: int) -> tuple[int, ...]:
    """Each floor, one under it and one over it (in that order: the floor itself first)."""
    return tuple(length for floor in floors for length in (floor, floor - 1, floor + 1))


@st.composite
def text_of_units(draw: st.DrawFn, units: int, shape: str, head: str = "") -> str:
    """``head``, then a text of ``shape`` (:data:`UNIT_SHAPES`), ``units`` UTF-16 units in all: a few
    drawn pieces repeated, an ASCII ``x`` where the next character would overshoot."""
    if shape == "mixed":
        pieces = [draw(unicode_text(min_size=1, max_size=8))]
    else:
        pieces = draw(st.lists(_PIECES[shape], min_size=1, max_size=8))
        if shape == "lone_surrogates":
            pieces.insert(0, draw(_LONE))  # at least one surrogate with no partner drawn beside it
    out, used, index = [head], utf16_units(head), 0
    filler = "".join(pieces)
    while used < units:
        char = filler[index % len(filler)]
        index += 1
        size = utf16_units(char)
        if used + size > units:
            char, size = "x", 1
        out.append(char)
        used += size
    return "".join(out)

"""JavaScript semantics the engine reproduces, each defined once.

The baseline is Node code; wherever its output depends on how JavaScript treats a value, the
engine follows JavaScript, not Python:

* whitespace: :data:`JS_WHITESPACE` (what ``trim()``, ``parseInt`` and a regex ``\\s`` skip),
  :func:`js_trim`;
* numbers: :func:`js_number` (``Number.prototype.toString``), :func:`js_to_fixed`,
  :func:`js_parse_int` (``parseInt(value, 10)``), :func:`js_to_number` (``Number(value)``);
* values: :func:`js_string` (``String()``), :func:`js_truthy`, :func:`js_or` (``a || b``),
  :func:`js_get` (``value?.[key]``);
* strings: :func:`utf16_len` (``.length``), :func:`utf16_sort_key` (default ``sort()`` order),
  :func:`js_utf8` (Node's UTF-8 of a string);
* JSON: :func:`js_quote`, :func:`json_number`, :func:`js_stringify` (``JSON.stringify``, JS key
  order), :func:`stable_stringify` (keys sorted), :func:`js_json_parse` (``JSON.parse``).

Values are parsed JSON (dict, list, str, int, float, bool, None); tuples count as arrays.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

# ------------------------------------------------------------------------------------ whitespace

#: ECMAScript WhiteSpace (TAB, VT, FF, SP, NBSP, ZWNBSP, category Zs) and LineTerminator (LF, CR,
#: LS, PS): what ``trim()`` and ``parseInt`` skip and a regex ``\s`` matches. U+180E is not in it
#: (it left Zs in Unicode 6.3), nor U+200B.
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: A regex character class matching one JS whitespace character (JS ``\s``).
JS_SPACE_CLASS: Final = f"[{re.escape(JS_WHITESPACE)}]"
#: ECMAScript LineTerminator: where a JS ``^``/``$`` with the ``m`` flag match.
JS_LINE_TERMINATORS: Final = "\n\r\u2028\u2029"


def js_trim(text: str) -> str:
    """``String.prototype.trim``: strips JS whitespace and line terminators (not ``str.strip``'s set)."""
    return text.strip(JS_WHITESPACE)


# ------------------------------------------------------------------------------------ numbers

_MAX_SAFE_INTEGER = 2**53


def js_number(value: float) -> str:
    """``Number.prototype.toString()`` for a finite or non-finite double."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # covers -0
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # position of the decimal point relative to the first significant digit
    point = len(whole) + exponent if whole != "0" else exponent - (len(frac) - len(frac.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        text = digits + exp if k == 1 else digits[0] + "." + digits[1:] + exp
    return sign + text


def _int_text(value: int) -> str:
    """``String(n)`` of a Python int, which JS holds as a double."""
    if abs(value) <= _MAX_SAFE_INTEGER:
        return str(value)
    try:
        return js_number(float(value))
    except OverflowError:
        return "Infinity" if value > 0 else "-Infinity"


def js_to_fixed(value: float, digits: int) -> str:
    """``Number.prototype.toFixed(digits)`` for a finite number below 1e21 in magnitude.

    JS rounds the exact binary value and picks the larger candidate on a tie (``0.25`` gives
    ``0.3``), which is ``ROUND_HALF_UP`` on the magnitude.
    """
    text = str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and value == 0 else text  # (-0).toFixed(1) is "0.0"


_PARSE_INT = re.compile(f"{JS_SPACE_CLASS}*([+-]?)([0-9]+)")


def js_parse_int(value: str) -> int | None:
    """``parseInt(value, 10)`` restricted to finite results; ``None`` stands for NaN and +/-Infinity.

    Leading JS whitespace is skipped, an optional sign and the longest run of ASCII digits are
    read, the rest is ignored (``"12abc"`` is 12).
    """
    match = _PARSE_INT.match(value)
    if match is None:
        return None
    number = int(match.group(2))
    try:
        float(number)
    except OverflowError:
        return None
    return -number if match.group(1) == "-" else number


_DECIMAL_LITERAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Infinity)")
_PREFIXED_LITERAL = re.compile(r"0([xXoObB])([0-9a-fA-F]+)")
_PREFIX_BASES: Final = {"x": 16, "o": 8, "b": 2}


def js_to_number(value: object) -> float:
    """``Number(value)`` for JSON values (NaN for what JS cannot convert)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = js_trim(value)
        if not text:
            return 0.0
        prefixed = _PREFIXED_LITERAL.fullmatch(text)
        if prefixed:
            try:
                return float(int(prefixed.group(2), _PREFIX_BASES[prefixed.group(1).lower()]))
            except ValueError:
                return math.nan
        return float(text) if _DECIMAL_LITERAL.fullmatch(text) else math.nan
    if isinstance(value, list) and len(value) <= 1:
        return js_to_number(value[0] if value else "")
    return math.nan


# ------------------------------------------------------------------------------------ values


def js_string(value: object) -> str:
    """``String(value)`` for JSON-shaped values (``None`` is ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, list | tuple):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_truthy(value: object) -> bool:
    """JS truthiness: every object and array is truthy, ``0``/``NaN``/``""``/``null``/``false`` are not."""
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True


def js_or(*values: object) -> object:
    """``a || b || ...``: the first truthy value, else the last one."""
    for value in values[:-1]:
        if js_truthy(value):
            return value
    return values[-1] if values else None


def js_get(value: object, key: str) -> object:
    """``value?.[key]`` on parsed JSON: a missing key, or a non-object, gives ``None``."""
    return value.get(key) if isinstance(value, Mapping) else None


# ------------------------------------------------------------------------------------ strings


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: an astral character counts 2, a lone surrogate 1."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_sort_key(text: str) -> bytes:
    """The order of JS ``Array.prototype.sort`` on strings: by UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


_SURROGATE = re.compile("[\ud800-\udfff]")


def js_to_well_formed(text: str) -> str:
    """``String.prototype.toWellFormed()``: each lone surrogate becomes U+FFFD, as Node's UTF-8 encoding
    writes it (a pair of surrogate code points is one character, as in a JS string)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def js_json_text(text: str) -> str:
    """JSON text from ``json.dumps(..., ensure_ascii=False)`` as ``JSON.stringify`` writes it: a lone
    surrogate (it can only sit inside a string) becomes its ``\\uXXXX`` escape, so the text encodes to UTF-8."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", _js_units(text))


def compact_json_text(value: object) -> str:
    """``value`` as compact JSON text (no spaces, non-ASCII kept, Python's number text) that encodes to UTF-8:
    a lone surrogate is escaped as ``JSON.stringify`` does (:func:`js_json_text`). What the engine writes
    to clients and into prompts."""
    return js_json_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def js_utf8(text: str) -> bytes:
    """Node's UTF-8 encoding of a JS string: lone surrogates become U+FFFD."""
    return js_to_well_formed(text).encode("utf-8")


def well_formed_json(value: object) -> object:
    """A parsed JSON document with :func:`js_to_well_formed` applied to every string, keys included.

    Iterative, in place on lists and dicts (as ``json.loads`` returns them), so a document nested as deep
    as the parser allows is walked without recursion."""
    if isinstance(value, str):
        return js_to_well_formed(value)
    pending: list[object] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = js_to_well_formed(item)
                elif isinstance(item, list | dict):
                    pending.append(item)
        elif isinstance(node, dict):
            members = list(node.items())
            node.clear()
            for key, item in members:
                if isinstance(item, str):
                    item = js_to_well_formed(item)
                elif isinstance(item, list | dict):
                    pending.append(item)
                node[js_to_well_formed(key) if isinstance(key, str) else key] = item
    return value


def _js_units(text: str) -> str:
    """``text`` as a JS string would hold it: surrogate code points that form a pair are joined."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# ------------------------------------------------------------------------------------ JSON

_MAX_ARRAY_INDEX = 2**32 - 2
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def js_quote(text: str) -> str:
    """``JSON.stringify(string)``: short escapes, ``\\u00XX`` below 0x20, lone surrogates escaped."""
    out = ['"']
    for ch in _js_units(text):
        code = ord(ch)
        short = _SHORT_ESCAPES.get(ch)
        if short is not None:
            out.append(short)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_number(value: int | float) -> str:
    """``JSON.stringify(number)``: JS rendering, integers beyond 2**53 rounded to a double, non-finite as ``null``."""
    text = _int_text(value) if isinstance(value, int) else js_number(value)
    return "null" if text.endswith(("Infinity", "NaN")) else text


def _is_array_index(key: str) -> bool:
    if not key.isascii() or not key.isdigit():
        return False
    if len(key) > 1 and key[0] == "0":
        return False
    return int(key) <= _MAX_ARRAY_INDEX


def _members(obj: Mapping[object, object], sort_keys: bool) -> list[tuple[str, object]]:
    pairs = [(key if isinstance(key, str) else js_string(key), val) for key, val in obj.items()]
    if sort_keys:
        return sorted(pairs, key=lambda pair: utf16_sort_key(pair[0]))
    # a JS object's own order: array-index keys ascending, then the others in insertion order
    index_pairs = sorted((p for p in pairs if _is_array_index(p[0])), key=lambda p: int(p[0]))
    return index_pairs + [p for p in pairs if not _is_array_index(p[0])]


def _stringify(value: object, *, sort_keys: bool, strict: bool) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return js_quote(value)
    if isinstance(value, int | float):
        return json_number(value)
    if isinstance(value, list | tuple):
        items = [_stringify(item, sort_keys=sort_keys, strict=strict) for item in value]
        return "[" + ",".join("null" if item is None else item for item in items) + "]"
    if isinstance(value, Mapping):
        members = []
        for key, val in _members(value, sort_keys):
            rendered = _stringify(val, sort_keys=sort_keys, strict=strict)
            if rendered is not None:
                members.append(js_quote(key) + ":" + rendered)
        return "{" + ",".join(members) + "}"
    if strict:
        raise TypeError(f"stable_stringify: {type(value).__name__} is not a JSON value")
    return None


def js_stringify(value: object) -> str | None:
    """``JSON.stringify(value)`` with no replacer and no indent; ``None`` stands for ``undefined``.

    Compact (``,`` and ``:``), non-ASCII text kept, lone surrogates escaped, numbers as
    :func:`json_number`, object keys in a JS object's order (array-index keys ascending, then the
    others in insertion order). Values JSON cannot express (bytes, sets, other objects) are
    ``undefined``: dropped from objects, ``null`` inside arrays, ``None`` at the top level.
    """
    return _stringify(value, sort_keys=False, strict=False)


def stable_stringify(value: object) -> str:
    """The pool's ``stableStringify``: :func:`js_stringify` with object keys sorted, recursively.

    Keys sort by UTF-16 code units (JS default sort). Values JSON cannot hold raise ``TypeError``
    (a parsed JSON request never has them).
    """
    text = _stringify(value, sort_keys=True, strict=True)
    assert text is not None  # strict: an undefined value raised instead
    return text


def _reject_constant(constant: str) -> object:
    raise ValueError(f"JSON.parse rejects {constant}")


def js_json_parse(text: str) -> object:
    """``JSON.parse``: no NaN/Infinity literals (Python's json accepts them); ``ValueError`` otherwise."""
    return json.loads(text, parse_constant=_reject_constant)

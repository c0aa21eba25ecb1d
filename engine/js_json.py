"""JavaScript value semantics the baseline leans on: ``JSON.stringify``, ``String()`` and truthiness.

Content blocks arrive as parsed JSON (dict, list, str, int, float, bool, None). The baseline renders
them with ``JSON.stringify`` and tests them with JS truthiness, so the engine reproduces both:

* ``js_stringify`` prints compact JSON (``,`` and ``:``), keeps non-ASCII text as is, escapes lone
  surrogates as ``\\udXXX``, prints numbers as JS does (``1`` not ``1.0``, ``1e-7`` not ``1e-07``,
  ``NaN``/``Infinity`` as ``null``) and orders object keys as a JS object does: array-index keys
  ("0", "1", ...) first in ascending order, then the other keys in insertion order.
* Values JSON cannot express (bytes, sets, arbitrary objects) are ``undefined``: dropped from
  objects, ``null`` inside arrays, ``None`` at the top level.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

_MAX_SAFE_INTEGER = 2**53
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
    if abs(value) <= _MAX_SAFE_INTEGER:
        return str(value)
    try:
        return js_number(float(value))
    except OverflowError:
        return "Infinity" if value > 0 else "-Infinity"


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


def _js_units(text: str) -> str:
    """``text`` as a JS string would hold it: surrogate code points that form a pair are joined."""
    if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


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


def _is_array_index(key: str) -> bool:
    if not key.isascii() or not key.isdigit():
        return False
    if len(key) > 1 and key[0] == "0":
        return False
    return int(key) <= _MAX_ARRAY_INDEX


def _ordered_keys(obj: Mapping[object, object]) -> list[tuple[str, object]]:
    pairs = [(key if isinstance(key, str) else js_string(key), val) for key, val in obj.items()]
    index_pairs = sorted((p for p in pairs if _is_array_index(p[0])), key=lambda p: int(p[0]))
    return index_pairs + [p for p in pairs if not _is_array_index(p[0])]


def js_stringify(value: object) -> str | None:
    """``JSON.stringify(value)`` with no replacer and no indent; ``None`` stands for ``undefined``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return js_quote(value)
    if isinstance(value, int):
        text = _int_text(value)
        return "null" if text.endswith("Infinity") else text
    if isinstance(value, float):
        return js_number(value) if math.isfinite(value) else "null"
    if isinstance(value, list | tuple):
        items = [js_stringify(item) for item in value]
        return "[" + ",".join("null" if item is None else item for item in items) + "]"
    if isinstance(value, Mapping):
        members = []
        for key, val in _ordered_keys(value):
            rendered = js_stringify(val)
            if rendered is not None:
                members.append(js_quote(key) + ":" + rendered)
        return "{" + ",".join(members) + "}"
    return None

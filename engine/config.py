"""Environment switches of the Cascade prompt builder, parsed with the mirror's JavaScript semantics.

* ``CASCADE_MAX_HISTORY_BYTES`` / ``CASCADE_1M_HISTORY_BYTES``: the history budget in UTF-16 code
  units, read per call through ``positiveIntEnv`` (only ints > 0; anything else gives the default).
* ``CASCADE_MAX_HISTORY_IMAGES`` / ``CASCADE_MAX_HISTORY_IMAGE_BYTES`` (seed 000): bounds on the
  images replayed from earlier turns. Non-negative ints: ``0`` is accepted and disables history
  images (still counted); anything unparseable or negative gives the default.

Both parsers follow ``parseInt(value, 10)`` (:func:`engine.js.js_parse_int`): leading JS whitespace
is skipped, an optional sign and the longest run of ASCII digits are read, the rest is ignored
(``"12abc"`` is 12), and a value too large for a double (``Infinity``) is not finite, so it gives
the default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine.js import js_parse_int

# client.js cascadeHistoryBudget: /\b1m\b|[-_]1m$/i. JS \b is ASCII-only and $ (no m flag) is the
# very end of the string, hence re.ASCII and \Z.
_ONE_M_UID = re.compile(r"\b1m\b|[-_]1m\Z", re.IGNORECASE | re.ASCII)

DEFAULT_HISTORY_BYTES = 600_000
DEFAULT_1M_HISTORY_BYTES = 900_000
DEFAULT_MAX_HISTORY_IMAGES = 4
# 4 x the 400 000-character re-encode target (WINDSURFAPI_IMAGE_MAX_BYTES), in base64 characters.
DEFAULT_MAX_HISTORY_IMAGE_BYTES = 1_600_000


def positive_int_env(env: Mapping[str, str], name: str, default: int) -> int:
    """client.js ``positiveIntEnv``: an int > 0, otherwise ``default`` (so ``0`` cannot be set)."""
    number = js_parse_int(env.get(name) or "")
    return number if number is not None and number > 0 else default


def non_negative_int_env(env: Mapping[str, str], name: str, default: int) -> int:
    """Like :func:`positive_int_env` but ``0`` is accepted (an explicit "off")."""
    number = js_parse_int(env.get(name) or "")
    return number if number is not None and number >= 0 else default


def is_1m_model(model_uid: str) -> bool:
    return _ONE_M_UID.search(model_uid) is not None


def history_budget(model_uid: str, env: Mapping[str, str]) -> int:
    """The history budget in UTF-16 code units (client.js ``cascadeHistoryBudget``), read per call."""
    if is_1m_model(model_uid):
        return positive_int_env(env, "CASCADE_1M_HISTORY_BYTES", DEFAULT_1M_HISTORY_BYTES)
    return positive_int_env(env, "CASCADE_MAX_HISTORY_BYTES", DEFAULT_HISTORY_BYTES)


@dataclass(frozen=True)
class HistoryImageLimits:
    """Bounds on images replayed from earlier turns: a count and a total of base64 characters."""

    max_images: int = DEFAULT_MAX_HISTORY_IMAGES
    max_bytes: int = DEFAULT_MAX_HISTORY_IMAGE_BYTES

    def __post_init__(self) -> None:
        if self.max_images < 0 or self.max_bytes < 0:
            raise ValueError(f"history image limits must be non-negative, got {self}")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HistoryImageLimits:
        return cls(
            max_images=non_negative_int_env(env, "CASCADE_MAX_HISTORY_IMAGES", DEFAULT_MAX_HISTORY_IMAGES),
            max_bytes=non_negative_int_env(env, "CASCADE_MAX_HISTORY_IMAGE_BYTES", DEFAULT_MAX_HISTORY_IMAGE_BYTES),
        )

"""Process-lifetime counters for images replayed from earlier Cascade turns (seed 000), and the one
structured warning per request that dropped any.

``SendUserCascadeMessage`` carries images only as one flat, message-level list (field 6), so every
history image either rides that list (``attached``) or is counted as dropped under one reason:

* ``cap``: over ``CASCADE_MAX_HISTORY_IMAGES`` (including the explicit ``0``);
* ``bytes``: over ``CASCADE_MAX_HISTORY_IMAGE_BYTES``;
* ``truncated``: its turn was cut by the history budget, so it was never extracted;
* ``no_vision``: the planner runs NO_TOOL (tool preamble, no native bridge) and would not render it;
* ``unextractable``: its turn was replayed but the block yielded no image (a PDF or other file, a
  failed fetch, an image that did not decode completely within the pixel budget, an image the
  shrink pipeline dropped).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, fields
from typing import TypedDict

LOGGER_NAME = "engine.cascade"
log = logging.getLogger(LOGGER_NAME)

DROP_LOG_SUFFIX = (
    "SendUserCascadeMessage carries images only as one flat message-level list (field 6), "
    "so these could not be replayed with their turn"
)

ATTACHED = "cascade_image_history_attached"
DROPPED = "cascade_image_history_dropped"
REASONS: tuple[str, ...] = ("cap", "bytes", "truncated", "no_vision", "unextractable")


class DroppedByReason(TypedDict):
    cap: int
    bytes: int
    truncated: int
    no_vision: int
    unextractable: int


class MetricsSnapshot(TypedDict):
    cascade_image_history_attached: int
    cascade_image_history_dropped: int
    dropped_by_reason: DroppedByReason


@dataclass(frozen=True)
class DropCounts:
    """History images one build did not attach, by reason."""

    cap: int = 0
    bytes: int = 0
    truncated: int = 0
    no_vision: int = 0
    unextractable: int = 0

    @property
    def total(self) -> int:
        return self.cap + self.bytes + self.truncated + self.no_vision + self.unextractable

    def as_dict(self) -> dict[str, int]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def format_drop_log(drops: DropCounts, *, turns: int, attached: int) -> str:
    """The structured line of §1.C; `` unextractable=N`` appears inside the parentheses only when N > 0."""
    extra = f" unextractable={drops.unextractable}" if drops.unextractable > 0 else ""
    return (
        f"{DROPPED} count={drops.total} (cap={drops.cap} bytes={drops.bytes} truncated={drops.truncated} "
        f"no_vision={drops.no_vision}{extra}) turns={turns} attached={attached} \u2014 {DROP_LOG_SUFFIX}"
    )


class ImageHistoryMetrics:
    """Thread-safe attached/dropped counters. The engine uses the process-wide :data:`METRICS`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attached = 0
        self._dropped = dict.fromkeys(REASONS, 0)

    def record(self, drops: DropCounts, *, turns: int, attached: int) -> None:
        """Count one build's outcome and, when anything was dropped, log the structured warning."""
        if attached < 0:
            raise ValueError(f"attached must be >= 0, got {attached}")
        counts = drops.as_dict()
        with self._lock:
            self._attached += attached
            for reason in REASONS:
                self._dropped[reason] += counts[reason]
        if drops.total > 0:
            log.warning("%s", format_drop_log(drops, turns=turns, attached=attached))

    def snapshot(self) -> MetricsSnapshot:
        """``{cascade_image_history_attached, cascade_image_history_dropped, dropped_by_reason: {...}}``."""
        with self._lock:
            dropped = dict(self._dropped)
            attached = self._attached
        by_reason = DroppedByReason(
            cap=dropped["cap"],
            bytes=dropped["bytes"],
            truncated=dropped["truncated"],
            no_vision=dropped["no_vision"],
            unextractable=dropped["unextractable"],
        )
        return {
            "cascade_image_history_attached": attached,
            "cascade_image_history_dropped": sum(dropped.values()),
            "dropped_by_reason": by_reason,
        }

    def reset(self) -> None:
        with self._lock:
            self._attached = 0
            self._dropped = dict.fromkeys(REASONS, 0)


METRICS = ImageHistoryMetrics()


def snapshot() -> MetricsSnapshot:
    return METRICS.snapshot()


def reset() -> None:
    METRICS.reset()

"""History-image counters (seed 000, engine.md 1.C): accumulation across builds and the one structured
warning per build that dropped anything."""

from __future__ import annotations

import logging

import pytest

from engine.prompt.metrics import LOGGER_NAME, DropCounts, ImageHistoryMetrics, format_drop_log

SUFFIX = (
    "SendUserCascadeMessage carries images only as one flat message-level list (field 6), "
    "so these could not be replayed with their turn"
)


def test_a_single_unextractable_image_is_named_in_the_drop_line() -> None:
    assert format_drop_log(DropCounts(unextractable=1), turns=2, attached=0) == (
        "cascade_image_history_dropped count=1 (cap=0 bytes=0 truncated=0 no_vision=0 unextractable=1) "
        f"turns=2 attached=0 \u2014 {SUFFIX}"
    )


def test_dropped_images_accumulate_per_reason_across_builds() -> None:
    metrics = ImageHistoryMetrics()
    metrics.record(DropCounts(cap=1, bytes=2, truncated=3, no_vision=4, unextractable=5), turns=3, attached=1)
    metrics.record(DropCounts(cap=10, bytes=20, truncated=30, no_vision=40, unextractable=50), turns=3, attached=2)
    assert metrics.snapshot() == {
        "cascade_image_history_attached": 3,
        "cascade_image_history_dropped": 165,
        "dropped_by_reason": {"cap": 11, "bytes": 22, "truncated": 33, "no_vision": 44, "unextractable": 55},
    }


def test_a_negative_attached_count_is_refused_with_its_value() -> None:
    with pytest.raises(ValueError, match=r"^attached must be >= 0, got -1$"):
        ImageHistoryMetrics().record(DropCounts(), turns=1, attached=-1)


def test_only_a_build_that_dropped_something_logs_the_structured_warning(caplog: pytest.LogCaptureFixture) -> None:
    metrics = ImageHistoryMetrics()
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        metrics.record(DropCounts(), turns=4, attached=2)
        assert caplog.records == []
        metrics.record(DropCounts(bytes=1), turns=3, attached=1)
    assert [(record.name, record.levelno, record.getMessage()) for record in caplog.records] == [
        (
            "engine.cascade",
            logging.WARNING,
            "cascade_image_history_dropped count=1 (cap=0 bytes=1 truncated=0 no_vision=0) "
            f"turns=3 attached=1 \u2014 {SUFFIX}",
        )
    ]

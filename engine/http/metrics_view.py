"""The metrics endpoint: history-image counters, pool, ledger, cache and response store, as Prometheus
text and JSON."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from engine.chat.cache import ResponseCache
from engine.chat.ledger import Ledger
from engine.prompt.metrics import ImageHistoryMetrics
from engine.reuse.pool import ConversationPool
from engine.store import ResponseStore


class MetricsView:
    def __init__(
        self,
        *,
        images: ImageHistoryMetrics,
        pool: ConversationPool,
        ledger: Ledger,
        cache: ResponseCache,
        store: ResponseStore | None = None,
    ):
        self._images = images
        self._store = store
        self._pool = pool
        self._ledger = ledger
        self._cache = cache
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self.snapshot))

    def snapshot(self) -> dict[str, Any]:
        return {
            "history_images": dict(self._images.snapshot()),
            "pool": asdict(self._pool.stats()),
            "ledger": self._ledger.stats(),
            "cache": self._cache.stats(),
            "response_store": self._store.stats() if self._store is not None else {"enabled": False},
        }

    def prometheus_text(self) -> str:
        return generate_latest(self._registry).decode()


class _Collector(Collector):
    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        snap = self._snapshot()
        images = snap["history_images"]
        attached = CounterMetricFamily("cascade_history_images_attached", "History images attached to field 6")
        attached.add_metric([], float(images.get("cascade_image_history_attached", 0)))
        yield attached
        dropped = CounterMetricFamily(
            "cascade_history_images_dropped", "History images dropped, by reason", labels=["reason"]
        )
        for reason, count in sorted(_mapping(images.get("dropped_by_reason")).items()):
            dropped.add_metric([reason], float(count))
        yield dropped
        yield from _numbers("cascade_pool", "Conversation pool", snap["pool"])
        yield from _numbers("cascade_cache", "Response cache", snap["cache"])
        store = {_snake(k): v for k, v in snap["response_store"].items()}
        store["enabled"] = 1 if store.get("enabled") else 0
        yield from _numbers("cascade_response_store", "Response store", store)
        ledger = snap["ledger"]
        yield from _numbers("cascade_ledger", "Accounting ledger", {k: v for k, v in ledger.items() if _is_number(v)})
        tokens = _mapping(ledger.get("tokens"))
        if tokens:
            family = CounterMetricFamily(
                "cascade_ledger_tokens", "Tokens of upstream turns, by category", labels=["category"]
            )
            for category, count in sorted(tokens.items()):
                family.add_metric([category], float(count))
            yield family


def _numbers(prefix: str, what: str, values: Mapping[str, Any]) -> Iterable[Metric]:
    for name, value in sorted(values.items()):
        if _is_number(value):
            gauge = GaugeMetricFamily(f"{prefix}_{name}", f"{what}: {name}")
            gauge.add_metric([], float(value))
            yield gauge


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

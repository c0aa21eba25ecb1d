"""engine.http.metrics_view: the JSON snapshot of the gateway's counters and the same counters as Prometheus
text (names, help, types, labels and values), with and without a response store."""

from __future__ import annotations

import pytest

from engine.chat.cache import ResponseCache
from engine.chat.ledger import Ledger
from engine.http.metrics_view import MetricsView, _is_number, _mapping, _snake
from engine.model_catalogue import ModelCatalogue
from engine.prompt.metrics import DropCounts, ImageHistoryMetrics
from engine.reuse.pool import ConversationPool
from engine.store import ResponseStore, StoreLimits
from tests.engine.ledger_support import entry_usage

MODEL = "claude-sonnet-4-6"
POOL = {
    "cascade_pool_alias_writes": 0.0,
    "cascade_pool_evictions": 0.0,
    "cascade_pool_expired": 0.0,
    "cascade_pool_hits": 0.0,
    "cascade_pool_max_size": 500.0,
    "cascade_pool_misses": 0.0,
    "cascade_pool_size": 0.0,
    "cascade_pool_stores": 0.0,
    "cascade_pool_ttl_s": 1800.0,
}
CACHE = {f"cascade_cache_{name}": 0.0 for name in ("bytes", "entries", "evictions", "hits", "misses", "sets", "skips")}


PREFIXES = ("cascade_history_images", "cascade_pool", "cascade_cache", "cascade_response_store", "cascade_ledger")


def _view(*, with_store: bool) -> MetricsView:
    images = ImageHistoryMetrics()
    images.record(DropCounts(cap=2, no_vision=1), turns=3, attached=4)
    ledger = Ledger(ModelCatalogue.default(), clock=lambda: 1000.0)
    ledger.record_request(MODEL, True, 300.0, "acct")
    ledger.record_token_usage(entry_usage(5, 3, 2, 1))
    store = None
    if with_store:
        store = ResponseStore(StoreLimits(), clock=lambda: 1000.0)
        store.put("r1", [{"role": "user", "content": "x"}], "owner")
    pool, cache = ConversationPool(clock=lambda: 0.0), ResponseCache(clock=lambda: 0.0)
    return MetricsView(images=images, pool=pool, ledger=ledger, cache=cache, store=store)


def _parse(text: str) -> tuple[dict[str, str], dict[str, str], dict[str, float]]:
    """(help by family, type by family, value by sample) of a Prometheus text exposition."""
    helps: dict[str, str] = {}
    types: dict[str, str] = {}
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, rest = line[len("# HELP ") :].partition(" ")
            helps[name] = rest
        elif line.startswith("# TYPE "):
            name, _, rest = line[len("# TYPE ") :].partition(" ")
            types[name] = rest
        else:
            name, _, value = line.rpartition(" ")
            assert name not in samples, name
            samples[name] = float(value)
    return helps, types, samples


def test_the_snapshot_gathers_every_part_and_says_when_the_store_is_off() -> None:
    view = _view(with_store=False)
    snapshot = view.snapshot()
    assert list(snapshot) == ["history_images", "pool", "ledger", "cache", "response_store"]
    assert snapshot["history_images"] == {
        "cascade_image_history_attached": 4,
        "cascade_image_history_dropped": 3,
        "dropped_by_reason": {"cap": 2, "bytes": 0, "truncated": 0, "no_vision": 1, "unextractable": 0},
    }
    assert snapshot["pool"]["max_size"] == 500
    assert snapshot["pool"]["hit_rate"] == "0.0"
    assert snapshot["ledger"]["tokens"] == {"input": 5, "output": 3, "cache_read": 2, "cache_write": 1, "total": 11}
    assert snapshot["cache"] == {
        "entries": 0,
        "bytes": 0,
        "hits": 0,
        "misses": 0,
        "sets": 0,
        "skips": 0,
        "evictions": 0,
    }
    assert snapshot["response_store"] == {"enabled": False}
    assert _view(with_store=True).snapshot()["response_store"]["stored"] == 1


def test_the_prometheus_text_has_every_number_under_its_family() -> None:
    helps, types, samples = _parse(_view(with_store=True).prometheus_text())
    assert samples == {
        "cascade_history_images_attached_total": 4.0,
        'cascade_history_images_dropped_total{reason="bytes"}': 0.0,
        'cascade_history_images_dropped_total{reason="cap"}': 2.0,
        'cascade_history_images_dropped_total{reason="no_vision"}': 1.0,
        'cascade_history_images_dropped_total{reason="truncated"}': 0.0,
        'cascade_history_images_dropped_total{reason="unextractable"}': 0.0,
        **POOL,
        **CACHE,
        "cascade_response_store_bytes": 74.0,
        "cascade_response_store_enabled": 1.0,
        "cascade_response_store_evictions": 0.0,
        "cascade_response_store_expires": 0.0,
        "cascade_response_store_hits": 0.0,
        "cascade_response_store_max_age_ms": 86_400_000.0,
        "cascade_response_store_max_bytes": 134_217_728.0,
        "cascade_response_store_misses": 0.0,
        "cascade_response_store_rejected": 0.0,
        "cascade_response_store_size": 1.0,
        "cascade_response_store_stored": 1.0,
        "cascade_response_store_tenants": 1.0,
        "cascade_response_store_ttl_ms": 3_600_000.0,
        "cascade_ledger_requests_with_usage": 1.0,
        "cascade_ledger_row_count": 1.0,
        'cascade_ledger_tokens_total{category="cache_read"}': 2.0,
        'cascade_ledger_tokens_total{category="cache_write"}': 1.0,
        'cascade_ledger_tokens_total{category="input"}': 5.0,
        'cascade_ledger_tokens_total{category="output"}': 3.0,
        'cascade_ledger_tokens_total{category="total"}': 11.0,
    }
    assert helps["cascade_history_images_attached_total"] == "History images attached to field 6"
    assert helps["cascade_history_images_dropped_total"] == "History images dropped, by reason"
    assert helps["cascade_ledger_tokens_total"] == "Tokens of upstream turns, by category"
    assert helps["cascade_pool_max_size"] == "Conversation pool: max_size"
    assert helps["cascade_cache_hits"] == "Response cache: hits"
    assert helps["cascade_response_store_max_age_ms"] == "Response store: max_age_ms"
    assert helps["cascade_ledger_row_count"] == "Accounting ledger: row_count"
    counters = {name for name, kind in types.items() if kind == "counter"}
    assert counters == {
        "cascade_history_images_attached_total",
        "cascade_history_images_dropped_total",
        "cascade_ledger_tokens_total",
    }
    assert set(types.values()) == {"counter", "gauge"}
    # families come in a fixed order: images, pool, cache, store, ledger; each family's numbers sorted
    families = [name.split("{")[0].removesuffix("_total") for name in samples]
    groups = [next(p for p in PREFIXES if name.startswith(p)) for name in families]
    assert [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g] == list(PREFIXES)
    assert list(samples)[6:15] == sorted(POOL)


def test_without_a_store_only_its_enabled_gauge_is_shown_as_zero() -> None:
    _, _, samples = _parse(_view(with_store=False).prometheus_text())
    store = {name: value for name, value in samples.items() if name.startswith("cascade_response_store")}
    assert store == {"cascade_response_store_enabled": 0.0}


@pytest.mark.parametrize(
    ("name", "snake"),
    [("maxBytes", "max_bytes"), ("maxAgeMs", "max_age_ms"), ("ttl", "ttl"), ("URL", "URL"), ("aB1C", "a_b1C")],
)
def test_camel_case_store_keys_become_snake_case(name: str, snake: str) -> None:
    assert _snake(name) == snake


@pytest.mark.parametrize(("value", "number"), [(0, True), (1.5, True), (True, False), (False, False), ("1", False)])
def test_only_ints_and_floats_are_numbers_never_bools(value: object, number: bool) -> None:
    assert _is_number(value) is number


@pytest.mark.parametrize(("value", "mapping"), [({"a": 1}, {"a": 1}), (None, {}), ([("a", 1)], {})])
def test_a_breakdown_that_is_not_a_mapping_counts_as_empty(value: object, mapping: dict[str, int]) -> None:
    assert _mapping(value) == mapping

"""The ledger's exact counts and its metrics view (engine.md 4.A "Stats"): failures, latency samples,
the per-model bound and the whole ``stats()`` document."""

from __future__ import annotations

import pytest

from engine.chat.ledger import OTHER_MODEL, Ledger
from engine.model_catalogue import ModelCatalogue
from tests.engine.ledger_support import entry_usage

MODEL = "claude-sonnet-4-6"
PRICEY = "claude-opus-4-1"  # 4 credits a turn


def _ledger(*, max_models: int = 500) -> Ledger:
    return Ledger(ModelCatalogue.default(), max_models=max_models, clock=lambda: 1_000.0)


def test_every_failure_is_counted() -> None:
    ledger = _ledger()
    ledger.record_request(MODEL, False, 10.0, "acct")
    ledger.record_request(MODEL, True, 10.0, "acct")
    ledger.record_request(MODEL, False, 10.0, "acct")
    counts = {"requests": 3, "success": 1, "errors": 2, "cache_served": 0}
    stats = ledger.stats()
    assert stats["requests"] == counts
    assert stats["models"] == {MODEL: counts}
    assert stats["accounts"] == {"acct": counts}


def test_a_failed_cache_served_request_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError, match=r"^a cache-served request is a successful one$"):
        _ledger().record_request(MODEL, False, 0, None, cache_served=True)


def test_a_zero_model_cap_means_unbounded() -> None:
    ledger = _ledger(max_models=0)
    names = [f"model-{n}" for n in range(5)]
    for name in names:
        ledger.record_request(name, True, 1.0, None)
    assert list(ledger.stats()["models"]) == names


def test_a_client_model_called_other_shares_the_overflow_bucket_without_taking_a_slot() -> None:
    ledger = _ledger(max_models=2)
    for name in (OTHER_MODEL, "a", "b", "c"):
        ledger.record_request(name, True, 1.0, None)
    models = ledger.stats()["models"]
    assert list(models) == [OTHER_MODEL, "a", "b"]
    assert [counts["requests"] for counts in models.values()] == [2, 1, 1]


def test_any_positive_duration_is_a_latency_sample() -> None:
    ledger = _ledger()
    for duration in (0, 0.5, 1.0):
        ledger.record_request(MODEL, True, duration, None)
    assert ledger.stats()["latency_ms"] == {"samples": 2, "avg": 0.75, "max": 1.0}


def test_the_metrics_view_of_a_turn_a_replay_and_a_failure() -> None:
    ledger = _ledger()
    ledger.record_request(PRICEY, True, 300.0, "acct")
    ledger.record_token_usage(entry_usage(5, 3, 2, 1))
    ledger.record_account_spend("acct", entry_usage(5, 3, 2, 1))
    ledger.record_request(PRICEY, True, 0, None, cache_served=True)
    ledger.record_request(MODEL, False, 100.0, "acct")
    assert ledger.stats() == {
        "requests": {"requests": 3, "success": 2, "errors": 1, "cache_served": 1},
        "credits": {"total": 4.0, "by_model": {PRICEY: 4.0}},
        "tokens": {"input": 5, "output": 3, "cache_read": 2, "cache_write": 1, "total": 11},
        "requests_with_usage": 1,
        "models": {
            PRICEY: {"requests": 2, "success": 2, "errors": 0, "cache_served": 1},
            MODEL: {"requests": 1, "success": 0, "errors": 1, "cache_served": 0},
        },
        "accounts": {"acct": {"requests": 2, "success": 1, "errors": 1, "cache_served": 0}},
        "account_spend": {"acct": 11},
        "latency_ms": {"samples": 2, "avg": 200.0, "max": 300.0},
        "row_count": 3,
        "rows": [
            {
                "ts": 1_000.0,
                "model": PRICEY,
                "success": True,
                "ms": 300.0,
                "account": "acct",
                "credit": 4.0,
                "cache_served": False,
            },
            {
                "ts": 1_000.0,
                "model": PRICEY,
                "success": True,
                "ms": 0,
                "account": None,
                "credit": 0.0,
                "cache_served": True,
            },
            {
                "ts": 1_000.0,
                "model": MODEL,
                "success": False,
                "ms": 100.0,
                "account": "acct",
                "credit": 1.0,
                "cache_served": False,
            },
        ],
    }

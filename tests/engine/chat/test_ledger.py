"""The accounting ledger (engine.md 4.A "Stats", 4.B; seed 001 D4 / ACC).

The seed's three named tests (``test/cache-replay-usage-accounting.test.js``) are here at the ledger's
level: a turn that ran upstream records its request, usage and spend, as the HTTP layer does; a replay
records only its request, flagged ``cache_served``.
"""

from __future__ import annotations

import threading
from typing import Any

import jsonschema
import pytest

from conformance.operations import LEDGER_SCHEMA
from engine.cascade.usage import GeneratorUsage
from engine.chat.ledger import LATENCY_WINDOW, OTHER_MODEL, Ledger
from engine.model_catalogue import ModelCatalogue, ModelInfo
from tests.engine.ledger_support import entry_usage

MODEL = "claude-sonnet-4-6"
PRICEY = "claude-opus-4-1"  # 4 credits a turn
ACCOUNT = "acct-1"


def _ledger(**kwargs: Any) -> Ledger:
    return Ledger(ModelCatalogue.default(), **kwargs)


def _upstream_turn(ledger: Ledger, model: str, usage: GeneratorUsage) -> None:
    """What the HTTP layer records for a turn that ran upstream."""
    ledger.record_request(model, True, 420.0, ACCOUNT)
    ledger.record_token_usage(usage)
    ledger.record_account_spend(ACCOUNT, usage)


def _replay(ledger: Ledger, model: str) -> None:
    """What the HTTP layer records for a cache hit (stream or not): the request only, flagged."""
    ledger.record_request(model, True, 0, None, cache_served=True)


def _valid(document: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(document, LEDGER_SCHEMA)
    return document


# ------------------------------------------------------------------------------------ seed 001 D4


@pytest.mark.invariant("ACC-1")
def test_non_stream_the_hit_adds_no_tokens_no_credits_and_no_account_spend() -> None:
    ledger = _ledger()
    _upstream_turn(ledger, MODEL, entry_usage(5, 3))
    before = _valid(ledger.document())
    _replay(ledger, MODEL)
    after = _valid(ledger.document())
    assert after["tokens"] == before["tokens"] == {"input": 5, "output": 3, "cache_read": 0, "cache_write": 0}
    assert after["credits"] == before["credits"] == 1.0
    assert after["account_spend"] == before["account_spend"] == {ACCOUNT: 8}
    assert (after["served"], after["cache_served"]) == (2, 1)
    assert after["rows"][-1] == {"model": MODEL, "success": True, "cache_served": True, "credit": 0}


@pytest.mark.invariant("ACC-1")
def test_stream_the_replay_adds_no_tokens_no_credits_and_no_account_spend() -> None:
    ledger = _ledger()
    _upstream_turn(ledger, MODEL, entry_usage(4, 2, cache_read=1, cache_write=1))
    before = ledger.document()
    for _ in range(3):
        _replay(ledger, MODEL)
    after = _valid(ledger.document())
    assert after["tokens"] == before["tokens"] == {"input": 4, "output": 2, "cache_read": 1, "cache_write": 1}
    assert after["credits"] == before["credits"]
    assert after["account_spend"] == before["account_spend"] == {ACCOUNT: 8}
    assert (after["served"], after["cache_served"], after["row_count"]) == (4, 3, 4)
    assert ledger.stats()["requests_with_usage"] == 1


@pytest.mark.invariant("ACC-1")
@pytest.mark.invariant("ACC-3")
def test_charges_the_credit_card_only_for_a_turn_that_ran_upstream() -> None:
    ledger = _ledger()
    _upstream_turn(ledger, PRICEY, entry_usage())
    _replay(ledger, PRICEY)
    document = _valid(ledger.document())
    assert document["credits"] == 4.0
    assert [row["credit"] for row in document["rows"]] == [4.0, 0]
    assert ledger.stats()["credits"] == {"total": 4.0, "by_model": {PRICEY: 4.0}}


# ------------------------------------------------------------------------------------ requests and credits


def test_a_replay_is_served_traffic_everywhere() -> None:
    ledger = _ledger()
    ledger.record_request(MODEL, True, 100.0, ACCOUNT)
    ledger.record_request(MODEL, True, 0, ACCOUNT, cache_served=True)
    stats = ledger.stats()
    counts = {"requests": 2, "success": 2, "errors": 0, "cache_served": 1}
    assert stats["requests"] == counts
    assert stats["models"] == {MODEL: counts}
    assert stats["accounts"] == {ACCOUNT: counts}


def test_a_failure_is_counted_and_its_row_carries_the_credit_it_would_have_cost() -> None:
    ledger = _ledger()
    ledger.record_request(PRICEY, False, 50.0, ACCOUNT)
    document = _valid(ledger.document())
    assert document["credits"] == 0
    assert document["served"] == 0
    assert document["rows"] == [{"model": PRICEY, "success": False, "cache_served": False, "credit": 4.0}]
    assert ledger.stats()["requests"] == {"requests": 1, "success": 0, "errors": 1, "cache_served": 0}


@pytest.mark.parametrize("model", ["unknown-model", "Claude-Sonnet-4-6", ""])
def test_an_unknown_model_costs_nothing(model: str) -> None:
    ledger = _ledger()
    ledger.record_request(model, True, 10.0, None)
    document = _valid(ledger.document())
    assert document["credits"] == 0
    assert document["rows"] == [{"model": model, "success": True, "cache_served": False, "credit": 0}]
    assert ledger.stats()["credits"]["by_model"] == {}


def test_a_free_model_charges_nothing() -> None:
    ledger = _ledger()
    ledger.record_request("swe-1", True, 10.0, None)
    assert ledger.document()["credits"] == 0
    assert ledger.stats()["credits"]["by_model"] == {}


def test_credits_add_up_per_model() -> None:
    ledger = _ledger()
    for model in (MODEL, PRICEY, PRICEY, "gpt-5"):
        ledger.record_request(model, True, 10.0, None)
    assert ledger.document()["credits"] == 10.0
    assert ledger.stats()["credits"]["by_model"] == {MODEL: 1.0, PRICEY: 8.0, "gpt-5": 1.0}


def test_a_failed_cache_served_request_is_a_contradiction() -> None:
    with pytest.raises(ValueError, match="cache-served"):
        _ledger().record_request(MODEL, False, 0, None, cache_served=True)


def test_a_request_without_an_account_is_not_counted_per_account() -> None:
    ledger = _ledger()
    ledger.record_request(MODEL, True, 10.0, None)
    assert ledger.stats()["accounts"] == {}


def test_rows_carry_time_duration_and_account() -> None:
    ledger = _ledger(clock=lambda: 1_700_000_000.5)
    ledger.record_request(MODEL, True, 123.5, ACCOUNT)
    assert ledger.stats()["rows"] == [
        {
            "ts": 1_700_000_000.5,
            "model": MODEL,
            "success": True,
            "ms": 123.5,
            "account": ACCOUNT,
            "credit": 1.0,
            "cache_served": False,
        }
    ]


@pytest.mark.parametrize(("recorded", "kept"), [(2, 2), (3, 3), (4, 3)])
def test_rows_are_capped_and_the_oldest_dropped(recorded: int, kept: int) -> None:
    ledger = _ledger(max_rows=3)
    for n in range(recorded):
        ledger.record_request(f"model-{n}", True, 1.0, None)
    document = _valid(ledger.document())
    assert document["row_count"] == recorded
    assert [row["model"] for row in document["rows"]] == [f"model-{n}" for n in range(recorded - kept, recorded)]


def test_no_rows_kept_with_a_zero_cap() -> None:
    ledger = _ledger(max_rows=0)
    ledger.record_request(MODEL, True, 1.0, None)
    assert (ledger.document()["rows"], ledger.document()["row_count"]) == ([], 1)


@pytest.mark.parametrize(("distinct", "named"), [(2, 2), (3, 3), (4, 3)])
def test_per_model_counts_overflow_into_other(distinct: int, named: int) -> None:
    ledger = _ledger(max_models=3)
    for n in range(distinct):
        ledger.record_request(f"model-{n}", True, 1.0, None)
    ledger.record_request("model-0", True, 1.0, None)
    models = ledger.stats()["models"]
    assert [name for name in models if name != OTHER_MODEL] == [f"model-{n}" for n in range(named)]
    assert models["model-0"]["requests"] == 2
    assert models.get(OTHER_MODEL, {"requests": 0})["requests"] == distinct - named


def test_latency_keeps_only_positive_durations_in_a_window() -> None:
    ledger = _ledger()
    ledger.record_request(MODEL, True, 0, None, cache_served=True)
    assert ledger.stats()["latency_ms"] == {"samples": 0, "avg": None, "max": None}
    for n in range(LATENCY_WINDOW + 1):
        ledger.record_request(MODEL, True, float(n + 1), None)
    latency = ledger.stats()["latency_ms"]
    assert latency["samples"] == LATENCY_WINDOW
    assert latency["max"] == LATENCY_WINDOW + 1
    assert latency["avg"] == sum(range(2, LATENCY_WINDOW + 2)) / LATENCY_WINDOW


@pytest.mark.parametrize("kwargs", [{"max_rows": -1}, {"max_models": -1}])
def test_negative_caps_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        _ledger(**kwargs)


# ------------------------------------------------------------------------------------ usage and spend


def test_token_usage_adds_the_four_categories() -> None:
    ledger = _ledger()
    ledger.record_token_usage(entry_usage(10, 20, 30, 40))
    ledger.record_token_usage(entry_usage(1, 2, 3, 4))
    assert ledger.document()["tokens"] == {"input": 11, "output": 22, "cache_read": 33, "cache_write": 44}
    stats = ledger.stats()
    assert stats["tokens"]["total"] == 110
    assert stats["requests_with_usage"] == 2


@pytest.mark.parametrize("usage", [None, entry_usage(0, 0, 0, 0)])
def test_no_usage_is_a_no_op(usage: GeneratorUsage | None) -> None:
    ledger = _ledger()
    ledger.record_token_usage(usage)
    ledger.record_account_spend(ACCOUNT, usage)
    assert ledger.document()["tokens"] == {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    assert ledger.document()["account_spend"] == {}
    assert ledger.stats()["requests_with_usage"] == 0


def test_one_non_zero_category_is_usage() -> None:
    ledger = _ledger()
    ledger.record_token_usage(entry_usage(0, 0, 0, 1))
    assert ledger.stats()["requests_with_usage"] == 1


def test_account_spend_is_all_four_categories_per_account() -> None:
    ledger = _ledger()
    ledger.record_account_spend("a", entry_usage(1, 2, 3, 4))
    ledger.record_account_spend("b", entry_usage(5, 0))
    ledger.record_account_spend("a", entry_usage(0, 1))
    assert ledger.document()["account_spend"] == {"a": 11, "b": 5}


# ------------------------------------------------------------------------------------ documents


def test_an_empty_ledger_is_a_valid_document() -> None:
    assert _valid(_ledger().document()) == {
        "tokens": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
        "credits": 0,
        "served": 0,
        "cache_served": 0,
        "account_spend": {},
        "row_count": 0,
        "rows": [],
    }


def test_documents_are_snapshots() -> None:
    ledger = _ledger()
    ledger.record_account_spend(ACCOUNT, entry_usage())
    document = ledger.document()
    document["account_spend"][ACCOUNT] = 0
    document["tokens"]["input"] = 99
    assert ledger.document()["account_spend"] == {ACCOUNT: 8}
    assert ledger.document()["tokens"]["input"] == 0


@pytest.mark.invariant("ACC-3")
def test_over_a_mix_of_hits_and_misses_the_ledger_is_the_sum_of_upstream_turns() -> None:
    ledger = _ledger()
    upstream = [(MODEL, entry_usage(5, 3)), (PRICEY, entry_usage(7, 1, 2)), (MODEL, entry_usage(1, 1, 0, 9))]
    for model, usage in upstream:
        _upstream_turn(ledger, model, usage)
        _replay(ledger, model)
        _replay(ledger, model)
    document = _valid(ledger.document())
    assert document["tokens"] == {"input": 13, "output": 5, "cache_read": 2, "cache_write": 9}
    assert document["credits"] == 6.0
    assert document["account_spend"] == {ACCOUNT: 29}
    assert (document["served"], document["cache_served"], document["row_count"]) == (9, 6, 9)


def test_concurrent_recording_loses_nothing() -> None:
    catalogue = ModelCatalogue([ModelInfo(name="m", uid="m", provider="p", credit=0.5, vision=False)])
    ledger = Ledger(catalogue, max_rows=10)

    def work() -> None:
        for _ in range(500):
            ledger.record_request("m", True, 1.0, "a")
            ledger.record_token_usage(entry_usage(1, 1))
            ledger.record_account_spend("a", entry_usage(1, 1))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    document = _valid(ledger.document())
    assert document["served"] == document["row_count"] == 3000
    assert len(document["rows"]) == 10
    assert document["credits"] == 1500.0
    assert document["tokens"]["input"] == 3000
    assert document["account_spend"] == {"a": 6000}

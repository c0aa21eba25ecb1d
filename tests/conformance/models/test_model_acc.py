"""The kit's model of cache-replay accounting (conformance/models/acc.py, seed 001 D4): which Sends
ran upstream, which tokens the LS handed out (each generator record once), what a ledger gained."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.models.acc import no_tokens, usage_numbers
from conformance.models.journal import accepted_sends, delta, sends, served_tokens
from tests.conformance.models.model_accsowire_support import (
    META,
    STEPS,
    entry,
    ledger,
    meta,
    record,
    row,
    send,
    usage,
)

ZERO = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}


# ---------------------------------------------------------------------------- upstream turns


def test_only_the_sends_the_fake_accepted_are_upstream_turns_in_order() -> None:
    first, refused, second = send(1, "c1"), send(2, "c1", status="NOT_FOUND"), send(5, "c2")
    journal = [
        entry(0, "StartCascade", {"metadata": {}}, response={"cascade_id": "c1"}),
        first,
        refused,
        meta(3, "c1", 0, [record(usage(4, 2))]),
        entry(4, STEPS, {"cascade_id": "c1"}, response={}),
        second,
        send(6, "c2", status="UNAUTHENTICATED"),
    ]
    assert sends(journal) == [first, second]
    assert accepted_sends(journal) == 2


def test_a_journal_without_an_accepted_send_means_every_request_was_served_from_a_cache() -> None:
    assert accepted_sends([]) == 0
    assert accepted_sends([send(0, "c", status="INVALID_ARGUMENT"), meta(1, "c", 0, [])]) == 0


# ---------------------------------------------------------------------------- billable tokens


def test_no_generator_records_means_no_billable_tokens() -> None:
    assert served_tokens([]) == ZERO
    assert served_tokens([send(0, "c"), meta(1, "c", 0, [])]) == ZERO
    assert no_tokens() == ZERO


def test_each_usage_figure_lands_in_its_own_category() -> None:
    journal = [send(0, "c"), meta(1, "c", 0, [record(usage(inp=11, out=7, read=5, write=3))])]
    assert served_tokens(journal) == {"input": 11, "output": 7, "cache_read": 5, "cache_write": 3}


def test_a_record_read_again_by_a_later_poll_is_billed_once() -> None:
    a, b = record(usage(100, 10)), record(usage(40, 4, read=2))
    journal = [
        send(0, "c"),
        meta(1, "c", 0, [a]),
        meta(2, "c", 0, [a]),  # the same snapshot polled twice
        send(3, "c"),
        meta(4, "c", 0, [a, b]),  # a resume re-reading from 0
        meta(5, "c", 1, [b]),  # and from the window start
    ]
    assert served_tokens(journal) == {"input": 140, "output": 14, "cache_read": 2, "cache_write": 0}


def test_records_are_indexed_from_the_requested_offset() -> None:
    # Offset 2 hands out records 2 and 3; a later read from 0 shows records 0..3: only 0 and 1 are new.
    journal = [
        meta(0, "c", 2, [record(usage(3)), record(usage(5))]),
        meta(1, "c", 0, [record(usage(100)), record(usage(200)), record(usage(3)), record(usage(5))]),
    ]
    assert served_tokens(journal)["input"] == 308


def test_an_omitted_offset_is_offset_zero() -> None:
    # message_to_dict leaves generator_metadata_offset out when it is 0.
    first = meta(0, "c", 0, [record(usage(10))])
    assert "generator_metadata_offset" not in first["request"]
    journal = [first, meta(1, "c", 1, [record(usage(20))]), meta(2, "c", 0, [record(usage(10)), record(usage(20))])]
    assert served_tokens(journal)["input"] == 30


def test_the_same_index_in_two_cascades_is_two_records() -> None:
    journal = [meta(0, "c1", 0, [record(usage(10))]), meta(1, "c2", 0, [record(usage(20))])]
    assert served_tokens(journal)["input"] == 30


def test_an_empty_cascade_id_and_an_omitted_one_are_the_same_cascade() -> None:
    # proto3 drops an empty string from the decoded request; a decoder that keeps it names the same id.
    omitted = meta(0, "", 0, [record(usage(10))])
    assert "cascade_id" not in omitted["request"]
    explicit = entry(1, META, {"cascade_id": ""}, response=omitted["response"])
    assert served_tokens([omitted, explicit])["input"] == 10


def test_only_generator_metadata_the_fake_answered_counts() -> None:
    answered = meta(0, "c", 0, [record(usage(10))])
    refused = entry(1, META, {"cascade_id": "d"}, status="NOT_FOUND", response=answered["response"])
    other_method = entry(2, STEPS, {"cascade_id": "e"}, response=answered["response"])
    assert served_tokens([answered, refused, other_method])["input"] == 10
    assert served_tokens([refused, other_method]) == ZERO


def test_64_bit_counts_and_offsets_given_as_json_strings_are_read_as_integers() -> None:
    # protobuf's JSON mapping writes uint64 as strings; another LS's journal may do so.
    big = {"input_tokens": "5000000000", "output_tokens": "7", "cache_read_tokens": "0", "cache_write_tokens": "12"}
    journal = [
        entry(0, META, {"cascade_id": "c"}, response={"generator_metadata": [record(big)]}),
        entry(
            1,
            META,
            {"cascade_id": "c", "generator_metadata_offset": "1"},
            response={"generator_metadata": [record(usage(9))]},
        ),
        meta(2, "c", 0, [record(big), record(usage(9))]),
    ]
    assert served_tokens(journal) == {"input": 5000000009, "output": 7, "cache_read": 0, "cache_write": 12}


@pytest.mark.parametrize("junk", [None, "", "twelve", "1.5", [3], {"n": 3}])
def test_an_unreadable_count_bills_nothing(junk: Any) -> None:
    stats = {"input_tokens": junk, "output_tokens": 4}
    journal = [meta(0, "c", 0, [record(stats)])]
    assert served_tokens(journal) == {"input": 0, "output": 4, "cache_read": 0, "cache_write": 0}


def test_a_record_without_usage_still_takes_its_index() -> None:
    # Record 0 carries no chat model usage (or is empty); record 1 is read again from offset 1.
    journal = [
        meta(0, "c", 0, [{}, record(usage(8, 1))]),
        meta(1, "c", 0, [{"chat_model": {}}, record(usage(8, 1))]),
        meta(2, "c", 1, [record(usage(8, 1))]),
        meta(3, "c", 2, [None, record({})]),
    ]
    assert served_tokens(journal) == {"input": 8, "output": 1, "cache_read": 0, "cache_write": 0}


def test_an_answered_call_without_a_decoded_request_or_response_is_skipped_safely() -> None:
    journal = [
        entry(0, META, None, response={"generator_metadata": [record(usage(6))]}),
        entry(1, META, {"cascade_id": "c"}, response=None),
    ]
    assert served_tokens(journal)["input"] == 6


# ---------------------------------------------------------------------------- ledger deltas


def _before() -> dict[str, Any]:
    return ledger(
        (10, 20, 0, 5), 1.25, 3, 1, {"acct-a": 30, "acct-b": 5}, [row("r1", 0.5), row("r2", 0.75), row("r3", 0)]
    )


def test_a_ledger_delta_is_what_each_figure_gained_and_the_rows_appended() -> None:
    rows = [*_before()["rows"], row("r4", 0.5), row("r5", 0, cache_served=True)]
    after = ledger((25, 27, 4, 5), 1.75, 5, 2, {"acct-a": 40, "acct-b": 5, "acct-c": 16}, rows)
    assert delta(_before(), after) == {
        "tokens": {"input": 15, "output": 7, "cache_read": 4, "cache_write": 0},
        "credits": 0.5,
        "served": 2,
        "cache_served": 1,
        "spend": 26,
        "new_rows": 2,
        "rows": [row("r4", 0.5), row("r5", 0, cache_served=True)],
    }


def test_no_new_row_means_no_rows_in_the_delta() -> None:
    gained = delta(_before(), _before())
    assert gained["new_rows"] == 0
    assert gained["rows"] == []
    assert gained["tokens"] == ZERO
    assert (gained["credits"], gained["served"], gained["cache_served"], gained["spend"]) == (0, 0, 0, 0)


def test_one_new_row_is_exactly_the_last_row() -> None:
    after = ledger(
        (10, 20, 0, 5), 1.25, 4, 2, {"acct-a": 30, "acct-b": 5}, [*_before()["rows"], row("hit", 0, cache_served=True)]
    )
    gained = delta(_before(), after)
    assert gained["new_rows"] == 1
    assert gained["rows"] == [row("hit", 0, cache_served=True)]


def test_new_rows_are_counted_by_row_count_when_the_ledger_keeps_only_its_latest_rows() -> None:
    before = ledger((0, 0, 0, 0), 0.0, 500, 0, {}, [row(f"r{k}", 0.1) for k in range(400, 500)], row_count=500)
    after = ledger((0, 0, 0, 0), 0.0, 503, 0, {}, [row(f"r{k}", 0.1) for k in range(403, 503)], row_count=503)
    gained = delta(before, after)
    assert gained["new_rows"] == 3
    assert [r["model"] for r in gained["rows"]] == ["r500", "r501", "r502"]


def test_credits_gained_are_rounded_to_nine_decimals() -> None:
    # Float noise below a nano-credit is not a charge; a real half credit is.
    noisy = delta(ledger((0, 0, 0, 0), 0.1, 0, 0, {}, []), ledger((0, 0, 0, 0), 0.3, 0, 0, {}, []))
    assert noisy["credits"] == 0.2
    sub_nano = delta(ledger((0, 0, 0, 0), 1.0, 0, 0, {}, []), ledger((0, 0, 0, 0), 1.0000000004, 0, 0, {}, []))
    assert sub_nano["credits"] == 0
    nano = delta(ledger((0, 0, 0, 0), 1.0, 0, 0, {}, []), ledger((0, 0, 0, 0), 1.000000002, 0, 0, {}, []))
    assert nano["credits"] == 0.000000002


def test_spend_is_the_growth_of_the_total_over_all_accounts() -> None:
    before = ledger((0, 0, 0, 0), 0.0, 0, 0, {"a": 10, "b": 10}, [])
    after = ledger((0, 0, 0, 0), 0.0, 0, 0, {"a": 10, "b": 13, "new": 4}, [])
    assert delta(before, after)["spend"] == 7


# ---------------------------------------------------------------------------- usage a replay must carry


def test_the_usage_numbers_are_the_three_openai_token_counts() -> None:
    body_usage = {
        "prompt_tokens": 12,
        "completion_tokens": 30,
        "total_tokens": 42,
        "prompt_tokens_details": {"cached_tokens": 8},
    }
    assert usage_numbers(body_usage) == {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}


def test_a_missing_count_is_none_so_a_replay_without_it_differs_from_one_with_zero() -> None:
    assert usage_numbers({"prompt_tokens": 3}) == {"prompt_tokens": 3, "completion_tokens": None, "total_tokens": None}
    assert usage_numbers({}) != usage_numbers({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})


@pytest.mark.parametrize("usage_value", [None, [1, 2, 3], "12", 42])
def test_no_usage_object_means_no_usage(usage_value: object) -> None:
    assert usage_numbers(usage_value) is None

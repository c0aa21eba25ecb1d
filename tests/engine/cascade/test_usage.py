"""Generator-metadata usage and offset arithmetic (seed 001 D5; engine.md section 2; OFF-1..3).

The seed's named tests (``test/cascade-generator-offset.test.js``) are here at the offset-arithmetic
level: parser, end-of-turn offset, pool check-in and resume start, without a client or an LS.
"""

from __future__ import annotations

import logging
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cascade.usage import (
    GeneratorMetadataError,
    GeneratorUsage,
    TurnOffsets,
    abstain_log_line,
    billable_usage,
    fresh_offsets,
    is_known_offset,
    known_offset,
    metadata_request_offset,
    next_generator_offset,
    next_step_offset,
    offsets_to_store,
    parse_generator_metadata,
    resume_offsets,
    usage_log_line,
)
from engine.reuse.pool import ConversationPool, PoolEntry
from fakels.clock import ManualClock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

Usage4 = tuple[int, int, int, int]  # (input, output, cache_write, cache_read)

# ------------------------------------------------------------------------------------ encoders


def record(
    usage: Usage4 | None = None, *, chat_model: bool = True, model_uid: str = "MODEL_X"
) -> cortex.CortexStepGeneratorMetadata:
    """One generator record; ``usage=None`` is a record without a usage block."""
    if not chat_model:
        return cortex.CortexStepGeneratorMetadata(step_indices=[3], execution_id="exec")
    meta = cortex.ChatModelMetadata(model_uid=model_uid)
    if usage is not None:
        inp, out, cw, cr = usage
        meta.usage.CopyFrom(
            common.ModelUsageStats(input_tokens=inp, output_tokens=out, cache_write_tokens=cw, cache_read_tokens=cr)
        )
    return cortex.CortexStepGeneratorMetadata(chat_model=meta)


def response(*records: cortex.CortexStepGeneratorMetadata) -> ls.GetCascadeTrajectoryGeneratorMetadataResponse:
    return ls.GetCascadeTrajectoryGeneratorMetadataResponse(generator_metadata=list(records))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _len(field_number: int, payload: bytes) -> bytes:
    return _varint(field_number << 3 | 2) + _varint(len(payload)) + payload


def _uint(field_number: int, value: int) -> bytes:
    return _varint(field_number << 3) + _varint(value) if value else b""


def hand_record(inp: int, out: int, cw: int, cr: int) -> bytes:
    """wire.md section 2.8 by hand: ``{1: {1: {4: {2: in, 3: out, 4: cw, 5: cr}}}}``."""
    usage = _uint(2, inp) + _uint(3, out) + _uint(4, cw) + _uint(5, cr)
    return _len(1, _len(1, _len(4, usage)))


# ------------------------------------------------------------------------------------ the seed's named tests


@pytest.mark.invariant("OFF-1")
def test_the_parser_keeps_the_record_count_when_no_record_carries_usage() -> None:
    two_without_usage = response(record(None), record((0, 0, 0, 0)))
    for form in (two_without_usage, two_without_usage.SerializeToString()):
        usage = parse_generator_metadata(form)
        assert usage == GeneratorUsage(0, 0, 0, 0, entry_count=2, has_usage=False)  # baseline: None
    assert billable_usage(parse_generator_metadata(two_without_usage)) is None  # the step-level fallback runs


@pytest.mark.invariant("OFF-2")
def test_no_usage_records_still_advance_the_window_the_next_reuse_asks_from_2_not_0() -> None:
    clock = ManualClock(1000.0)
    pool = ConversationPool(clock=clock.now)
    # turn 1: a fresh cascade, its window starts at 0 and ends with two records without usage
    start = fresh_offsets()
    asked = metadata_request_offset(start.generator_offset, "cascade-1")
    assert asked == 0
    window = parse_generator_metadata(response(record(None), record(None)).SerializeToString())
    end = next_generator_offset(asked, window)
    assert end == 2  # baseline: None, which the pool stored as 0
    pool.checkin("fp-after-1", PoolEntry("cascade-1", step_offset=3, generator_offset=end))
    # turn 2 resumes it: the stored start is used as is, no snapshot is taken
    entry = pool.checkout("fp-after-1")
    assert entry is not None

    def no_snapshot() -> GeneratorUsage | None:
        raise AssertionError("a known stored offset needs no snapshot")

    resumed = resume_offsets(
        entry.step_offset, entry.generator_offset, read_step_count=lambda: 99, read_generator_snapshot=no_snapshot
    )
    assert metadata_request_offset(resumed.generator_offset, entry.cascade_id) == 2


@pytest.mark.invariant("OFF-3")
def test_the_pool_keeps_an_unknown_window_start_unknown_instead_of_record_0(caplog: pytest.LogCaptureFixture) -> None:
    pool = ConversationPool(clock=ManualClock().now)
    for unknown in (None, math.nan, math.inf):
        pool.checkin("fp", PoolEntry("cascade-9", step_offset=4, generator_offset=unknown))
        entry = pool.checkout("fp")
        assert entry is not None
        assert entry.generator_offset is None  # baseline: 0
        assert entry.step_offset == 4
    # the next resume re-derives it from a snapshot at offset 0 ...
    rederived = resume_offsets(
        4, None, read_step_count=lambda: 4, read_generator_snapshot=lambda: parse_generator_metadata(response(record()))
    )
    assert rederived.generator_offset == 1
    # ... and when that snapshot fails, it stays unknown and the turn abstains instead of asking from 0
    with caplog.at_level(logging.WARNING, logger="engine.usage"):
        unreadable = resume_offsets(4, None, read_step_count=lambda: 4, read_generator_snapshot=_failing_snapshot)
        assert unreadable.generator_offset is None
        assert metadata_request_offset(unreadable.generator_offset, "cascade-9abcdef") is None
    assert "Cascade resume snapshot failed: LS unavailable" in caplog.messages
    assert abstain_log_line("cascade-9abcdef") in caplog.messages


@pytest.mark.invariant("OFF-2")
def test_control_a_valid_usage_offset_window() -> None:
    # the seed's control: with usage on every record the windows are [0, 1] (baseline and fix agree)
    asked: list[int | None] = []
    start: int | None = fresh_offsets().generator_offset
    for usage in ((10, 5, 0, 0), (20, 7, 1, 3)):
        offset = metadata_request_offset(start, "cascade-2")
        asked.append(offset)
        window = parse_generator_metadata(response(record(usage)))
        assert window is not None
        assert window.has_usage
        assert billable_usage(window) is window
        start = next_generator_offset(offset, window)
    assert asked == [0, 1]
    assert start == 2


@pytest.mark.invariant("OFF-3")
def test_control_a_failed_metadata_read() -> None:
    # the end-of-turn read fails (or finds no records) while the start is known: the end is unknown,
    # never the old start (which would re-bill the turn) and never 0
    assert next_generator_offset(5, None) is None
    step, generator = offsets_to_store(7, next_generator_offset(5, None), reused_step_offset=3)
    assert (step, generator) == (7, None)  # Q2.3: no fallback to the checked-out entry's 5
    pool = ConversationPool(clock=ManualClock().now)
    pool.checkin("fp", PoolEntry("c", step_offset=7, generator_offset=generator))
    stored = pool.peek("fp")
    assert stored is not None
    assert stored.generator_offset is None


def _failing_snapshot() -> GeneratorUsage | None:
    raise ConnectionError("LS unavailable")


# ------------------------------------------------------------------------------------ parser


def test_the_hand_assembled_record_is_what_the_generated_classes_encode() -> None:
    hand = hand_record(1200, 300, 40, 900)
    generated = response(record((1200, 300, 40, 900), model_uid="")).SerializeToString()
    assert hand == generated
    usage = parse_generator_metadata(hand + hand_record(1, 2, 3, 4))
    assert usage == GeneratorUsage(
        input_tokens=1201,
        output_tokens=302,
        cache_read_tokens=904,
        cache_write_tokens=43,
        entry_count=2,
        has_usage=True,
    )


def test_only_records_with_usage_add_tokens_but_every_record_counts() -> None:
    mixed = response(record(None), record((5, 6, 7, 8)), record(chat_model=False), record((0, 0, 0, 0)))
    usage = parse_generator_metadata(mixed)
    assert usage == GeneratorUsage(5, 6, 8, 7, entry_count=4, has_usage=True)
    assert usage_log_line(usage) == "Cascade usage: in=5 out=6 cache_r=8 cache_w=7"


def test_a_record_with_a_single_non_zero_figure_has_usage() -> None:
    usage = parse_generator_metadata(hand_record(0, 0, 0, 17))
    assert usage is not None
    assert usage.has_usage
    assert usage.cache_read_tokens == 17


def test_no_records_is_the_only_none() -> None:
    assert parse_generator_metadata(response()) is None
    assert parse_generator_metadata(b"") is None
    assert parse_generator_metadata(bytearray()) is None


def test_unknown_fields_do_not_hide_a_record() -> None:
    # field 3 (planner_config) and field 99 are not in the kit's subset: the record still counts
    extra = _len(3, b"\x08\x01") + _varint(99 << 3) + _varint(5)
    usage = parse_generator_metadata(_len(1, _len(1, _len(4, _uint(2, 9))) + extra) + _len(1, extra))
    assert usage is not None
    assert (usage.entry_count, usage.input_tokens) == (2, 9)


def test_undecodable_bytes_are_a_failed_read() -> None:
    with pytest.raises(GeneratorMetadataError):
        parse_generator_metadata(b"\x0a\x05\x01")  # a record claiming 5 bytes, 1 present


# ------------------------------------------------------------------------------------ offsets


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (7, 7), (2.0, 2), (-1, None), (2.5, None), (math.nan, None), (math.inf, None), (None, None),
     (True, None), ("3", None)],
)  # fmt: skip
def test_known_offset_is_number_is_integer_and_non_negative(value: object, expected: int | None) -> None:
    assert known_offset(value) == expected
    assert is_known_offset(value) is (expected is not None)


def test_fresh_offsets_are_zero_and_known() -> None:
    offsets = fresh_offsets()
    assert (offsets.step_offset, offsets.generator_offset, offsets.generator_offset_known) == (0, 0, True)


def test_resume_uses_stored_offsets_and_snapshots_only_what_is_missing() -> None:
    reads: list[str] = []

    def steps() -> int:
        reads.append("steps")
        return 12

    def meta() -> GeneratorUsage | None:
        reads.append("meta")
        return parse_generator_metadata(response(record(), record(), record()))

    assert resume_offsets(4, 2, read_step_count=steps, read_generator_snapshot=meta) == TurnOffsets(4, 2)
    assert reads == []
    both = resume_offsets(-1, 2.5, read_step_count=steps, read_generator_snapshot=meta)
    assert (both.step_offset, both.generator_offset) == (12, 3)
    assert reads == ["steps", "meta"]


def test_a_snapshot_with_zero_records_leaves_the_start_unknown() -> None:
    # Q2.1: the literal Number.isInteger(null?.entryCount) is false
    offsets = resume_offsets(0, None, read_step_count=lambda: 0, read_generator_snapshot=lambda: None)
    assert offsets.generator_offset is None
    assert not offsets.generator_offset_known


def test_a_failed_step_snapshot_keeps_the_step_cursor_default(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> int:
        raise TimeoutError("steps timed out")

    with caplog.at_level(logging.WARNING, logger="engine.usage"):
        offsets = resume_offsets(None, 6, read_step_count=broken, read_generator_snapshot=lambda: None)
    assert (offsets.step_offset, offsets.generator_offset) == (0, 6)
    assert caplog.messages == ["Cascade resume snapshot failed: steps timed out"]


def test_the_abstain_warning_names_the_cascade_by_its_first_8_characters(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.usage"):
        assert metadata_request_offset(None, "0123456789abcdef") is None
        assert metadata_request_offset(3, "0123456789abcdef") == 3
    assert caplog.messages == [
        "Cascade usage: generator offset unknown for resumed cascade 01234567; "
        "skipping generator-metadata usage this turn"
    ]


def test_next_step_offset_adds_the_largest_step_count() -> None:
    assert next_step_offset(10, yielded_steps=2, thinking_steps=3, last_step_count=1) == 13
    assert next_step_offset(0, 0, 0, 4) == 4


def test_offsets_to_store_keeps_the_step_fallback_only() -> None:
    assert offsets_to_store(math.nan, None, reused_step_offset=8) == (8, None)
    assert offsets_to_store(None, 4, reused_step_offset=8) == (8, 4)
    assert offsets_to_store(5, 9, reused_step_offset=8) == (5, 9)


# ------------------------------------------------------------------------------------ properties

_TOKENS = st.integers(min_value=0, max_value=2**40)
_USAGE = st.one_of(
    st.none(),
    st.just((0, 0, 0, 0)),
    st.tuples(_TOKENS, _TOKENS, _TOKENS, _TOKENS),
)


@pytest.mark.invariant("OFF-1")
@given(records=st.lists(_USAGE, max_size=12), raw=st.booleans())
def test_off1_the_parser_keeps_the_count_for_any_mix_of_records(records: list[Usage4 | None], raw: bool) -> None:
    message = response(*(record(usage) for usage in records))
    usage = parse_generator_metadata(message.SerializeToString() if raw else message)
    if not records:
        assert usage is None
        return
    assert usage is not None
    with_usage = [u for u in records if u is not None and any(u)]
    assert usage.entry_count == len(records)
    assert usage.has_usage is bool(with_usage)
    assert usage.input_tokens == sum(u[0] for u in with_usage)
    assert usage.output_tokens == sum(u[1] for u in with_usage)
    assert usage.cache_write_tokens == sum(u[2] for u in with_usage)
    assert usage.cache_read_tokens == sum(u[3] for u in with_usage)


@pytest.mark.invariant("OFF-1")
@given(records=st.lists(st.tuples(_TOKENS, _TOKENS, _TOKENS, _TOKENS), min_size=1, max_size=8))
def test_off1_hand_assembled_bytes_parse_like_the_generated_ones(records: list[Usage4]) -> None:
    hand = b"".join(hand_record(*usage) for usage in records)
    assert parse_generator_metadata(hand) == parse_generator_metadata(response(*(record(u) for u in records)))


_START = st.one_of(st.none(), st.integers(min_value=0, max_value=10**6))
_WINDOW = st.one_of(
    st.none(),
    st.builds(
        GeneratorUsage,
        _TOKENS,
        _TOKENS,
        _TOKENS,
        _TOKENS,
        entry_count=st.integers(min_value=1, max_value=50),
        has_usage=st.booleans(),
    ),
)


@pytest.mark.invariant("OFF-3")
@given(start=_START, window=_WINDOW)
def test_off3_offset_arithmetic_never_turns_unknown_into_0(start: int | None, window: GeneratorUsage | None) -> None:
    end = next_generator_offset(start, window)
    if start is None or window is None:
        assert end is None
    else:
        assert end == start + window.entry_count
        assert end > start  # records without usage advance too: OFF-2


@pytest.mark.invariant("OFF-3")
@given(
    stored=st.one_of(st.none(), st.floats(allow_nan=True), st.integers(min_value=-5, max_value=5), st.text(max_size=2)),
    snapshot=st.sampled_from(["fails", "empty", "records"]),
)
def test_off3_an_unreadable_start_stays_unknown_and_the_turn_abstains(stored: object, snapshot: str) -> None:
    def read() -> GeneratorUsage | None:
        if snapshot == "fails":
            raise OSError("down")
        return parse_generator_metadata(response(*([record()] * (3 if snapshot == "records" else 0))))

    offsets = resume_offsets(0, stored, read_step_count=lambda: 0, read_generator_snapshot=read)
    if is_known_offset(stored):
        assert offsets.generator_offset == known_offset(stored)
    elif snapshot == "records":
        assert offsets.generator_offset == 3
    else:
        assert offsets.generator_offset is None
        assert metadata_request_offset(offsets.generator_offset, "cascade") is None


@pytest.mark.invariant("OFF-2")
@given(turns=st.lists(st.lists(_USAGE, max_size=4), min_size=1, max_size=8))
def test_off2_windows_of_successful_reads_tile_the_records(turns: list[list[Usage4 | None]]) -> None:
    """Turns on one cascade, every read succeeding: each window starts where the last ended, so every
    record is billed once, usage or not. A turn without records leaves the end unknown (Q2.2); the next
    resume re-derives it by a snapshot from 0 (Q2.1: a cascade without records stays unknown)."""
    ls_records: list[cortex.CortexStepGeneratorMetadata] = []
    billed: list[int] = []
    stored: object = 0  # the fresh cascade's first turn
    for turn in turns:
        offsets = resume_offsets(
            0,
            stored,
            read_step_count=lambda: 0,
            read_generator_snapshot=lambda: parse_generator_metadata(response(*ls_records)),
        )
        start = metadata_request_offset(offsets.generator_offset, "cascade")
        first_new = len(ls_records)
        ls_records.extend(record(usage) for usage in turn)
        if start is None:  # abstained: nothing read
            stored = None
            continue
        assert start == first_new  # the window starts exactly at this turn's first record
        window = parse_generator_metadata(response(*ls_records[start:]))
        billed.extend(range(start, start + (window.entry_count if window else 0)))
        stored = next_generator_offset(start, window)
        assert stored == (start + len(turn) if turn else None)
    assert len(billed) == len(set(billed))  # nothing billed twice

"""Generator-metadata usage and the offset arithmetic of a Cascade turn (seed 001, D5).

GetCascadeTrajectoryGeneratorMetadata answers with one record per generator call from the
requested offset on (wire.md section 2.8). Each record counts toward the next window, whether or
not it carries a usage block; only the records with non-zero usage contribute tokens.

The fixed contract (engine.md section 2.B), implemented here as pure functions:

* :func:`parse_generator_metadata` returns ``None`` only when there are no records. Otherwise it
  keeps the record count (``entry_count``) even when no record carries usage, and says so with
  ``has_usage``.
* :func:`next_generator_offset`: a known window start advances by the record count; an unknown
  start stays unknown; zero records or a failed read give ``None`` (Q2.1, Q2.2). Never 0.
* :func:`resume_offsets`: a stored offset that is a non-negative integer is used as is; otherwise
  a resumed cascade is snapshotted from offset 0. An unreadable generator offset stays unknown,
  and :func:`metadata_request_offset` then abstains (warn log, Q2.4) instead of asking from 0.
* :func:`offsets_to_store`: what the handler checks back into the pool. The generator offset is
  passed through as returned by the turn, ``None`` included (Q2.3: correctness over the
  baseline's fallback to the checked-out entry's old start, which re-bills that turn).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

log = logging.getLogger("engine.usage")

#: The metadata RPC's client-side timeout (engine.md section 2.C).
METADATA_TIMEOUT_S = 5.0

GeneratorMetadataResponse = ls.GetCascadeTrajectoryGeneratorMetadataResponse


class GeneratorMetadataError(ValueError):
    """Raw bytes that do not decode as a GetCascadeTrajectoryGeneratorMetadataResponse.

    Callers treat it like any other failed read: the window end is unknown.
    """


@dataclass(frozen=True)
class GeneratorUsage:
    """What one generator-metadata window holds.

    ``entry_count`` is the number of records in the window, records without usage included. The
    token figures sum the records whose usage is non-zero; they are all 0 when ``has_usage`` is
    false, in which case they are not real figures and the step-level fallback applies.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    entry_count: int
    has_usage: bool


def _decode(response: GeneratorMetadataResponse | bytes | bytearray | memoryview) -> GeneratorMetadataResponse:
    if isinstance(response, GeneratorMetadataResponse):
        return response
    try:
        return GeneratorMetadataResponse.FromString(bytes(response))
    except DecodeError as exc:
        raise GeneratorMetadataError(f"undecodable generator metadata: {exc}") from exc


def parse_generator_metadata(
    response: GeneratorMetadataResponse | bytes | bytearray | memoryview,
) -> GeneratorUsage | None:
    """The usage of one metadata window; ``None`` only when the window holds no records.

    Accepts the decoded response or its raw bytes. Every top-level record counts toward
    ``entry_count``; a record's usage is ``chat_model(1).usage(4)`` fields 2/3/4/5, and a record
    whose four values are all zero (or that has no such block) adds no tokens.
    Raises :class:`GeneratorMetadataError` when raw bytes do not decode.
    """
    records = _decode(response).generator_metadata
    if not records:
        return None
    input_tokens = output_tokens = cache_read = cache_write = 0
    has_usage = False
    for record in records:
        if not record.HasField("chat_model"):
            continue
        usage = record.chat_model.usage
        values = (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens)
        if not any(values):
            continue
        has_usage = True
        input_tokens += usage.input_tokens
        output_tokens += usage.output_tokens
        cache_write += usage.cache_write_tokens
        cache_read += usage.cache_read_tokens
    return GeneratorUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        entry_count=len(records),
        has_usage=has_usage,
    )


def billable_usage(usage: GeneratorUsage | None) -> GeneratorUsage | None:
    """The turn's ``serverUsage``: set only when some record carried usage.

    ``None`` tells the caller to sum the per-step ``metadata.model_usage`` values instead (the
    step-level fallback), which the fix keeps running for windows without usage.
    """
    return usage if usage is not None and usage.has_usage else None


def usage_log_line(usage: GeneratorUsage) -> str:
    """The client's usage log line."""
    return (
        f"Cascade usage: in={usage.input_tokens} out={usage.output_tokens} "
        f"cache_r={usage.cache_read_tokens} cache_w={usage.cache_write_tokens}"
    )


# ---------------------------------------------------------------------------------------------- offsets


def known_offset(value: object) -> int | None:
    """The client's validity test for a stored offset (``Number.isInteger(v) && v >= 0``).

    Returns the offset as an ``int`` when it passes (``2.0`` gives 2), else ``None`` (unknown).
    ``True``/``False`` are not numbers here (JSON booleans are not integers in JS either).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 0:
        return int(value)
    return None


def is_known_offset(value: object) -> bool:
    """Whether :func:`known_offset` accepts ``value``."""
    return known_offset(value) is not None


def next_generator_offset(start: int | None, usage: GeneratorUsage | None) -> int | None:
    """The generator offset a turn hands back: ``start + entry_count`` when both are known.

    * An unknown start (``None``; the turn abstained from the RPC) stays unknown.
    * ``usage is None`` is a window with no records or a failed read (Q2.1/Q2.2): unknown, so the
      next resume re-derives it from a snapshot. It never falls back to ``start`` or to 0.
    * Records without usage advance the window like any other record.
    """
    known = known_offset(start)
    if known is None or usage is None:
        return None
    return known + usage.entry_count


def next_step_offset(start: int, yielded_steps: int, thinking_steps: int, last_step_count: int) -> int:
    """The step (polling) cursor after a turn: ``start + max(yielded, thinking, last step count)``.

    ``yielded_steps``/``thinking_steps`` are how many distinct step indices produced text or
    thinking, ``last_step_count`` the length of the last polled step list (client.js end of turn).
    """
    return start + max(yielded_steps, thinking_steps, last_step_count)


@dataclass(frozen=True)
class TurnOffsets:
    """Where a turn starts reading: the step cursor and the generator-metadata window.

    ``generator_offset is None`` means unknown: the turn must not ask the metadata RPC from 0.
    """

    step_offset: int
    generator_offset: int | None

    @property
    def generator_offset_known(self) -> bool:
        return self.generator_offset is not None


def fresh_offsets() -> TurnOffsets:
    """A fresh cascade, including the restart after a rejected resume: both offsets 0, and known."""
    return TurnOffsets(step_offset=0, generator_offset=0)


def resume_offsets(
    stored_step_offset: object,
    stored_generator_offset: object,
    *,
    read_step_count: Callable[[], int],
    read_generator_snapshot: Callable[[], GeneratorUsage | None],
) -> TurnOffsets:
    """The start offsets of a resumed cascade (client.js resume snapshot, as fixed by D5).

    A stored offset passing :func:`is_known_offset` is used as is. Otherwise the matching
    snapshot from offset 0 is read (only the ones needed):

    * steps: ``read_step_count()`` is the number of steps from 0; a failure keeps the step cursor's
      baseline default of 0 (the step offset is outside D5);
    * generator: ``read_generator_snapshot()`` is the parsed metadata from 0. Its ``entry_count``
      is the start; zero records (``None``, Q2.1) or a failure leave it **unknown**.

    A failed snapshot logs ``Cascade resume snapshot failed: <error>`` at warning level.
    """
    step_offset = known_offset(stored_step_offset)
    if step_offset is None:
        try:
            step_offset = read_step_count()
        except Exception as exc:
            log.warning("Cascade resume snapshot failed: %s", exc)
            step_offset = 0
    generator_offset = known_offset(stored_generator_offset)
    if generator_offset is None:
        try:
            snapshot = read_generator_snapshot()
        except Exception as exc:
            log.warning("Cascade resume snapshot failed: %s", exc)
            snapshot = None
        generator_offset = snapshot.entry_count if snapshot is not None else None
    return TurnOffsets(step_offset=step_offset, generator_offset=generator_offset)


def abstain_log_line(cascade_id: str) -> str:
    """The warning of a turn that skips generator-metadata usage (Q2.4 wording)."""
    return (
        f"Cascade usage: generator offset unknown for resumed cascade {cascade_id[:8]}; "
        "skipping generator-metadata usage this turn"
    )


def metadata_request_offset(start: int | None, cascade_id: str) -> int | None:
    """The ``generator_metadata_offset`` to ask at the end of a turn, or ``None`` to abstain.

    An unknown start abstains with the Q2.4 warning: asking from 0 would bill every earlier turn of
    the cascade again. A known start is returned as is (the request omits field 2 when it is 0).
    """
    known = known_offset(start)
    if known is None:
        log.warning("%s", abstain_log_line(cascade_id))
    return known


def offsets_to_store(
    turn_step_offset: object, turn_generator_offset: int | None, reused_step_offset: object = None
) -> tuple[object, int | None]:
    """The ``(stepOffset, generatorOffset)`` the handler checks into the pool after a turn.

    The step offset keeps chat.js's fallback: a non-finite value from the turn is replaced by the
    checked-out entry's step offset. The generator offset is passed through unchanged, ``None``
    included (Q2.3 resolved for correctness; the baseline fell back to the old start, which makes
    the next turn re-bill this one).
    """
    step: object = turn_step_offset
    if not _is_finite_number(step) and reused_step_offset is not None:
        step = reused_step_offset
    return step, turn_generator_offset


def _is_finite_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)

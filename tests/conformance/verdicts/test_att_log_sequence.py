"""A durable-log defect fails ATT-1 with the case that shows it, never an ``error`` (issue 44).

The defect: after an operation of several records, the session log's next record number advanced by
one, so the next commit's first record collided with one the log had just written. The engine's log
refuses such a write whole (``SessionLogWriteRefused``; the history does not change), the reference's
``session.commit`` answers ``failed`` as the HTTP front answers an error, and ATT-1 holds that against
it: nothing asked that commit's log write to fail, so its tool results are neither committed nor
persisted. Before, the reference crashed on the collision and every ATT invariant was an ``error``, which
is no catch."""

from __future__ import annotations

from typing import Any

from conformance.runner import Status
from conformance.targets.reference import ReferenceTarget
from tests.support.verdicts import run_on

_SESSION = "conformance-session"  # the reference's one session (conformance/targets/reference/session_ops.py)


class MiscountsItsLog(ReferenceTarget):
    """The reference with the defect: its log's next record number advances by one per commit, however
    many records the commit wrote."""

    def session_commit(self, items: list[dict[str, Any]], fail_log_write: bool = False) -> dict[str, Any]:
        log = self._session_log
        assert log is not None
        before = log._next_seq.get(_SESSION)
        answer = super().session_commit(items, fail_log_write)
        if before is not None and "failed" not in answer:
            log._next_seq[_SESSION] = before + 1
        return answer


def miscounts_its_log() -> MiscountsItsLog:
    return MiscountsItsLog()


def test_a_log_whose_next_record_number_advances_by_one_fails_att_1_with_its_case() -> None:
    result = run_on(f"python:{__name__}:miscounts_its_log", "ATT-1")
    assert result.status == Status.FAIL, (result.status, result.message)
    assert "failed although nothing made its log write fail: SessionLogWriteRefused" in result.message
    assert "its tool results are neither committed nor persisted" in result.message
    case = result.failures[0].case
    assert case is not None
    rounds = case["rounds"]
    # What shows it: a round of several records, then another commit (the one that collided).
    assert len(rounds) >= 2
    assert any(len(batch) >= 2 for batch in rounds[:-1])


def test_the_reference_keeps_counting_its_records_and_passes_att_1() -> None:
    result = run_on("python:conformance.targets.reference:make_target", "ATT-1", max_examples=10)
    assert result.status == Status.PASS, (result.status, result.message)

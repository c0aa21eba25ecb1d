"""Sessions that mishandle a failing session-log write, for ATT-1's verdict meta-tests
(``python:tests.conformance.verdicts.log_faults_support:...``). Each is the reference target with one defect."""

from __future__ import annotations

from typing import Any

from conformance.targets.reference import ReferenceTarget
from engine.sessions import History, Session, item_from_json


class KeepsTheUnloggedRound(ReferenceTarget):
    """Says the commit failed, but its history took the round anyway (memory changed before the log had it)."""

    def session_commit(self, items: list[dict[str, Any]], fail_log_write: bool = False) -> dict[str, Any]:
        answer = super().session_commit(items, fail_log_write)
        if "failed" in answer:
            session = self._open_session()
            kept, pruned = session.history.snapshot()
            history = History((*kept, *map(item_from_json, items)), pruned)
            self._session = Session(session.session_id, history, log=None, capabilities=session.capabilities)
        return answer


class SwallowsTheFailure(ReferenceTarget):
    """Its log write fails and its history is unchanged, but the commit answers success."""

    def session_commit(self, items: list[dict[str, Any]], fail_log_write: bool = False) -> dict[str, Any]:
        super().session_commit(items, fail_log_write)
        return {}


class CannotFailALogWrite(ReferenceTarget):
    """A right session that cannot be told to fail a log write: it declares no capability for session.commit,
    and its session.commit takes no fault (the kit must never send one)."""

    def capabilities(self, op: str) -> dict[str, Any]:
        return {} if op == "session.commit" else dict(super().capabilities(op))

    def session_commit(self, items: list[dict[str, Any]]) -> dict[str, Any]:  # type: ignore[override]
        return super().session_commit(items)


def keeps_the_unlogged_round() -> KeepsTheUnloggedRound:
    return KeepsTheUnloggedRound()


def swallows_the_failure() -> SwallowsTheFailure:
    return SwallowsTheFailure()


def cannot_fail_a_log_write() -> CannotFailALogWrite:
    return CannotFailALogWrite()

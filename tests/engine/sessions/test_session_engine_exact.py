"""One session's identity and logging after a restore, and the exact refusal of a result that is not one."""

from __future__ import annotations

import pytest

from engine.sessions.items import History, Message, ToolResult
from engine.sessions.log import SessionLog
from engine.sessions.lowering import Capabilities
from engine.sessions.session import Session
from tests.engine.session_support import sample_items


def test_a_session_keeps_its_id_and_log(log: SessionLog) -> None:
    session = Session("s7", History(), log=log, capabilities=Capabilities(vision=False))
    assert (session.session_id, session.log, session.capabilities) == ("s7", log, Capabilities(vision=False))


def test_a_restored_session_keeps_logging_to_the_log_it_came_from(log: SessionLog) -> None:
    Session("s1", History(sample_items()[:5]), log=log, capabilities=Capabilities(vision=True))
    log.detach("s1")
    restored = Session.restore("s1", log, Capabilities(vision=True))
    assert (restored.session_id, restored.log) == ("s1", log)
    result = sample_items()[5]
    assert isinstance(result, ToolResult)
    restored.add_tool_results([result])
    assert log.restore("s1") == History(sample_items()[:6])


def test_a_non_result_is_refused_naming_its_position_and_type() -> None:
    session = Session("s1", History(), log=None, capabilities=Capabilities(vision=True))
    result = ToolResult("c", "s")
    with pytest.raises(TypeError, match=r"^results\[1\]: expected ToolResult, got Message$"):
        session.add_tool_results([result, Message("user", "x")])  # type: ignore[list-item]
    assert session.history.items == ()

"""Deliberately broken sessions for the ATT verdict meta-tests (``python:tests.support.broken_sessions:...``)."""

from __future__ import annotations

import base64
from typing import Any, Literal

from conformance.targets.reference import ReferenceTarget
from engine.sessions.items import History, ToolResult
from engine.sessions.session import Session


class ClearsAfterBuild(ReferenceTarget):
    """Seed 002's post-build clear: once a request is built, the results' images leave the history."""

    def session_build(self, upstream: Literal["responses", "chat"], prune: dict[str, int] | None) -> dict[str, Any]:
        built = super().session_build(upstream, prune)
        session = self._open_session()
        kept = [
            ToolResult(i.call_id, i.summary, i.content, i.is_error) if isinstance(i, ToolResult) else i
            for i in session.history.items
        ]
        self._session = Session(session.session_id, History(kept), log=None, capabilities=session.capabilities)
        return built


class ForgetsOnRestart(ReferenceTarget):
    """Keeps its history in memory only: a restore starts from nothing."""

    def session_restore(self) -> dict[str, Any]:
        session = self._open_session()
        self._session = Session(session.session_id, History(), log=None, capabilities=session.capabilities)
        return {}


class ShowsTheBytes(ReferenceTarget):
    """Its exploration view prints every attachment as base64."""

    def session_views(self) -> dict[str, Any]:
        views = super().session_views()
        images = [
            base64.b64encode(a.data).decode("ascii")
            for i in self._open_session().history.items
            if isinstance(i, ToolResult)
            for a in i.attachments
        ]
        return {**views, "exploration": views["exploration"] + "\n" + "\n".join(images)}


class WithoutViews(ReferenceTarget):
    """Has no exploration or compaction view (no session.views operation)."""

    session_views = None  # type: ignore[assignment]


def clears_after_build() -> ClearsAfterBuild:
    return ClearsAfterBuild()


def forgets_on_restart() -> ForgetsOnRestart:
    return ForgetsOnRestart()


def shows_the_bytes() -> ShowsTheBytes:
    return ShowsTheBytes()


def without_views() -> WithoutViews:
    return WithoutViews()

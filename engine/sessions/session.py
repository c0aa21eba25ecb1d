"""One session of the reference engine (seed 002): commit before build, build without writing back.

* :meth:`Session.add_tool_results` commits the results to the durable history (and so to the session log, when
  there is one) before it returns: nothing model-visible exists only inside a request.
* :meth:`Session.build` first records a prune decision when :func:`~engine.sessions.pruning.decide_prune` names
  call ids (a durable, sticky change), then lowers one snapshot of the history. Building changes nothing else:
  the same history builds the same bytes, on every call and after a restore.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

from engine.sessions.items import History, ToolResult
from engine.sessions.log import SessionLog
from engine.sessions.lowering import Capabilities, lower_cascade_messages, lower_chat, lower_responses
from engine.sessions.pruning import PruneConfig, decide_prune

Upstream: TypeAlias = Literal["responses", "chat", "cascade"]
_Lowering: TypeAlias = Callable[..., list[dict[str, Any]]]
_LOWERINGS: Final[dict[str, _Lowering]] = {
    "responses": lower_responses,
    "chat": lower_chat,
    "cascade": lower_cascade_messages,
}


class Session:
    """A session's durable history, its optional log and the model's capabilities."""

    def __init__(
        self, session_id: str, history: History, *, log: SessionLog | None, capabilities: Capabilities
    ) -> None:
        if log is not None:
            log.attach(session_id, history)
        self.session_id = session_id
        self.log = log
        self.capabilities = capabilities
        self._history = history

    @classmethod
    def restore(cls, session_id: str, log: SessionLog, capabilities: Capabilities) -> Session:
        """The session ``log`` recorded (SessionLogError for a missing or corrupt record), logging on."""
        return cls(session_id, log.restore(session_id), log=log, capabilities=capabilities)

    @property
    def history(self) -> History:
        return self._history

    def add_tool_results(self, results: Sequence[ToolResult]) -> None:
        """Commit ``results`` in order, durably, before any request can see them."""
        for index, result in enumerate(results):
            if not isinstance(result, ToolResult):
                raise TypeError(f"results[{index}]: expected ToolResult, got {type(result).__name__}")
        self._history.commit(*results)

    def build(self, upstream: Upstream, prune: PruneConfig | None = None) -> list[dict[str, Any]]:
        """The request input for ``upstream`` (``responses``, ``chat`` or ``cascade``) from the committed history."""
        lower = _LOWERINGS.get(upstream)
        if lower is None:
            raise ValueError(f"upstream: {upstream!r} is not one of {', '.join(_LOWERINGS)}")
        if prune is not None:
            self._history.record_prune(decide_prune(self._history, prune))  # no ids: no record
        items, pruned = self._history.snapshot()
        body = lower(items, vision=self.capabilities.vision, pruned=pruned)
        return body

"""Durable sessions (seed 002): the append-only :class:`History` of items, its SQLite
:class:`SessionLog`, and the pure projections a turn needs (lowering to provider shapes, pruning, bounded
views). :class:`Session` commits before it builds and never writes back while building.

This package imports nothing else of the engine.
"""

from __future__ import annotations

from engine.sessions.items import History, ImageAttachment, Item, Message, ToolCall, ToolResult, item_from_json
from engine.sessions.log import SessionLog, SessionLogWriteRefused, default_log_path
from engine.sessions.lowering import Capabilities, lower_cascade_messages
from engine.sessions.pruning import PruneConfig
from engine.sessions.session import Session
from engine.sessions.views import compaction_input, exploration_view

__all__ = [
    "Capabilities",
    "History",
    "ImageAttachment",
    "Item",
    "Message",
    "PruneConfig",
    "Session",
    "SessionLog",
    "SessionLogWriteRefused",
    "ToolCall",
    "ToolResult",
    "compaction_input",
    "default_log_path",
    "exploration_view",
    "item_from_json",
    "lower_cascade_messages",
]

"""The Cascade prompt: the one text field and the flat image list of a Send.

:func:`build_cascade_prompt` builds it (:class:`PromptBuild`) from chat :class:`Message` values: the system
text (:mod:`engine.prompt.system`), the replayed history window and its images, and the current turn's
content (:mod:`engine.prompt.extract`). :data:`METRICS` counts what history replay kept and dropped.
"""

from __future__ import annotations

from engine.prompt.build import PromptBuild, build_cascade_prompt
from engine.prompt.extract import Fetcher, content_to_string, safe_block_to_string
from engine.prompt.messages import Message
from engine.prompt.metrics import METRICS, ImageHistoryMetrics

__all__ = [
    "METRICS",
    "Fetcher",
    "ImageHistoryMetrics",
    "Message",
    "PromptBuild",
    "build_cascade_prompt",
    "content_to_string",
    "safe_block_to_string",
]

"""Pruning durable tool results out of a request (seed 002, yoi.md §4): the decision and the projection.

Pruning never edits history. :func:`decide_prune` names the call ids whose results may be cleared; the
engine records that decision with ``History.record_prune`` (sticky until compaction), and every
lowering then applies :func:`project` to a snapshot, so a pruned result is sent as its summary alone
(``content`` None, no attachments) while the stored result keeps its detail and images.

The token estimate (:func:`estimate_tokens`) is deliberately simple and documented:

* text costs its UTF-8 bytes / 4, rounded up (a message's text; a call's name plus arguments; a
  result's ``summary`` or ``summary + "\\n" + content``, exactly the text the lowerings send);
* every image attachment costs a flat :data:`IMAGE_TOKENS`, whatever its size. The base64 length is
  never counted: a 1 MiB PNG is not 350 000 tokens (Yoi's ``item_bytes`` quirk, which pushes the
  protected boundary far back for image results), it is one image to the model.

Savings are what the projection removes, in the same unit: ``estimate(result) - estimate(project(result))``.
An image-only result therefore saves ``IMAGE_TOKENS`` per image and is prunable on its own, a deliberate
departure from Yoi, whose savings estimator counts ``content`` bytes only, so a run of image-only
results kept its pixels forever unless some text result happened to trigger the prune.

The protected suffix is found by walking back from the newest item until the suffix holds at least
``protected_tokens``; ``protected_tokens == 0`` protects nothing, and a history that never reaches it is
protected whole. Candidates are the ToolResults before the suffix that still carry detail (``content``
or attachments) and are not pruned already; the decision fires only when their total savings reach
``min_savings`` (exactly ``min_savings`` fires).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from engine.sessions.items import History, Item, ToolCall, ToolResult, result_text

__all__ = [
    "IMAGE_TOKENS",
    "PruneConfig",
    "decide_prune",
    "estimate_tokens",
    "project",
    "protected_start",
    "prune_candidates",
    "prune_savings",
]

#: The flat estimate for one image attachment: about what a one-megapixel image costs on current
#: vision models (OpenAI high detail 765-1105, Anthropic ~1300), rounded to a power of two.
IMAGE_TOKENS: Final = 1024


@dataclass(frozen=True)
class PruneConfig:
    """Yoi's ``[compaction] prune_protected_tokens / prune_min_savings`` (defaults 8000 / 4096)."""

    protected_tokens: int = 8000
    min_savings: int = 4096

    def __post_init__(self) -> None:
        if self.protected_tokens < 0 or self.min_savings < 0:
            raise ValueError(f"prune limits must be non-negative, got {self}")


def project(item: Item, pruned: frozenset[str]) -> Item:
    """The item as a request sees it: a pruned result keeps ``call_id``, ``summary`` and ``is_error``
    and loses ``content`` and attachments; everything else is returned as is."""
    if isinstance(item, ToolResult) and item.call_id in pruned:
        return replace(item, content=None, attachments=())
    return item


def _text_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // 4)


def estimate_tokens(item: Item) -> int:
    """Text UTF-8 bytes / 4 (rounded up) plus :data:`IMAGE_TOKENS` per image attachment."""
    if isinstance(item, ToolResult):
        return _text_tokens(result_text(item)) + IMAGE_TOKENS * len(item.attachments)
    if isinstance(item, ToolCall):
        return _text_tokens(item.name + item.arguments)
    return _text_tokens(item.text)


def protected_start(items: Sequence[Item], pruned: frozenset[str], config: PruneConfig) -> int:
    """Index of the first protected item: the suffix ``items[start:]`` is the shortest one holding at
    least ``protected_tokens`` (items estimated as sent), 0 when the whole history is shorter, and
    ``len(items)`` when ``protected_tokens`` is 0."""
    start, suffix = len(items), 0
    while start > 0 and suffix < config.protected_tokens:
        start -= 1
        suffix += estimate_tokens(project(items[start], pruned))
    return start


def _has_detail(result: ToolResult) -> bool:
    return result.content is not None or bool(result.attachments)


def prune_candidates(items: Sequence[Item], pruned: Iterable[str], config: PruneConfig) -> list[str]:
    """Call ids (item order, each once) of the ToolResults before the protected suffix that still carry
    ``content`` or attachments and are not pruned already."""
    done = frozenset(pruned)
    seen = set(done)
    candidates: list[str] = []
    for item in items[: protected_start(items, done, config)]:
        if isinstance(item, ToolResult) and item.call_id not in seen and _has_detail(item):
            seen.add(item.call_id)
            candidates.append(item.call_id)
    return candidates


def prune_savings(items: Sequence[Item], call_ids: Iterable[str]) -> int:
    """Estimated tokens the projection removes from the results answering ``call_ids`` (images count)."""
    chosen = frozenset(call_ids)
    return sum(
        estimate_tokens(item) - estimate_tokens(project(item, chosen))
        for item in items
        if isinstance(item, ToolResult) and item.call_id in chosen
    )


def decide_prune(history: History, config: PruneConfig) -> list[str]:
    """The call ids to prune now: the candidates when their savings reach ``min_savings``, else ``[]``.

    Pure: the caller records a non-empty decision with ``history.record_prune`` (sticky)."""
    items = history.items
    candidates = prune_candidates(items, history.pruned, config)
    if not candidates or prune_savings(items, candidates) < config.min_savings:
        return []
    return candidates

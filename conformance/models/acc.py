"""ACC: the kit's model of cache-replay accounting (seed 001 D4), from the fake's wire and ledgers.

What ran upstream is what the fake saw: each accepted ``SendUserCascadeMessage`` is one upstream
turn, and the tokens the gateway may bill are the usage of the generator records the fake handed
out, each record (cascade, index) once. A request that reached no Send was served from a cache.
The journal and ledger readings this takes (Sends, served tokens, ledger deltas) are in
:mod:`conformance.models.journal`, which the SO family shares; here is what only ACC adds.
"""

from __future__ import annotations

from typing import Any

from conformance.models.journal import CATEGORIES


def no_tokens() -> dict[str, int]:
    return dict.fromkeys(CATEGORIES, 0)


def usage_numbers(usage: object) -> dict[str, Any] | None:
    """The token counts of an OpenAI usage object that a replay must carry unchanged."""
    if not isinstance(usage, dict):
        return None
    return {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


# Where a gateway's usage counts the LS's cache-write tokens (ACC-4): its declared policy.
CACHE_WRITES_IN_PROMPT = "prompt"
CACHE_WRITES_APART = "apart"


def billed(records: list[dict[str, int] | None]) -> dict[str, int]:
    """The sums of a turn's generator records by category (records without usage add nothing)."""
    return {name: sum((record or {}).get(field, 0) for record in records) for name, field in CATEGORIES.items()}


def prompt_tokens(sums: dict[str, int], cache_writes: str) -> int:
    """``prompt_tokens`` under a cache-write policy: fresh input and cache reads, plus cache writes when
    the gateway counts them as prompt."""
    writes = sums["cache_write"] if cache_writes == CACHE_WRITES_IN_PROMPT else 0
    return sums["input"] + sums["cache_read"] + writes


def usage_frames(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream chunks that carry a usage object (``"usage": null`` is none)."""
    return [chunk for chunk in chunks if isinstance(chunk.get("usage"), dict)]

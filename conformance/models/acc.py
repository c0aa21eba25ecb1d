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

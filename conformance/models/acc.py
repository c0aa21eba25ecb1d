"""ACC: the kit's model of cache-replay accounting (seed 001 D4), from the fake's wire and ledgers.

What ran upstream is what the fake saw: each accepted ``SendUserCascadeMessage`` is one upstream
turn, and the tokens the gateway may bill are the usage of the generator records the fake handed
out, each record (cascade, index) once. A request that reached no Send was served from a cache.
Ledger documents are the kit's own format (``conformance.operations.LEDGER_SCHEMA``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.models.off import META, SEND

CATEGORIES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}


def sends(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Sends the fake accepted, in order: one per upstream turn."""
    return [e for e in entries if e.get("method") == SEND and e.get("status") == "OK"]


def accepted_sends(entries: Sequence[Mapping[str, Any]]) -> int:
    return len(sends(entries))


def _count(value: object) -> int:
    # 64-bit integers arrive as strings in protobuf's JSON mapping.
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return 0


def served_tokens(entries: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The usage of every generator record the fake handed out, each (cascade, index) counted once."""
    seen: dict[tuple[str, int], dict[str, int]] = {}
    for entry in entries:
        if entry.get("method") != META or entry.get("status") != "OK":
            continue
        request = entry.get("request") or {}
        response = entry.get("response") or {}
        offset = _count(request.get("generator_metadata_offset", 0))
        for index, record in enumerate(response.get("generator_metadata") or ()):
            usage = ((record or {}).get("chat_model") or {}).get("usage") or {}
            seen.setdefault(
                (str(request.get("cascade_id", "")), offset + index),
                {name: _count(usage.get(field)) for name, field in CATEGORIES.items()},
            )
    return {name: sum(record[name] for record in seen.values()) for name in CATEGORIES}


def delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What a ledger gained between two documents: tokens, credits, served, cache_served, total
    account spend, and the rows appended."""
    new_rows = after["row_count"] - before["row_count"]
    rows = list(after["rows"][-new_rows:]) if new_rows > 0 else []
    return {
        "tokens": {k: after["tokens"][k] - before["tokens"][k] for k in CATEGORIES},
        "credits": round(after["credits"] - before["credits"], 9),
        "served": after["served"] - before["served"],
        "cache_served": after["cache_served"] - before["cache_served"],
        "spend": sum(after["account_spend"].values()) - sum(before["account_spend"].values()),
        "new_rows": new_rows,
        "rows": rows,
    }


def no_tokens() -> dict[str, int]:
    return dict.fromkeys(CATEGORIES, 0)


def usage_numbers(usage: object) -> dict[str, Any] | None:
    """The token counts of an OpenAI usage object that a replay must carry unchanged."""
    if not isinstance(usage, dict):
        return None
    return {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}

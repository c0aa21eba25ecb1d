"""The fake's journal and the kit's ledgers read the way several families read them: which RPC an
entry is, the Sends the fake accepted (one per upstream turn), the tokens of the generator records it
handed out, and what a ledger gained between two documents.

Entries are the fake's journal entries as JSON (``fakels.journal``); ledger documents are the kit's
own format (``conformance.operations.LEDGER_SCHEMA``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

META = "GetCascadeTrajectoryGeneratorMetadata"
SEND = "SendUserCascadeMessage"
START = "StartCascade"

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


def send_text(entry: Mapping[str, Any]) -> str:
    """The prompt text a Send carried (``items[0].text``)."""
    items = (entry.get("request") or {}).get("items") or [{}]
    return str(items[0].get("text", ""))


def cascade_of(entry: Mapping[str, Any]) -> str:
    """The cascade id a request names ("" when none)."""
    return str((entry.get("request") or {}).get("cascade_id", ""))


def unescaped(text: str) -> str:
    """``text`` read modulo a framing that escapes closing tags in turn texts (``</human>`` written as
    ``<\\/human>``): applied to the prompt and to the expected texts alike, so a turn whose own text
    holds ``<\\/`` is found as it was sent."""
    return text.replace("<\\/", "</")

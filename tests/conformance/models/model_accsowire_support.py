"""Journal entries and ledger documents in the exact shapes the kit's ACC/SO models read.

Entries follow :meth:`fakels.journal.JournalEntry.to_json`: the decoded request and response are
field-named dicts as :func:`fakels.decoder.message_to_dict` writes them, so proto3 defaults (an
offset of 0, an empty string, a zero count) are absent rather than present with their default.
"""

from __future__ import annotations

from typing import Any

SEND = "SendUserCascadeMessage"
META = "GetCascadeTrajectoryGeneratorMetadata"
STEPS = "GetCascadeTrajectorySteps"


def entry(
    seq: int,
    method: str,
    request: dict[str, Any] | None,
    *,
    status: str = "OK",
    response: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One journal entry as the fake writes it (``JournalEntry.to_json``)."""
    return {
        "seq": seq,
        "time": float(seq),
        "transport": "grpc",
        "method": method,
        "path": f"/exa.language_server_pb.LanguageServerService/{method}",
        "headers": {"content-type": "application/grpc"},
        "raw_b64": "",
        "raw_len": 0,
        "request": request,
        "unknown_fields": [],
        "status": status,
        "error": "" if status == "OK" else f"fakels: {status.lower()}",
        "response": response,
        "notes": [],
    }


def send(seq: int, cascade: str, *, status: str = "OK") -> dict[str, Any]:
    """A SendUserCascadeMessage the fake accepted (or rejected with ``status``)."""
    request = {"cascade_id": cascade, "items": [{"text": f"turn {seq}"}]}
    return entry(seq, SEND, request, status=status, response={} if status == "OK" else None)


def usage(inp: int = 0, out: int = 0, read: int = 0, write: int = 0) -> dict[str, Any]:
    """A ModelUsageStats as message_to_dict writes it: zero counts are left out."""
    named = {"input_tokens": inp, "output_tokens": out, "cache_read_tokens": read, "cache_write_tokens": write}
    return {name: value for name, value in named.items() if value}


def record(stats: dict[str, Any]) -> dict[str, Any]:
    """A CortexStepGeneratorMetadata carrying ``stats`` as its chat model's usage."""
    return {"chat_model": {"usage": stats}}


def meta(seq: int, cascade: str, offset: int, records: list[Any], *, status: str = "OK") -> dict[str, Any]:
    """A GetCascadeTrajectoryGeneratorMetadata call and the records the fake handed out."""
    request: dict[str, Any] = {"cascade_id": cascade} if cascade else {}
    if offset:
        request["generator_metadata_offset"] = offset
    response = ({"generator_metadata": records} if records else {}) if status == "OK" else None
    return entry(seq, META, request, status=status, response=response)


def ledger(
    tokens: tuple[int, int, int, int],
    credits: float,
    served: int,
    cache_served: int,
    spend: dict[str, int],
    rows: list[dict[str, Any]],
    row_count: int | None = None,
) -> dict[str, Any]:
    """A ledger document (``conformance.operations.LEDGER_SCHEMA``)."""
    return {
        "tokens": dict(zip(("input", "output", "cache_read", "cache_write"), tokens, strict=True)),
        "credits": credits,
        "served": served,
        "cache_served": cache_served,
        "account_spend": spend,
        "row_count": len(rows) if row_count is None else row_count,
        "rows": rows,
    }


def row(name: str, credit: float, *, cache_served: bool = False) -> dict[str, Any]:
    """A request row of a ledger; ``name`` goes in the model field so rows are told apart."""
    return {"model": name, "success": True, "cache_served": cache_served, "credit": credit}

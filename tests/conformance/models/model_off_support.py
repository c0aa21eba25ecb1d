"""Journals in the exact shape the fake writes (``JournalEntry.to_json()``), built by hand for the
OFF model's unit tests: what a gateway's Start, Send and metadata-read calls look like once the
fake has decoded and answered them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.models.journal import META, SEND, START

SERVICE = "/exa.language_server_pb.LanguageServerService/"


class Wire:
    """The fake's journal, one call at a time, numbered in arrival order like the fake numbers them."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, method: str, request: dict[str, Any] | None, status: str, response: dict[str, Any] | None) -> Wire:
        """Any journal entry, as given (for shapes the helpers below do not write)."""
        self.entries.append(
            {
                "seq": len(self.entries),
                "time": 0.0,
                "transport": "grpc",
                "method": method,
                "path": SERVICE + method,
                "headers": {"content-type": "application/grpc"},
                "raw_b64": "",
                "raw_len": 0,
                "request": request,
                "unknown_fields": [],
                "status": status,
                "error": "" if status == "OK" else f"{status.lower()}: scripted",
                "response": response,
                "notes": [],
            }
        )
        return self

    def start(self, cascade: str) -> Wire:
        return self.add(START, {"metadata": {"session_id": "s"}}, "OK", {"cascade_id": cascade})

    def send(self, cascade: str, *, status: str = "OK", steps: Sequence[Mapping[str, Any]] = ()) -> Wire:
        """A SendUserCascadeMessage; proto3 leaves an empty field 9 out of the decoded request."""
        request: dict[str, Any] = {"cascade_id": cascade, "items": [{"text": "question"}]}
        if steps:
            request["additional_steps"] = [dict(s) for s in steps]
        return self.add(SEND, request, status, {} if status == "OK" else None)

    def read(self, cascade: str, offset: int, returned: int | None, *, status: str = "UNAVAILABLE") -> Wire:
        """A metadata read from ``offset``: ``returned`` records, or ``None`` for a read the fake failed
        with ``status``. Proto3 leaves offset 0 and an empty record list out of the decoded dicts."""
        request: dict[str, Any] = {"cascade_id": cascade}
        if offset:
            request["generator_metadata_offset"] = offset
        if returned is None:
            return self.add(META, request, status, None)
        response: dict[str, Any] = {}
        if returned:
            response["generator_metadata"] = [{"chat_model": {"model_uid": "m"}} for _ in range(returned)]
        return self.add(META, request, "OK", response)

    def other(self, method: str, cascade: str) -> Wire:
        """A call the OFF model does not read (polling the steps or the trajectory)."""
        return self.add(method, {"cascade_id": cascade}, "OK", {})


def tool_call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}


def step(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """A field-9 step as the fake decodes it: type, status and the one body present."""
    return {"type": 28, "status": "CORTEX_STEP_STATUS_DONE", kind: dict(body)}

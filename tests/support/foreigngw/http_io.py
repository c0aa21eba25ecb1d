"""What the routes share: OpenAI error bodies, the error every layer raises, and the reply interface
the HTTP server gives a route (a JSON answer, or a server-sent event stream)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, Protocol


def log(line: str) -> None:
    """One line on stderr, prefixed with the gateway's name."""
    print(f"foreigngw: {line}", file=sys.stderr, flush=True)


def error_body(message: str, type_: str, code: str | None, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": code, **extra}}


class GatewayError(Exception):
    """A request ends with this status and OpenAI error body."""

    def __init__(self, status: int, message: str, type_: str, code: str | None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.document = error_body(message, type_, code, **extra)

    @property
    def code(self) -> str | None:
        code = self.document["error"]["code"]
        return code if isinstance(code, str) else None


def bad_request(message: str, code: str = "invalid_request", **extra: Any) -> GatewayError:
    return GatewayError(400, message, "invalid_request_error", code, **extra)


def not_found(message: str = "Not found") -> GatewayError:
    """The generic 404 of a route this gateway does not serve."""
    return GatewayError(404, message, "invalid_request_error", None)


def response_not_found(param: str | None = None) -> GatewayError:
    extra = {"param": param} if param else {}
    return GatewayError(404, "Response not found", "invalid_request_error", "response_not_found", **extra)


def not_implemented() -> GatewayError:
    return GatewayError(
        501, "native tool bridge not implemented", "not_implemented", "native_tool_bridge_not_implemented"
    )


class Reply(Protocol):
    """How a route answers: one JSON document, or an event stream (``start_events`` once, then
    ``event`` per ``data:`` line; the stream ends when the route returns). ``connected``: whether the
    client is still there."""

    def json(self, status: int, document: Any, headers: Mapping[str, str] | None = None) -> None: ...

    def start_events(self) -> None: ...

    def event(self, data: str) -> None: ...

    def connected(self) -> bool: ...


def dumps(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

"""OpenAI-style error bodies and the exception that carries one to the HTTP layer."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the client gets as ``{"error": {...}}`` with ``status``; never a traceback."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.retry_after_s = retry_after_s  # sent as Retry-After

    def body(self) -> dict[str, Any]:
        return error_body(self.message, type=self.type, code=self.code, param=self.param)


def error_body(message: str, *, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def bad_request(message: str, *, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


def upstream_error(message: str) -> ApiError:
    return ApiError(502, message, type="api_error", code="upstream_error")


# How long a client is told to wait when the LS rate-limited a turn (it states no wait of its own).
UPSTREAM_RETRY_AFTER_S = 1


def upstream_rate_limited(message: str) -> ApiError:
    """The LS's rate limit (RESOURCE_EXHAUSTED), passed on as one: 429 with Retry-After (TURN-3)."""
    return ApiError(429, message, type="rate_limit_error", code="rate_limited", retry_after_s=UPSTREAM_RETRY_AFTER_S)

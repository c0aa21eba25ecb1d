"""The per-user signal that narrows a caller within one API key (docs/responses-api.md, "Callers").

A multi-user app in front of the gateway sends all its users' requests with one key; each request names
its end user with a per-user signal: the body's ``user``, ``safety_identifier`` or ``prompt_cache_key``,
or ``metadata.conversation_id`` / ``metadata.session_id`` (the first that is a non-blank string). A
bodyless request (``GET`` / ``DELETE /v1/responses/{id}``, ``/input_items``) names it in the
``X-Response-User`` header or the ``user`` query parameter. A blank value is no signal: it never
merges distinct end users into one scope (gateway-fixes P5).

The caller is then the key's identity narrowed by a digest of the signal, so the cache, the store and
the cascade pool never cross end users; the signal itself is never kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Final

from starlette.requests import Request

from engine.http.front import Caller

BODY_FIELDS: Final = ("user", "safety_identifier", "prompt_cache_key")
METADATA_FIELDS: Final = ("conversation_id", "session_id")
READ_HEADER: Final = "x-response-user"
READ_QUERY: Final = "user"


def _signal(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def body_signal(body: object) -> str | None:
    """The per-user signal a request body carries, or None."""
    if not isinstance(body, Mapping):
        return None
    for name in BODY_FIELDS:
        if (found := _signal(body.get(name))) is not None:
            return found
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        for name in METADATA_FIELDS:
            if (found := _signal(metadata.get(name))) is not None:
                return found
    return None


def read_signal(request: Request) -> str | None:
    """The per-user signal a request carries outside its body (header first, then the query)."""
    headers = request.headers.getlist(READ_HEADER)
    if len(headers) == 1 and (found := _signal(headers[0])) is not None:
        return found
    values = request.query_params.getlist(READ_QUERY)
    return _signal(values[0]) if len(values) == 1 else None


def narrowed(caller: Caller, signal: str | None) -> Caller:
    """``caller`` narrowed to the end user ``signal`` names; a signal makes even an anonymous caller one
    identity of its own, so it gets the cache. No signal: ``caller`` as it is."""
    if signal is None:
        return caller
    digest = hashlib.sha256(signal.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Caller(f"{caller.id}/user-{digest}", scoped=True)

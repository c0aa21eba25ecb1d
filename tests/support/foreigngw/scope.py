"""Who a request is, in the ``scoped`` personality: the Bearer key together with the end user a per-user
signal names. Without a signal the caller is anonymous: no cache, no pooled cascade, no stored
response for it, and it reads nobody's.

The signal of a request with a body is its ``user``, ``safety_identifier`` or ``prompt_cache_key``,
else ``metadata.conversation_id`` or ``metadata.session_id``; a bodyless request (GET and DELETE of a
stored response) carries it where ``FGW_READ_SCOPE`` says: ``header:NAME`` or ``query:NAME``. Other
personalities scope by the key alone.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from tests.support.foreigngw.settings import Settings

_BODY = ("user", "safety_identifier", "prompt_cache_key")
_METADATA = ("conversation_id", "session_id")


def _named(settings: Settings, value: Any) -> str | None:
    """The signal ``value`` gives: a non-blank string, stripped; None for anything else."""
    if settings.defect("blank-user-scope"):
        # The defect blank-user-scope: any string is a signal, blank too, as given (typeof === "string").
        return value if isinstance(value, str) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _scoped(key: str, signal: str | None) -> str | None:
    return None if signal is None else f"{key}\x00{signal}"


def body_caller(settings: Settings, key: str, body: Any) -> str | None:
    """The caller of a request with ``body``; None: anonymous (scoped personality, no signal)."""
    if not settings.scoped:
        return key
    signal = None
    if isinstance(body, Mapping):
        signals = (_named(settings, body.get(name)) for name in _BODY)
        signal = next((s for s in signals if s is not None), None)
        metadata = body.get("metadata")
        if signal is None and isinstance(metadata, Mapping):
            signals = (_named(settings, metadata.get(name)) for name in _METADATA)
            signal = next((s for s in signals if s is not None), None)
    return _scoped(key, signal)


def read_caller(settings: Settings, key: str, headers: Mapping[str, str], target: str) -> str | None:
    """The caller of a bodyless request (``target``: its path and query); None: anonymous."""
    if not settings.scoped:
        return key
    where, name = settings.read_scope
    if where == "header":
        signal = _named(settings, headers.get(name))
    else:
        blank = settings.defect("blank-user-scope")  # a blank parameter is a signal too (see _named)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query, keep_blank_values=blank)
        values = query.get(name, [])
        signal = _named(settings, values[0]) if len(values) == 1 else None
    return _scoped(key, signal)

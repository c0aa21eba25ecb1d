"""Who the kit is when it talks to a black-box gateway: its callers, each an API key together with a
per-user signal, and how that signal travels.

Real gateways share their response cache, their response store's reads and cascade reuse only with a
caller that carries a per-user signal (the body's ``user``, ``safety_identifier``, ``prompt_cache_key``
or conversation ids in ``metadata``); an anonymous caller behind a shared key gets none of them. So
every request the kit sends carries its caller's signal (``--caller-scope``), and bodyless requests
(``GET`` and ``DELETE /v1/responses/{id}``, ``/input_items``) carry it where the gateway reads it
(``--read-scope header:NAME`` or ``query:NAME``).

With one API key the kit's callers are that key with two signals, as a multi-user app in front of a
gateway is; with two keys each key is a caller, and the key of the first with a third signal is one
more: the "other caller" of an example alternates between the two, so both ways are exercised.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from conformance.errors import TargetSpecError
from conformance.options import CALLER_SCOPE_CHOICES

CALLER_SCOPES = CALLER_SCOPE_CHOICES
DEFAULT_CALLER_SCOPE = "user"
_HEADER_NAME_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@dataclass(frozen=True)
class ReadScope:
    """Where a bodyless request carries its caller's signal: a header or a query parameter."""

    where: Literal["header", "query"]
    name: str

    def __str__(self) -> str:
        return f"{self.where}:{self.name}"


def parse_read_scope(text: str, flag: str = "--read-scope") -> ReadScope:
    """``header:NAME`` or ``query:NAME``; anything else is a usage error of one line."""
    where, sep, name = text.partition(":")
    if not sep or where not in ("header", "query") or not name:
        raise TargetSpecError(
            f"{flag} {text!r}: expected header:NAME or query:NAME (e.g. {flag} header:x-response-user or "
            f"{flag} query:user)"
        )
    if where == "header" and not set(name) <= _HEADER_NAME_CHARS:
        raise TargetSpecError(f"{flag} {text!r}: {name!r} is no HTTP header name")
    if where == "header" and name.lower() == "authorization":
        raise TargetSpecError(f"{flag} {text!r}: the API key goes in Authorization; name another header")
    return ReadScope("header", name) if where == "header" else ReadScope("query", name)


@dataclass(frozen=True)
class Caller:
    """One identity the kit sends as: an API key and its per-user signal (None: anonymous)."""

    api_key: str
    signal: str | None


@dataclass(frozen=True)
class CallerScope:
    """The per-user signal the kit sends (``scope``: a field of :data:`CALLER_SCOPES`) and where
    bodyless requests carry it (``reads``)."""

    scope: str = DEFAULT_CALLER_SCOPE
    reads: tuple[ReadScope, ...] = ()
    # Distinct per run, so a second run never hits the first run's cache or reads its entries.
    run: str = field(default_factory=lambda: secrets.token_hex(6), compare=False)

    def __post_init__(self) -> None:
        if self.scope not in CALLER_SCOPES:
            raise TargetSpecError(f"--caller-scope must be one of {', '.join(CALLER_SCOPES)}, got {self.scope!r}")

    @property
    def sends_signal(self) -> bool:
        return self.scope != "none"

    def callers(self, api_keys: Sequence[str]) -> list[Caller]:
        """The kit's callers: one per key, then (with a signal) the first key with one more signal; so
        with a single key, that key with two signals."""
        if not self.sends_signal:
            return [Caller(key, None) for key in api_keys]
        callers = [Caller(key, self._signal(n)) for n, key in enumerate(api_keys)]
        return [*callers, Caller(api_keys[0], self._signal(len(callers)))]

    def _signal(self, n: int) -> str:
        return f"conformance-{self.run}-caller-{n}"

    def body(self, body: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        """``body`` carrying ``caller``'s signal (a copy; a ``metadata`` object given is kept and added to)."""
        scoped = dict(body)
        if caller.signal is None or not self.sends_signal:
            return scoped
        if self.scope.startswith("metadata."):
            given = scoped.get("metadata")
            metadata = dict(given) if isinstance(given, Mapping) else {}
            metadata[self.scope.removeprefix("metadata.")] = caller.signal
            scoped["metadata"] = metadata
        else:
            scoped[self.scope] = caller.signal
        return scoped

    def read_headers(self, caller: Caller) -> dict[str, str]:
        """The headers that carry ``caller``'s signal on a bodyless request."""
        if caller.signal is None:
            return {}
        return {read.name: caller.signal for read in self.reads if read.where == "header"}

    def read_params(self, caller: Caller) -> dict[str, str]:
        """The query parameters that carry ``caller``'s signal on a bodyless request."""
        if caller.signal is None:
            return {}
        return {read.name: caller.signal for read in self.reads if read.where == "query"}

    def describe(self, keys: int) -> str:
        """What the report says of the callers (never the signal values: they differ every run)."""
        who = f"{keys} API key{'s' if keys != 1 else ''}"
        if not self.sends_signal:
            return f"{who}, no per-user signal (--caller-scope none)"
        reads = ", ".join(str(read) for read in self.reads) or "none (--read-scope)"
        return f"{who}, per-user signal in {self.scope}; reads scoped by {reads}"

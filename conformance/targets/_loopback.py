"""The one kind of address an HTTP target may have: ``http://HOST:PORT`` on loopback, the gateway's root."""

from __future__ import annotations

import urllib.parse

from conformance.errors import TargetSpecError

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


def loopback_url(text: str) -> tuple[str, int]:
    """``(host, port)`` of an ``http://HOST:PORT`` target URL; anything else is a usage error."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme == "https":
        raise TargetSpecError(
            f"{text!r}: https is not supported: the kit talks plain HTTP to a gateway on loopback "
            "(http://127.0.0.1:PORT)"
        )
    if parts.scheme != "http":
        raise TargetSpecError(f"{text!r}: an HTTP target is http://HOST:PORT")
    try:
        port = parts.port
    except ValueError as exc:
        raise TargetSpecError(f"{text!r}: bad port: {exc}") from None
    host = parts.hostname or ""
    if host not in LOOPBACK_HOSTS:
        raise TargetSpecError(
            f"{text!r}: {host or 'no host'} is not loopback; the kit never leaves this machine "
            f"(use {', '.join(LOOPBACK_HOSTS)})"
        )
    if port is None:
        raise TargetSpecError(f"{text!r}: give the port, e.g. http://{host}:8080 (or port 0 with --launch)")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise TargetSpecError(
            f"{text!r}: give the gateway's root, http://{host}:{port}, without a path, query or user (the kit "
            "calls /v1/... itself)"
        )
    return host, port

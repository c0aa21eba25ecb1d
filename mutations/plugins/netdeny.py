"""pytest plugin for mutation runs: any Python-level connection outside loopback fails loudly.

(gRPC's C core opens its own sockets; the kit's tests only ever dial 127.0.0.1.)
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

MARKER = "CASCADE-MUTATIONS-NETWORK-DENIED"

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_loopback(host: Any) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _check(sock: socket.socket, address: Any) -> None:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    host = address[0] if isinstance(address, tuple) else address
    if not _is_loopback(host):
        raise ConnectionRefusedError(f"{MARKER}: mutation run tried to reach {address!r}")


def _connect(self: socket.socket, address: Any) -> None:
    _check(self, address)
    _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check(self, address)
    return _real_connect_ex(self, address)


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_loopback(host):
        raise socket.gaierror(f"{MARKER}: mutation run tried to resolve {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


def pytest_configure() -> None:
    socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = _getaddrinfo

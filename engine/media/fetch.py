"""SSRF-guarded image fetcher (image.js ``fetchImageUrl`` + net-safety.js ``isPrivateIp``).

One hop, every hop (the first URL and each redirect target):

1. the URL must be ``http`` or ``https``; ``localhost`` (and ``*.localhost``) is refused by name;
2. an IP-literal host is checked directly; a name is resolved **once** and **every** resolved address
   must pass ``is_blocked_address``; a mix of public and private answers is refused;
3. the socket connects to a vetted address itself, so nothing resolves the name a second time (no
   DNS rebinding between the check and the connect); ``Host`` carries the original name and TLS
   verifies the certificate against it;
4. ``GET`` with ``Accept: image/*``; a 3xx with ``Location`` starts the next hop (at most
   ``max_redirects``); anything else but ``200`` is refused; the ``Content-Type`` must be in
   ``MIME_OK``; a ``Content-Length`` above the cap is refused before reading, and the streamed body
   is abandoned as soon as it passes the cap.

One deadline (``FetchPolicy.timeout``, default 8 s) covers resolution, connects, headers and body of
all hops; a watchdog closes the socket when it passes, so a slow-drip server cannot stretch it.

The only way to reach a loopback server is ``FetchPolicy(allow_loopback_for_tests=True)``, which
exempts loopback addresses (127/8, ::1) and nothing else. The default policy refuses them.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import SplitResult, quote, urljoin, urlsplit

from engine.media.gate import MAX_REDIRECTS, MAX_SIZE, MIME_OK, ImageData

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
"""``(host, port) -> addresses``: the injected DNS lookup (default: ``socket.getaddrinfo``)."""

DEFAULT_TIMEOUT = 8.0
_CHUNK = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SAFE_URL_CHARS = "!#$%&'()*+,-./:;=?@[]_~"

_BLOCKED_NETWORKS: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # CGNAT
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # TEST-NET-1
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # TEST-NET-2
        "203.0.113.0/24",  # TEST-NET-3
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
        "::/96",  # unspecified, loopback, IPv4-compatible
        "::ffff:0:0/96",  # IPv4-mapped
        "64:ff9b::/96",  # NAT64 well-known prefix
        "64:ff9b:1::/48",  # NAT64 local use
        "100::/64",  # discard
        "2001::/32",  # Teredo
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4 (embeds any IPv4)
        "fc00::/7",  # unique local (ULA)
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)


class FetchFailure(StrEnum):
    INVALID_URL = "invalid_url"
    SCHEME = "scheme"
    PRIVATE_ADDRESS = "private_address"
    DNS = "dns"
    REDIRECTS = "redirects"
    STATUS = "status"
    MIME = "mime"
    TOO_LARGE = "too_large"
    TIMEOUT = "timeout"
    NETWORK = "network"


class ImageFetchError(Exception):
    """A refused or failed fetch; ``reason`` says which guard or which failure."""

    def __init__(self, reason: FetchFailure, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _timed_out() -> ImageFetchError:
    """A fetch past its deadline, whichever phase noticed it, fails with Node's one message."""
    return ImageFetchError(FetchFailure.TIMEOUT, "Image fetch timeout")


@dataclass(frozen=True)
class FetchPolicy:
    timeout: float = DEFAULT_TIMEOUT
    max_redirects: int = MAX_REDIRECTS
    max_bytes: int = MAX_SIZE
    allow_loopback_for_tests: bool = False
    """Test-only: exempt loopback addresses (127/8, ::1, the name ``localhost``). Never set in production."""
    resolver: Resolver | None = None


def is_blocked_address(address: IPAddress) -> bool:
    """True for every address an image fetch must never reach (anything not globally routable)."""
    if any(address.version == net.version and address in net for net in _BLOCKED_NETWORKS):
        return True
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def _refused(address: IPAddress, policy: FetchPolicy) -> bool:
    if not is_blocked_address(address):
        return False
    return not (policy.allow_loopback_for_tests and address.is_loopback)


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise _timed_out()
        return left

    def passed(self) -> bool:
        return time.monotonic() >= self.end


def _resolve(host: str, port: int, policy: FetchPolicy, deadline: _Deadline) -> list[str]:
    if policy.resolver is not None:
        return list(policy.resolver(host, port))
    results: list[list[str]] = []
    errors: list[Exception] = []

    def run() -> None:
        try:
            results.append(_system_resolve(host, port))
        except Exception as exc:
            errors.append(exc)

    # getaddrinfo has no timeout of its own: run it aside and stop waiting at the deadline.
    worker = threading.Thread(target=run, name="image-dns", daemon=True)
    worker.start()
    worker.join(deadline.remaining())
    if worker.is_alive():
        raise _timed_out()
    if errors:
        raise errors[0]
    return results[0]


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    host_header: str
    path: str


def _parse_target(url: str) -> _Target:
    try:
        parts: SplitResult = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ImageFetchError(FetchFailure.INVALID_URL, "Invalid image URL") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ImageFetchError(FetchFailure.SCHEME, "Image URL must be http or https")
    host = parts.hostname or ""
    if not host:
        raise ImageFetchError(FetchFailure.INVALID_URL, "Invalid image URL")
    try:
        ascii_host = host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ImageFetchError(FetchFailure.INVALID_URL, "Invalid image URL") from exc
    port = port or _DEFAULT_PORTS[scheme]
    shown = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    host_header = shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return _Target(scheme, ascii_host, port, host_header, quote(path, safe=_SAFE_URL_CHARS))


def _vetted_addresses(target: _Target, policy: FetchPolicy, deadline: _Deadline) -> list[str]:
    name = target.host.rstrip(".")
    if (name == "localhost" or name.endswith(".localhost")) and not policy.allow_loopback_for_tests:
        raise ImageFetchError(FetchFailure.PRIVATE_ADDRESS, "Image URL targets a private/internal address")
    literal = _parse_ip(target.host)
    if literal is not None:
        if _refused(literal, policy):
            raise ImageFetchError(FetchFailure.PRIVATE_ADDRESS, "Image URL targets a private/internal address")
        return [target.host]
    try:
        answers = _resolve(target.host, target.port, policy, deadline)
    except ImageFetchError:
        raise
    except Exception as exc:  # gaierror, UnicodeError, a test resolver's error
        raise ImageFetchError(FetchFailure.DNS, f"Image URL host lookup failed: {exc}") from exc
    addresses: list[str] = []
    for answer in answers:
        parsed = _parse_ip(answer)
        if parsed is None:
            raise ImageFetchError(FetchFailure.DNS, f"Image URL host resolved to a non-address: {answer!r}")
        if _refused(parsed, policy):
            raise ImageFetchError(FetchFailure.PRIVATE_ADDRESS, f"Image URL resolves to private address: {answer}")
        if answer not in addresses:
            addresses.append(answer)
    if not addresses:
        raise ImageFetchError(FetchFailure.DNS, "Image URL host resolved to no address")
    return addresses


def _connect(target: _Target, addresses: list[str], deadline: _Deadline) -> socket.socket:
    last: OSError | None = None
    for address in addresses:
        try:
            sock = socket.create_connection((address, target.port), timeout=deadline.remaining())
        except TimeoutError as exc:
            raise _timed_out() from exc
        except OSError as exc:
            last = exc
            continue
        if target.scheme == "https":
            try:
                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=target.host)
            except TimeoutError as exc:
                sock.close()
                raise _timed_out() from exc
            except OSError as exc:
                sock.close()
                raise ImageFetchError(FetchFailure.NETWORK, f"Image fetch TLS failure: {exc}") from exc
        return sock
    raise ImageFetchError(FetchFailure.NETWORK, f"Image fetch connection failed: {last}")


def _close_quietly(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class _PinnedConnection(http.client.HTTPConnection):
    """An ``HTTPConnection`` over a socket already connected to the vetted address."""

    def __init__(self, sock: socket.socket, address: str, port: int, timeout: float) -> None:
        super().__init__(address, port, timeout=timeout)
        self.sock = sock

    def connect(self) -> None:  # http.client reconnects when its socket is gone: never dial on our own
        raise ImageFetchError(FetchFailure.NETWORK, "connection already closed")


def _read_body(
    resp: http.client.HTTPResponse, sock: socket.socket, policy: FetchPolicy, deadline: _Deadline, announced: int | None
) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        sock.settimeout(deadline.remaining())
        chunk = resp.read1(_CHUNK)
        if not chunk:
            # EOF: the peer finished, or the watchdog cut the socket at the deadline.
            if deadline.passed():
                raise _timed_out()
            if announced is not None and size != announced:
                raise ImageFetchError(FetchFailure.NETWORK, f"Image fetch truncated: {size} of {announced} bytes")
            return b"".join(chunks)
        size += len(chunk)
        if size > policy.max_bytes:
            raise ImageFetchError(FetchFailure.TOO_LARGE, f"Image exceeds {policy.max_bytes} bytes")
        chunks.append(chunk)


def _hop(url: str, policy: FetchPolicy, deadline: _Deadline) -> ImageData | str:
    """Fetch one URL: the image, or the redirect location to follow next."""
    target = _parse_target(url)
    addresses = _vetted_addresses(target, policy, deadline)
    sock = _connect(target, addresses, deadline)
    # The watchdog closes the socket at the deadline, so a slow-drip peer cannot outlast it.
    watchdog = threading.Timer(max(0.0, deadline.end - time.monotonic()), _close_quietly, args=(sock,))
    watchdog.daemon = True
    watchdog.start()
    conn: _PinnedConnection | None = None
    try:
        conn = _PinnedConnection(sock, addresses[0], target.port, timeout=deadline.remaining())
        conn.request("GET", target.path, headers={"Host": target.host_header, "Accept": "image/*"})
        sock.settimeout(deadline.remaining())
        resp = conn.getresponse()
        if deadline.passed():
            # The watchdog cut the header block short: what http.client parsed is not the response.
            raise _timed_out()
        location = resp.getheader("Location")
        if 300 <= resp.status < 400 and location:
            return urljoin(url, location.strip())
        if resp.status != 200:
            raise ImageFetchError(FetchFailure.STATUS, f"Image fetch HTTP {resp.status}")
        mime = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if mime not in MIME_OK:
            raise ImageFetchError(FetchFailure.MIME, f"Unsupported image type: {mime}")
        length = (resp.getheader("Content-Length") or "").strip()
        announced = int(length) if length.isascii() and length.isdigit() else None
        if announced is not None and announced > policy.max_bytes:
            raise ImageFetchError(FetchFailure.TOO_LARGE, f"Image exceeds {policy.max_bytes} bytes")
        body = _read_body(resp, sock, policy, deadline, announced)
        return ImageData(base64_data=base64.b64encode(body).decode("ascii"), mime_type=mime)
    except ImageFetchError:
        raise
    except (OSError, http.client.HTTPException) as exc:  # TimeoutError is an OSError
        if deadline.passed() or isinstance(exc, TimeoutError):
            raise _timed_out() from exc
        raise ImageFetchError(FetchFailure.NETWORK, f"Image fetch failed: {exc}") from exc
    finally:
        watchdog.cancel()
        if conn is not None:
            conn.close()
        sock.close()


def fetch_image_url(url: str, policy: FetchPolicy | None = None) -> ImageData:
    """Fetch an image over http(s) through the SSRF guard; raises ``ImageFetchError``."""
    policy = policy or FetchPolicy()
    deadline = _Deadline(policy.timeout)
    current = url
    for _ in range(policy.max_redirects + 1):
        outcome = _hop(current, policy, deadline)
        if isinstance(outcome, ImageData):
            return outcome
        current = outcome
    raise ImageFetchError(FetchFailure.REDIRECTS, "Too many image redirects")

"""The fetcher's refusals, each with its exact reason and message, and the guard's edges: what the
resolver is asked, zone suffixes, unallocated IPv6 space, how a URL becomes the request target.

Nothing here is served: every refusal happens before a connection (or against the loopback image
server of ``conftest.py``)."""

from __future__ import annotations

import ipaddress

import pytest

from engine.media.fetch import (
    FetchFailure,
    FetchPolicy,
    ImageFetchError,
    _parse_target,
    fetch_image_url,
    is_blocked_address,
)
from tests.engine.media.url_fetch_support import Resolver
from tests.support.image_server import ImageServer

LOOPBACK = FetchPolicy(allow_loopback_for_tests=True, timeout=2.0)
NAMES = Resolver({"empty.test": [], "junk.test": ["not-an-ip"]})
PRIVATE = "Image URL targets a private/internal address"


def _error(url: str, policy: FetchPolicy | None = None) -> ImageFetchError:
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url(url, policy)
    return info.value


@pytest.mark.parametrize(
    ("url", "reason", "message"),
    [
        ("http://example.com:99999/a.png", FetchFailure.INVALID_URL, "Invalid image URL"),
        ("http:///a.png", FetchFailure.INVALID_URL, "Invalid image URL"),
        (f"http://{'ü' * 70}.test/a.png", FetchFailure.INVALID_URL, "Invalid image URL"),
        ("ftp://example.com/a.png", FetchFailure.SCHEME, "Image URL must be http or https"),
        ("http://localhost/a.png", FetchFailure.PRIVATE_ADDRESS, PRIVATE),
        ("http://img.localhost./a.png", FetchFailure.PRIVATE_ADDRESS, PRIVATE),
        ("http://10.0.0.1/a.png", FetchFailure.PRIVATE_ADDRESS, PRIVATE),
        (
            "http://nowhere.test/a.png",
            FetchFailure.DNS,
            "Image URL host lookup failed: [Errno -2] Name or service not known",
        ),
        ("http://empty.test/a.png", FetchFailure.DNS, "Image URL host resolved to no address"),
        ("http://junk.test/a.png", FetchFailure.DNS, "Image URL host resolved to a non-address: 'not-an-ip'"),
    ],
)
def test_every_refusal_before_connecting_carries_its_reason_and_message(
    url: str, reason: FetchFailure, message: str
) -> None:
    error = _error(url, FetchPolicy(resolver=NAMES))
    assert (error.reason, str(error)) == (reason, message)


def test_too_many_redirects_is_reported_as_such(fresh: ImageServer) -> None:
    error = _error(fresh.url("/redirect/4"), LOOPBACK)
    assert (error.reason, str(error)) == (FetchFailure.REDIRECTS, "Too many image redirects")


@pytest.mark.parametrize(
    ("path", "policy", "reason", "message"),
    [
        ("/missing", LOOPBACK, FetchFailure.STATUS, "Image fetch HTTP 404"),
        ("/html", LOOPBACK, FetchFailure.MIME, "Unsupported image type: text/html"),
        ("/truncated", LOOPBACK, FetchFailure.NETWORK, "Image fetch truncated: 10 of 100 bytes"),
    ],
)
def test_every_refused_response_carries_its_reason_and_message(
    fresh: ImageServer, path: str, policy: FetchPolicy, reason: FetchFailure, message: str
) -> None:
    error = _error(fresh.url(path), policy)
    assert (error.reason, str(error)) == (reason, message)


@pytest.mark.parametrize("query", ["", "?stream=1"], ids=["announced", "streamed"])
@pytest.mark.parametrize(("size", "ok"), [(999, True), (1000, True), (1001, False)])
def test_the_byte_cap_follows_the_policy_and_names_itself(fresh: ImageServer, query: str, size: int, ok: bool) -> None:
    policy = FetchPolicy(allow_loopback_for_tests=True, timeout=2.0, max_bytes=1000)
    url = fresh.url(f"/bytes/{size}{query}")
    if ok:
        assert fetch_image_url(url, policy).mime_type == "image/png"
    else:
        error = _error(url, policy)
        assert (error.reason, str(error)) == (FetchFailure.TOO_LARGE, "Image exceeds 1000 bytes")


# --- what the resolver is asked ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "asked"),
    [
        ("http://pics.test/a.png", ("pics.test", 80)),
        ("https://pics.test/a.png", ("pics.test", 443)),
        ("http://pics.test:8443/a.png", ("pics.test", 8443)),
        ("http://bücher.test/a.png", ("xn--bcher-kva.test", 80)),
        # An ASCII name goes to the resolver as written: no IDNA round trip, so no DNS length rules.
        (f"http://{'x' * 64}.test/a.png", (f"{'x' * 64}.test", 80)),
    ],
)
def test_the_resolver_is_asked_for_the_ascii_host_and_the_port(url: str, asked: tuple[str, int]) -> None:
    resolver = Resolver({asked[0]: ["10.9.8.7"]})
    error = _error(url, FetchPolicy(resolver=resolver))
    assert (error.reason, str(error)) == (
        FetchFailure.PRIVATE_ADDRESS,
        "Image URL resolves to private address: 10.9.8.7",
    )
    assert resolver.calls == [asked]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("127.0.0.1%lo", FetchFailure.PRIVATE_ADDRESS),  # judged by the address before the zone
        ("10.0.0.1%eth0%1", FetchFailure.PRIVATE_ADDRESS),  # the zone is everything after the first '%'
        ("fe80::1%eth0", FetchFailure.PRIVATE_ADDRESS),
        ("%10.0.0.1", FetchFailure.DNS),
    ],
)
def test_a_zone_suffix_never_hides_the_address_it_qualifies(answer: str, reason: FetchFailure) -> None:
    error = _error("http://zoned.test/a.png", FetchPolicy(resolver=Resolver({"zoned.test": [answer]})))
    assert error.reason is reason


@pytest.mark.parametrize("address", ["1000::1", "4000::1", "6000::1", "a000::1", "f000::1", "::1:0:0:1"])
def test_unallocated_ipv6_space_is_blocked(address: str) -> None:
    # IETF-reserved space outside every listed network: only the is_reserved test catches it.
    assert is_blocked_address(ipaddress.ip_address(address))


# --- the request target ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host", "port", "host_header", "path"),
    [
        ("http://example.com/a.png", "example.com", 80, "example.com", "/a.png"),
        ("https://example.com/a.png", "example.com", 443, "example.com", "/a.png"),
        ("HTTPS://Example.COM:443/a.png", "example.com", 443, "example.com", "/a.png"),
        ("http://example.com:443/a.png", "example.com", 443, "example.com:443", "/a.png"),
        ("https://example.com:80/a.png", "example.com", 80, "example.com:80", "/a.png"),
        ("http://[2001:db8::1]/a.png", "2001:db8::1", 80, "[2001:db8::1]", "/a.png"),
        ("http://[2001:db8::1]:8080/a.png", "2001:db8::1", 8080, "[2001:db8::1]:8080", "/a.png"),
        ("http://bücher.example/a b.png", "xn--bcher-kva.example", 80, "xn--bcher-kva.example", "/a%20b.png"),
        ("http://example.com", "example.com", 80, "example.com", "/"),
        ("http://example.com?v=1", "example.com", 80, "example.com", "/?v=1"),
    ],
)
def test_a_url_becomes_host_port_host_header_and_target(
    url: str, host: str, port: int, host_header: str, path: str
) -> None:
    # Driven directly: a Host header for a default port cannot be observed on an unprivileged loopback port.
    target = _parse_target(url)
    assert (target.host, target.port, target.host_header, target.path) == (host, port, host_header, path)

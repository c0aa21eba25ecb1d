"""The SSRF-guarded image fetcher against a real loopback HTTP server.

The server is reachable only through ``FetchPolicy(allow_loopback_for_tests=True)``; the default
policy is shown to refuse it (and every other internal range) before any connection is made.
"""

from __future__ import annotations

import base64
import ipaddress
import socket
import time
from collections.abc import Sequence
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.media.fetch import (
    DEFAULT_TIMEOUT,
    FetchFailure,
    FetchPolicy,
    ImageFetchError,
    fetch_image_url,
    is_blocked_address,
)
from engine.media.gate import MAX_SIZE, ImageData
from tests.support.image_server import ImageServer

TEST_POLICY = FetchPolicy(allow_loopback_for_tests=True, timeout=3.0)


def _reason(url: str, policy: FetchPolicy | None = None) -> FetchFailure:
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url(url, policy)
    return info.value.reason


class _Resolver:
    """A DNS stand-in: a fixed answer per name, and a count of lookups."""

    def __init__(self, answers: dict[str, Sequence[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


# --- the default guard -------------------------------------------------------------------------


@pytest.mark.invariant("IMG-7")
def test_default_policy_refuses_the_loopback_server_before_connecting(fresh: ImageServer) -> None:
    assert FetchPolicy().allow_loopback_for_tests is False
    assert _reason(fresh.url("/img.png")) is FetchFailure.PRIVATE_ADDRESS
    assert _reason(fresh.url("/img.png", host="localhost")) is FetchFailure.PRIVATE_ADDRESS
    assert _reason(fresh.url("/img.png", host="[::1]")) is FetchFailure.PRIVATE_ADDRESS
    assert fresh.requests == []


@pytest.mark.invariant("IMG-7")
def test_default_policy_refuses_a_name_that_resolves_to_loopback(fresh: ImageServer) -> None:
    resolver = _Resolver({"evil.example": ["127.0.0.1"]})
    reason = _reason(fresh.url("/img.png", host="evil.example"), FetchPolicy(resolver=resolver))
    assert reason is FetchFailure.PRIVATE_ADDRESS
    assert resolver.calls == ["evil.example"]
    assert fresh.requests == []


@pytest.mark.invariant("IMG-7")
def test_every_resolved_address_is_checked_not_only_the_first() -> None:
    resolver = _Resolver({"mixed.example": ["93.184.216.34", "2606:4700::1111", "10.1.2.3"]})
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url("https://mixed.example/cat.png", FetchPolicy(resolver=resolver))
    assert info.value.reason is FetchFailure.PRIVATE_ADDRESS
    assert "10.1.2.3" in str(info.value)


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST",
        "localhost.",
        "foo.localhost",
        "127.0.0.1",
        "127.9.9.9",
        "0.0.0.0",
        "10.0.0.1",
        "100.64.0.1",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.8",
        "192.0.2.1",
        "192.168.1.1",
        "198.18.0.1",
        "198.19.255.1",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "[::]",
        "[::1]",
        "[fc00::1]",
        "[fd12:3456::1]",
        "[fe80::1]",
        "[ff02::1]",
        "[64:ff9b::a00:1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:8.8.8.8]",
        "[2001:db8::1]",
    ],
)
@pytest.mark.invariant("IMG-7")
def test_literal_internal_hosts_are_refused_without_any_lookup(host: str) -> None:
    resolver = _Resolver({})
    assert _reason(f"http://{host}/x.png", FetchPolicy(resolver=resolver)) is FetchFailure.PRIVATE_ADDRESS
    assert resolver.calls == []


@pytest.mark.parametrize(
    "address",
    [
        "0.1.2.3",
        "10.255.0.1",
        "100.127.255.254",
        "127.0.0.1",
        "169.254.1.1",
        "172.20.1.1",
        "192.0.0.170",
        "192.0.2.200",
        "192.168.255.255",
        "198.18.5.5",
        "198.51.100.1",
        "203.0.113.1",
        "233.252.0.1",
        "250.1.1.1",
        "::",
        "::1",
        "::a00:1",
        "::ffff:10.0.0.1",
        "::ffff:93.184.216.34",
        "64:ff9b::8.8.8.8",
        "fc00::",
        "fdff:ffff::1",
        "fe80::abcd",
        "fec0::1",
        "ff0e::1",
        "2001:db8:1::1",
        "2001:0:4136:e378::1",
        "2002:a00:1::1",
        "100::1",
    ],
)
def test_blocked_address_table(address: str) -> None:
    assert is_blocked_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2001:4860:4860::8888"])
def test_public_addresses_pass(address: str) -> None:
    assert not is_blocked_address(ipaddress.ip_address(address))


_BLOCKED_V4 = ["10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"]
_BLOCKED_V4 += ["198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "0.0.0.0/8", "192.0.2.0/24", "203.0.113.0/24"]
_BLOCKED_V6 = ["fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96", "::ffff:0:0/96"]


@given(st.sampled_from(_BLOCKED_V4 + _BLOCKED_V6), st.integers(min_value=0))
def test_any_address_inside_a_blocked_range_is_blocked(network: str, offset: int) -> None:
    net = ipaddress.ip_network(network)
    address = net[offset % net.num_addresses]
    assert is_blocked_address(address)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_mapped_and_nat64_forms_are_always_blocked(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    assert is_blocked_address(ipaddress.IPv6Address(f"::ffff:{v4}"))
    assert is_blocked_address(ipaddress.IPv6Address(f"64:ff9b::{v4}"))


# --- URL shape -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/a.png", FetchFailure.SCHEME),
        ("file:///etc/passwd", FetchFailure.SCHEME),
        ("javascript:alert(1)", FetchFailure.SCHEME),
        ("gopher://example.com/", FetchFailure.SCHEME),
        ("not a url", FetchFailure.SCHEME),
        ("http://", FetchFailure.INVALID_URL),
        ("http://example.com:99999/a.png", FetchFailure.INVALID_URL),
        ("https://[::1/a.png", FetchFailure.INVALID_URL),
    ],
)
def test_url_shape_is_checked_before_anything_else(url: str, reason: FetchFailure) -> None:
    resolver = _Resolver({})
    assert _reason(url, FetchPolicy(resolver=resolver)) is reason
    assert resolver.calls == []


def test_dns_failures_are_typed() -> None:
    assert _reason("http://nowhere.example/a.png", FetchPolicy(resolver=_Resolver({}))) is FetchFailure.DNS
    empty = _Resolver({"empty.example": []})
    assert _reason("http://empty.example/a.png", FetchPolicy(resolver=empty)) is FetchFailure.DNS
    junk = _Resolver({"junk.example": ["not-an-ip"]})
    assert _reason("http://junk.example/a.png", FetchPolicy(resolver=junk)) is FetchFailure.DNS


def test_defaults() -> None:
    policy = FetchPolicy()
    assert (policy.timeout, policy.max_redirects, policy.max_bytes) == (DEFAULT_TIMEOUT, 3, MAX_SIZE)
    assert DEFAULT_TIMEOUT == 8.0


# --- through the test-only allowance ------------------------------------------------------------


def test_fetches_the_image_with_accept_image_star(fresh: ImageServer) -> None:
    image = fetch_image_url(fresh.url("/img.png"), TEST_POLICY)
    assert image == ImageData(base64.b64encode(fresh.png).decode("ascii"), "image/png")
    assert [r.accept for r in fresh.requests] == ["image/*"]


def test_the_allowance_covers_loopback_only(fresh: ImageServer) -> None:
    assert _reason("http://10.0.0.1/a.png", TEST_POLICY) is FetchFailure.PRIVATE_ADDRESS
    lan = _Resolver({"lan.example": ["192.168.1.20"]})
    policy = FetchPolicy(allow_loopback_for_tests=True, resolver=lan)
    assert _reason("http://lan.example/a.png", policy) is FetchFailure.PRIVATE_ADDRESS
    assert fresh.requests == []


def test_connects_to_the_vetted_address_and_sends_the_original_host(fresh: ImageServer) -> None:
    resolver = _Resolver({"images.example.test": ["127.0.0.1"]})
    policy = FetchPolicy(allow_loopback_for_tests=True, resolver=resolver, timeout=3.0)
    image = fetch_image_url(fresh.url("/img.png", host="images.example.test"), policy)
    assert image.mime_type == "image/png"
    assert resolver.calls == ["images.example.test"]  # one lookup: nothing re-resolves before connecting
    assert [r.host for r in fresh.requests] == [f"images.example.test:{fresh.port}"]


def test_one_lookup_per_hop_no_rebinding_window(fresh: ImageServer) -> None:
    resolver = _Resolver({"hop.example": ["127.0.0.1"]})
    policy = FetchPolicy(allow_loopback_for_tests=True, resolver=resolver, timeout=3.0)
    fetch_image_url(fresh.url("/redirect/2", host="hop.example"), policy)
    assert resolver.calls == ["hop.example"] * 3
    assert len(fresh.requests) == 3


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_follows_up_to_three_redirects(fresh: ImageServer, hops: int) -> None:
    image = fetch_image_url(fresh.url(f"/redirect/{hops}"), TEST_POLICY)
    assert base64.b64decode(image.base64_data) == fresh.png
    assert len(fresh.requests) == hops + 1


def test_a_fourth_redirect_is_refused(fresh: ImageServer) -> None:
    assert _reason(fresh.url("/redirect/4"), TEST_POLICY) is FetchFailure.REDIRECTS
    assert [r.path for r in fresh.requests] == ["/redirect/4", "/redirect/3", "/redirect/2", "/redirect/1"]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://10.0.0.1/x.png", FetchFailure.PRIVATE_ADDRESS),
        ("http://169.254.169.254/latest/meta-data", FetchFailure.PRIVATE_ADDRESS),
        ("ftp://example.com/x.png", FetchFailure.SCHEME),
        ("file:///etc/passwd", FetchFailure.SCHEME),
    ],
)
@pytest.mark.invariant("IMG-7")
def test_every_redirect_target_is_revalidated(fresh: ImageServer, target: str, reason: FetchFailure) -> None:
    assert _reason(fresh.url("/to?u=" + quote(target, safe="")), TEST_POLICY) is reason
    assert len(fresh.requests) == 1


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/missing", FetchFailure.STATUS),
        ("/nolocation", FetchFailure.STATUS),
        ("/html", FetchFailure.MIME),
    ],
)
def test_status_and_content_type_guards(fresh: ImageServer, path: str, reason: FetchFailure) -> None:
    assert _reason(fresh.url(path), TEST_POLICY) is reason


def test_content_type_parameters_and_case_are_normalised(fresh: ImageServer) -> None:
    assert fetch_image_url(fresh.url("/mime-params"), TEST_POLICY).mime_type == "image/png"


def test_exactly_the_cap_is_accepted(fresh: ImageServer) -> None:
    image = fetch_image_url(fresh.url("/exact"), TEST_POLICY)
    assert len(base64.b64decode(image.base64_data)) == MAX_SIZE


@pytest.mark.parametrize("query", ["", "?stream=1"], ids=["announced", "streamed"])
@pytest.mark.parametrize(("size", "ok"), [(MAX_SIZE - 1, True), (MAX_SIZE, True), (MAX_SIZE + 1, False)])
@pytest.mark.invariant("IMG-7")
def test_the_body_cap_is_exact_in_bytes(fresh: ImageServer, size: int, ok: bool, query: str) -> None:
    url = fresh.url(f"/bytes/{size}{query}")
    if ok:
        assert len(base64.b64decode(fetch_image_url(url, TEST_POLICY).base64_data)) == size
    else:
        assert _reason(url, TEST_POLICY) is FetchFailure.TOO_LARGE


@pytest.mark.invariant("IMG-7")
def test_an_announced_oversize_body_is_refused_before_reading_it(fresh: ImageServer) -> None:
    started = time.monotonic()
    assert _reason(fresh.url("/announce-big"), TEST_POLICY) is FetchFailure.TOO_LARGE
    assert time.monotonic() - started < 1.0  # the server stalls for 5 s before any body byte


@pytest.mark.invariant("IMG-7")
def test_a_streamed_body_is_abandoned_past_the_cap(fresh: ImageServer) -> None:
    assert _reason(fresh.url("/stream-big"), TEST_POLICY) is FetchFailure.TOO_LARGE


def test_slow_headers_time_out(fresh: ImageServer) -> None:
    policy = FetchPolicy(allow_loopback_for_tests=True, timeout=0.3)
    started = time.monotonic()
    assert _reason(fresh.url("/slow-headers"), policy) is FetchFailure.TIMEOUT
    assert time.monotonic() - started < 1.5


def test_a_slow_drip_cannot_outlast_the_deadline(fresh: ImageServer) -> None:
    policy = FetchPolicy(allow_loopback_for_tests=True, timeout=0.4)
    started = time.monotonic()
    assert _reason(fresh.url("/drip"), policy) is FetchFailure.TIMEOUT
    assert time.monotonic() - started < 1.5  # the drip alone would take 5 s


def test_a_body_shorter_than_announced_is_refused(fresh: ImageServer) -> None:
    assert _reason(fresh.url("/truncated"), TEST_POLICY) is FetchFailure.NETWORK


def test_https_speaks_tls_to_the_vetted_address(fresh: ImageServer) -> None:
    # The loopback server speaks plain HTTP, so the TLS handshake fails: https is never downgraded.
    url = f"https://127.0.0.1:{fresh.port}/img.png"
    assert _reason(url, TEST_POLICY) is FetchFailure.NETWORK
    assert fresh.requests == []


def test_a_closed_port_is_a_network_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _reason(f"http://127.0.0.1:{port}/a.png", TEST_POLICY) is FetchFailure.NETWORK

"""One deadline for the whole fetch: the system lookup, the connect, the TLS handshake, the headers and
the body each end at it with ``Image fetch timeout``; the system lookup path itself.

Every test uses a deadline of a few tenths of a second and bounds its wait, so a fetch that ignored
the deadline fails the test instead of hanging the run."""

from __future__ import annotations

import base64
import socket
import time

import pytest

from engine.media.fetch import FetchFailure, FetchPolicy, ImageFetchError, fetch_image_url
from tests.engine.media.url_fetch_support import (
    HostsFile,
    Resolver,
    bounded,
    drip_body,
    drip_headers,
    raw_server,
    unanswered_port,
)
from tests.support.image_server import ImageServer

TIMEOUT = (FetchFailure.TIMEOUT, "Image fetch timeout")


def _short(seconds: float, resolver: Resolver | None = None) -> FetchPolicy:
    return FetchPolicy(allow_loopback_for_tests=True, timeout=seconds, resolver=resolver)


def _failure(outcome: object) -> tuple[FetchFailure, str]:
    assert isinstance(outcome, ImageFetchError), outcome
    return outcome.reason, str(outcome)


# --- the system lookup ---------------------------------------------------------------------------


def test_a_name_is_looked_up_by_the_system_resolver_and_fetched_within_a_one_second_deadline(
    fresh: ImageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", HostsFile({"images.test": "127.0.0.1"}))
    image = fetch_image_url(fresh.url("/img.png", host="images.test"), _short(1.0))
    assert base64.b64decode(image.base64_data) == fresh.png
    assert [r.host for r in fresh.requests] == [f"images.test:{fresh.port}"]


def test_a_system_lookup_failure_is_a_dns_failure_naming_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", HostsFile({}))
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url("http://nowhere.test/a.png", _short(1.0))
    assert (info.value.reason, str(info.value)) == (
        FetchFailure.DNS,
        "Image URL host lookup failed: [Errno -2] Name or service not known",
    )
    assert isinstance(info.value.__cause__, socket.gaierror)


def test_a_hung_system_lookup_ends_at_the_deadline_and_never_holds_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hosts = HostsFile({"slow.test": "127.0.0.1"}, hang=frozenset({"slow.test"}), hang_for=1.5)
    monkeypatch.setattr(socket, "getaddrinfo", hosts)
    try:
        # Called from a non-daemon thread (the main one): the lookup thread
        # must be a daemon of its own accord. The stand-in gives up after 1.5 s, so nothing hangs.
        started = time.monotonic()
        with pytest.raises(ImageFetchError) as info:
            fetch_image_url("http://slow.test/a.png", _short(0.2))
        assert time.monotonic() - started < 1.0
        assert (info.value.reason, str(info.value)) == TIMEOUT
        [lookup] = hosts.threads
        assert lookup.is_alive()  # left behind at the deadline ...
        assert lookup.daemon  # ... but it cannot keep the interpreter alive
    finally:
        hosts.release.set()


def test_a_resolver_that_answers_after_the_deadline_leaves_no_time_to_connect(fresh: ImageServer) -> None:
    resolver = Resolver({"late.test": ["127.0.0.1"]}, delay=0.15)
    outcome, _ = bounded(lambda: fetch_image_url(fresh.url("/img.png", host="late.test"), _short(0.05, resolver)), 3.0)
    assert _failure(outcome) == TIMEOUT
    assert fresh.requests == []


# --- connect, handshake, headers, body -----------------------------------------------------------


def test_a_connect_that_gets_no_answer_ends_at_the_deadline() -> None:
    with unanswered_port() as port:
        outcome, took = bounded(lambda: fetch_image_url(f"http://127.0.0.1:{port}/a.png", _short(0.2)), 3.0)
    assert _failure(outcome) == TIMEOUT
    assert took < 1.5  # well short of the 3 s bound, with room for a loaded box


def test_a_tls_handshake_that_gets_no_answer_ends_at_the_deadline() -> None:
    with raw_server() as server:  # accepts, then never answers the ClientHello
        outcome, took = bounded(lambda: fetch_image_url(server.url("/a.png", scheme="https"), _short(0.2)), 3.0)
    assert _failure(outcome) == TIMEOUT
    assert took < 1.5  # well short of the 3 s bound, with room for a loaded box


def test_headers_that_drip_past_the_deadline_are_cut_at_it() -> None:
    with raw_server() as server:
        server.routes["/drip"] = drip_headers
        outcome, took = bounded(lambda: fetch_image_url(server.url("/drip"), _short(0.2)), 4.0)
    assert _failure(outcome) == TIMEOUT
    # the drip alone lasts 2 s; a watchdog armed late (1 s) would still cut it, so the bound is below that
    assert took < 0.9


def test_headers_that_never_come_end_at_the_deadline(fresh: ImageServer) -> None:
    outcome, took = bounded(lambda: fetch_image_url(fresh.url("/slow-headers"), _short(0.2)), 3.0)
    assert _failure(outcome) == TIMEOUT
    assert took < 1.5


def test_a_body_that_drips_past_the_deadline_is_cut_at_it_whichever_guard_fires_first() -> None:
    # At the deadline the watchdog shuts the socket (the read sees EOF) and the read's own timeout
    # expires: both are armed for the same instant and either may win. Ten fetches see both outcomes
    # (each about half the time) and every one must be the same timeout.
    with raw_server() as server:
        server.routes["/drip"] = drip_body
        for _ in range(10):
            outcome, took = bounded(lambda: fetch_image_url(server.url("/drip"), _short(0.05)), 3.0)
            assert _failure(outcome) == TIMEOUT
            assert took < 0.9  # cut by the 0.05 s deadline, not by a watchdog armed 1 s late or the 2 s drip

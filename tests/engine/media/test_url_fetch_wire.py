"""The fetcher on the wire, against a scripted loopback server: which statuses redirect, what a
malformed or missing response becomes, the Host header and the dialled address for IPv6 and
several answers, and the connection being released as soon as a response is refused."""

from __future__ import annotations

import base64
import errno
import os
import socket
from collections.abc import Iterator

import pytest

from engine.media.fetch import FetchFailure, FetchPolicy, ImageFetchError, _PinnedConnection, fetch_image_url
from tests.engine.media.url_fetch_support import (
    PNG,
    RawServer,
    Resolver,
    await_hang_up,
    close_without_reply,
    png_reply,
    raw_server,
    reply,
    response,
)
from tests.support.image_server import ImageServer

LOOPBACK = FetchPolicy(allow_loopback_for_tests=True, timeout=2.0)


@pytest.fixture
def v4() -> Iterator[RawServer]:
    with raw_server("127.0.0.1") as server:
        yield server


@pytest.fixture
def v6() -> Iterator[RawServer]:
    with raw_server("::1") as server:
        yield server


def _error(url: str, policy: FetchPolicy = LOOPBACK) -> ImageFetchError:
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url(url, policy)
    return info.value


@pytest.mark.parametrize("status", [300, 301, 302, 303, 307, 308, 399])
def test_every_3xx_with_a_location_is_followed(v4: RawServer, status: int) -> None:
    v4.routes["/first"] = reply(status, [("Location", "/img.png")])
    v4.routes["/img.png"] = png_reply()
    image = fetch_image_url(v4.url("/first"), LOOPBACK)
    assert base64.b64decode(image.base64_data) == PNG
    assert [r.target for r in v4.requests] == ["/first", "/img.png"]


@pytest.mark.parametrize("status", [201, 204, 299, 400, 404, 500])
def test_any_other_status_is_refused_even_with_a_location(v4: RawServer, status: int) -> None:
    v4.routes["/first"] = reply(status, [("Location", "/img.png"), ("Content-Type", "image/png")], PNG)
    error = _error(v4.url("/first"))
    assert (error.reason, str(error)) == (FetchFailure.STATUS, f"Image fetch HTTP {status}")
    assert [r.target for r in v4.requests] == ["/first"]


def test_a_200_with_a_location_is_the_image_itself(v4: RawServer) -> None:
    v4.routes["/img.png"] = reply(200, [("Location", "/elsewhere"), ("Content-Type", "image/png")], PNG)
    assert base64.b64decode(fetch_image_url(v4.url("/img.png"), LOOPBACK).base64_data) == PNG
    assert len(v4.requests) == 1


def test_a_response_without_a_content_type_is_refused_with_an_empty_type(v4: RawServer) -> None:
    v4.routes["/bare"] = reply(200, [], PNG)
    error = _error(v4.url("/bare"))
    assert (error.reason, str(error)) == (FetchFailure.MIME, "Unsupported image type: ")


def test_a_hang_up_without_a_reply_is_a_network_failure(v4: RawServer) -> None:
    v4.routes["/gone"] = close_without_reply
    error = _error(v4.url("/gone"))
    assert (error.reason, str(error)) == (
        FetchFailure.NETWORK,
        "Image fetch failed: Remote end closed connection without response",
    )


def test_a_refused_response_releases_its_connection_at_once(v4: RawServer) -> None:
    head = response(200, [("Content-Type", "image/png"), ("Content-Length", "5000")])
    v4.routes["/big"] = await_hang_up(v4, head)  # keep-alive: only the client's close ends it
    with pytest.raises(ImageFetchError) as info:
        fetch_image_url(v4.url("/big"), FetchPolicy(allow_loopback_for_tests=True, timeout=2.0, max_bytes=1000))
    assert info.value.reason is FetchFailure.TOO_LARGE
    # The error (and its traceback, holding the response) is still alive here: the socket is closed anyway.
    assert v4.client_hung_up.wait(1.5)


def test_an_ipv6_literal_is_dialled_and_named_in_brackets(v6: RawServer) -> None:
    v6.routes["/img.png"] = png_reply()
    assert base64.b64decode(fetch_image_url(v6.url("/img.png"), LOOPBACK).base64_data) == PNG
    assert [r.headers["host"] for r in v6.requests] == [f"[::1]:{v6.port}"]


def test_a_scoped_ipv6_answer_is_dialled_with_its_zone(v6: RawServer) -> None:
    v6.routes["/img.png"] = png_reply()
    policy = FetchPolicy(allow_loopback_for_tests=True, timeout=2.0, resolver=Resolver({"six.test": ["::1%1"]}))
    image = fetch_image_url(f"http://six.test:{v6.port}/img.png", policy)
    assert base64.b64decode(image.base64_data) == PNG
    assert [r.headers["host"] for r in v6.requests] == [f"six.test:{v6.port}"]


def test_an_answer_that_refuses_the_connection_falls_through_to_the_next(v4: RawServer) -> None:
    v4.routes["/img.png"] = png_reply()
    resolver = Resolver({"two.test": ["::1", "127.0.0.1"]})  # nothing listens on ::1 at that port
    image = fetch_image_url(
        f"http://two.test:{v4.port}/img.png", FetchPolicy(allow_loopback_for_tests=True, resolver=resolver)
    )
    assert base64.b64decode(image.base64_data) == PNG
    assert len(v4.requests) == 1


def test_when_every_answer_refuses_the_last_error_is_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = OSError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))
    error = _error(f"http://127.0.0.1:{port}/a.png")
    assert (error.reason, str(error)) == (FetchFailure.NETWORK, f"Image fetch connection failed: {refused}")


def test_an_answer_http_client_cannot_carry_is_a_network_failure_not_a_crash(v4: RawServer) -> None:
    # The first answer's zone holds a space: it cannot be dialled, and http.client refuses it as the
    # connection's label after the second answer connected. Still an ImageFetchError.
    resolver = Resolver({"odd.test": ["127.0.0.1% x", "127.0.0.1"]})
    error = _error(f"http://odd.test:{v4.port}/a.png", FetchPolicy(allow_loopback_for_tests=True, resolver=resolver))
    assert error.reason is FetchFailure.NETWORK
    assert str(error).startswith("Image fetch failed: URL can't contain control characters.")
    assert v4.requests == []


def test_a_server_that_does_not_speak_tls_fails_the_handshake(fresh: ImageServer) -> None:
    error = _error(f"https://127.0.0.1:{fresh.port}/img.png")  # a plain HTTP server answers the ClientHello
    assert error.reason is FetchFailure.NETWORK
    assert str(error).startswith("Image fetch TLS failure: ")
    assert fresh.requests == []


def test_a_pinned_connection_never_dials_on_its_own(v4: RawServer) -> None:
    """The connection only ever talks over the socket connected to the vetted address: once that socket
    is gone, http.client's reconnect is refused instead of resolving the host name again."""
    sock = socket.create_connection((v4.host, v4.port))
    conn = _PinnedConnection(sock, v4.host, v4.port, timeout=1.0)
    conn.close()
    with pytest.raises(ImageFetchError) as refused:
        conn.request("GET", "/a.png")
    assert (refused.value.reason, str(refused.value)) == (FetchFailure.NETWORK, "connection already closed")
    assert v4.requests == []

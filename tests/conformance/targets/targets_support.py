"""Shared pieces for the target-kind tests: small in-process implementations for ``python:`` specs,
an in-process echo gateway (tests/support/echo_gateway.py's handler served in a thread), and an
HTTP target whose wired LS is an in-process fake the test serves an engine gateway in front of."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from conformance.errors import TargetError
from conformance.ls_handle import InProcessLs, LsHandle
from conformance.targets import HttpOptions, HttpTarget, LaunchedGateway
from conformance.targets._http_store import DEFAULT_STORE_LIMITS
from fakels.server import FakeLSThread
from tests.support import echo_gateway


class Decoder:
    """Implements ``ls.decode_request`` only, answering what it is told."""

    def __init__(self, answer: Any = None, caps: Any = None) -> None:
        self.answer = answer if answer is not None else {"rejected": "no"}
        self.caps = caps
        self.calls: list[dict[str, Any]] = []
        self.closed = 0

    def ls_decode_request(self, method: str, raw_b64: str) -> Any:
        self.calls.append({"method": method, "raw_b64": raw_b64})
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def close(self) -> None:
        self.closed += 1


class DecoderWithCaps(Decoder):
    def capabilities(self, op: str) -> Any:
        if isinstance(self.caps, Exception):
            raise self.caps
        return self.caps


# What every HTTP target offers, whatever its options: chat and the Responses API (a gateway without it
# answers 404 there, judged by each property).
ALWAYS_OFFERED = frozenset({"gateway.chat", "gateway.respond", "gateway.retrieve"})


def decoder() -> Decoder:
    return Decoder({"fields": {"a": 1}, "unknown": []})


def decoder_declaring_methods() -> DecoderWithCaps:
    return DecoderWithCaps({"rejected": "no"}, caps={"methods": ["Heartbeat"]})


def decoder_with_bad_capabilities_attribute() -> Any:
    target = Decoder()
    target.capabilities = {"methods": []}  # type: ignore[attr-defined]
    return target


def decoder_declaring_nothing() -> DecoderWithCaps:
    return DecoderWithCaps(caps=None)


def factory_that_crashes() -> Decoder:
    raise RuntimeError("the gateway's config file is missing")


def factory_raising_two_arguments() -> Decoder:
    raise ValueError("bad port", 70000)


def factory_that_cannot_start() -> Decoder:
    raise TargetError("the gateway did not answer on 127.0.0.1:9")


def decoder_whose_capabilities_crash() -> DecoderWithCaps:
    return DecoderWithCaps(caps=KeyError("methods"))


def decoder_whose_capabilities_are_a_list() -> DecoderWithCaps:
    return DecoderWithCaps(caps=["methods"])


NOT_A_FACTORY = 3


RESPONSES: dict[str, Any] = {
    "no-id": {"object": "response", "id": 3},
    "mixed": {"id": "r1", "output": [{"type": "reasoning"}, "junk", {"type": "message", "content": []}]},
    "no-output": {"id": "r2", "output": None},
}


class Handler(echo_gateway.Handler):
    """The echo gateway, plus answers the HTTP target must cope with; every request is logged."""

    requests: list[tuple[str, str, str]] = []
    slow_models_s = 0.0
    close_each = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        # Said in the headers, not only done: a client that pooled the connection could reuse it
        # before this handler's thread gets round to closing it ("Server disconnected").
        if self.close_each and not self.close_connection:
            self.send_header("Connection", "close")
        super().end_headers()

    def do_GET(self) -> None:
        self.requests.append(("GET", self.path, self._key()))
        if self.path == "/v1/models" and self.slow_models_s:
            time.sleep(self.slow_models_s)
        if self.path.startswith("/v1/responses/"):
            self._stored(self.path.removeprefix("/v1/responses/"))
        elif self.path == "/text":
            self._send(200, b"not json", "text/plain")
        elif self.path == "/longtext":
            self._send(200, b"y" * 400, "text/plain")
        elif self.path == "/slow":
            time.sleep(5)
            self._send(200, b"{}", "application/json")
        else:
            super().do_GET()

    def do_DELETE(self) -> None:
        self.requests.append(("DELETE", self.path, self._key()))
        status = {"/v1/responses/gone": 404, "/v1/responses/broken": 500}.get(self.path, 200)
        self._send(status, b"{}" if status == 200 else b"nope", "application/json")

    def _stored(self, rest: str) -> None:
        """A canned Responses store: ``paged`` (two pages, no ``last_id``), ``gone`` (its answer 404),
        ``lastid`` (its ``last_id`` is not the last item's id), ``nolist`` / ``longlist`` / ``notdict`` /
        ``broken`` (input items outside the API)."""
        pages = {
            "paged/input_items?limit=100&order=asc": (200, {"data": [{"id": "a", "n": 1}], "has_more": True}),
            "paged/input_items?limit=100&order=asc&after=a": (200, {"data": [{"id": "b", "n": 2}], "has_more": False}),
            "paged": (200, {"output": [{"type": "message", "content": [{"text": "paged answer"}]}]}),
            "lastid/input_items?limit=100&order=asc": (200, {"data": [{"id": "a"}], "has_more": True, "last_id": "z"}),
            "lastid/input_items?limit=100&order=asc&after=z": (200, {"data": [{"id": "b"}], "has_more": False}),
            "lastid": (200, {"output": []}),
            "gone/input_items?limit=100&order=asc": (200, {"data": [], "has_more": True}),
            "longlist/input_items?limit=100&order=asc": (200, {"data": "x" * 400}),
            "gone": (404, {"error": {}}),
            "nolist/input_items?limit=100&order=asc": (200, {"data": "x"}),
            "notdict/input_items?limit=100&order=asc": (200, [1]),
        }
        status, document = pages.get(rest, (500, "kaput"))
        self._json(status, document)

    def do_POST(self) -> None:
        self.requests.append(("POST", self.path, self._key()))
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/v1/responses":
            self._json(200, RESPONSES.get(body["input"][0]["content"], {}))
        elif body.get("model") == "json-for-stream":
            self._json(200, echo_gateway.COMPLETION)
        elif body.get("model") == "slow-stream":
            self._heartbeats()
        elif body.get("model") == "broken-stream":
            self._broken()
        elif body.get("model") == "upper-stream":
            self._send(200, b"data: x\n\n", "Text/Event-Stream; charset=utf-8")
        else:
            self.rfile = io.BytesIO(json.dumps(body).encode())
            self.headers.replace_header("Content-Length", str(len(self.rfile.getvalue())))
            super().do_POST()

    def _heartbeats(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for _ in range(12):
            self.wfile.write(b": ping\n\n")
            self.wfile.flush()
            time.sleep(0.05)
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _broken(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b"data: x\n\n")
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def echo_server(
    slow_models_s: float = 0.0, close_each: bool = False
) -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """The echo gateway's handler on a loopback port in this process; yields its root URL and the
    log of requests it received (method, path, bearer key). ``close_each``: no keep-alive."""
    attributes = {"requests": [], "slow_models_s": slow_models_s, "close_each": close_each}
    handler: type[Handler] = type("LoggedHandler", (Handler,), attributes)
    with _serving(handler) as url:
        yield url, handler.requests


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up early (a target giving up on a stream) is expected. Its handler thread may
        # outlive the test, and socketserver's traceback would land in a later test's captured stderr.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a loopback port by a thread of this process; yields the root URL."""
    server = _Server(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class RecordingLs(InProcessLs):
    """An in-process fake that also remembers the scenario documents the kit loaded into it."""

    def __init__(self, fake: FakeLSThread, csrf_token: str) -> None:
        super().__init__(fake, csrf_token)
        self.loaded: list[dict[str, Any]] = []
        self.resets = 0

    def load_scenario(self, document: dict[str, Any]) -> None:
        super().load_scenario(document)
        self.loaded.append(document)

    def reset(self) -> None:
        super().reset()
        self.resets += 1


class PrewiredHttpTarget(HttpTarget):
    """An HTTP target for a gateway served in this process in front of ``ls`` (a fake the test
    started): what a launched, dial-wired gateway offers, without a child process."""

    def __init__(self, url: str, options: HttpOptions, ls: LsHandle) -> None:
        self._wired = ls
        super().__init__(url, options)
        self._ops |= {"engine.build_send_request", "store.open", "store.put", "store.get", "store.delete"}
        limits: Mapping[str, int] = options.store_limits or DEFAULT_STORE_LIMITS
        self._caps["store.open"] = {"fixed_limits": dict(limits), "shapes": ["responses"]}

    def wired_ls(self) -> LsHandle | None:
        return self._wired


Canned = tuple[int, list[tuple[str, str]], bytes]


class CannedHandler(BaseHTTPRequestHandler):
    """Answers each ``(method, path)`` with its canned status, headers and body (404 otherwise) and
    records every request: ``(method, path, headers with lower-cased names, body)``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no answer waits ~40 ms for a delayed ACK (Nagle) on a kept-alive connection
    answers: dict[tuple[str, str], Canned] = {}
    received: list[tuple[str, str, dict[str, str], bytes]] = []
    scoped_by: str | None = None  # a bodyless request without this header is answered 404

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.received.append((self.command, self.path, headers, body))
        status, answer_headers, content = self.answers.get((self.command, self.path), (404, [], b"no canned answer"))
        if self.scoped_by is not None and not body and self.scoped_by not in headers:
            status, answer_headers, content = 404, [], b"not yours"
        self.send_response(status)
        for name, value in answer_headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_DELETE = _answer


@contextmanager
def canned_server(
    answers: Mapping[tuple[str, str], Canned], scoped_by: str | None = None
) -> Iterator[tuple[str, list[tuple[str, str, dict[str, str], bytes]]]]:
    """A loopback server in this process answering only ``answers`` (see CannedHandler; ``scoped_by``:
    a header bodyless requests need, else 404); yields its root URL and the log of requests it received."""
    attributes: dict[str, Any] = {"answers": dict(answers), "received": [], "scoped_by": scoped_by}
    handler: type[CannedHandler] = type("Canned", (CannedHandler,), attributes)
    with _serving(handler) as url:
        yield url, handler.received


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    """The port of an in-process echo gateway, one per test module (bound by the modules that use it)."""
    with echo_server() as (url, _log):
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture
def reaped() -> Iterator[list[LaunchedGateway]]:
    """Gateways whose process group is SIGKILLed after the test, whatever the launcher under test did (a
    broken stop must fail its test, not leave a TERM-proof loop running)."""
    gateways: list[LaunchedGateway] = []
    yield gateways
    for gateway in gateways:
        if gateway.pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(gateway.pid, signal.SIGKILL)


def untimed(answer: dict[str, Any]) -> dict[str, Any]:
    """A ``gateway.chat`` answer without the stream's timing (``longest_silence_s``, which the clock decides),
    after checking that a stream has it."""
    if "events" in answer:
        silence = answer.get("longest_silence_s")
        assert isinstance(silence, float), f"a stream answer without its timing: {answer}"
        assert silence >= 0, f"a negative silence: {answer}"
    return {key: value for key, value in answer.items() if key != "longest_silence_s"}

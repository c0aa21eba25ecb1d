"""The HTTP server: authentication, the cool-down gate, routing, and ``main``.

Prints ``foreigngw: listening on http://HOST:PORT`` on stdout when ready; stops on SIGTERM or
SIGINT (exit 0). A setting it cannot start with is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, ClassVar

from tests.support.foreigngw import chat, responses, scope
from tests.support.foreigngw.busy import Busy
from tests.support.foreigngw.http_io import GatewayError, bad_request, dumps, error_body, log, not_found
from tests.support.foreigngw.lsclient import LsClient
from tests.support.foreigngw.runner import Runner
from tests.support.foreigngw.settings import Settings, SettingsError, load_settings
from tests.support.foreigngw.store import ResponseStore

MAX_BODY_BYTES = 64 * 1024 * 1024
_RESPONSE_PATH = re.compile(r"^/v1/responses/([^/]+)$")
_INPUT_ITEMS_PATH = re.compile(r"^/v1/responses/[^/]+/input_items$")
_CATCH_ALL_PAGE = b"<!doctype html><html><head><title>FGW</title></head><body>FGW console</body></html>\n"


class App:
    """What every request shares."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ls = LsClient(settings)
        self.runner = Runner(settings, self.ls)
        self.store = ResponseStore(settings) if settings.full else None
        self.busy = Busy(settings.busy_every, settings.cooldown_s)

    def caller(self, authorization: str | None) -> str:
        """The caller a Bearer key names; 401 for a missing or unknown key."""
        key = authorization[len("Bearer ") :].strip() if authorization and authorization.startswith("Bearer ") else ""
        if not key:
            raise GatewayError(
                401, "Missing API key: send Authorization: Bearer KEY", "invalid_request_error", "invalid_api_key"
            )
        if self.settings.api_keys and key not in self.settings.api_keys:
            raise GatewayError(401, "Invalid API key", "invalid_request_error", "invalid_api_key")
        return key


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # As Node's http server does (noDelay): no answer waits ~40 ms for the client's delayed ACK (Nagle).
    disable_nagle_algorithm = True
    app: ClassVar[App]

    def log_message(self, format: str, *args: Any) -> None:
        log(f"{self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")

    # ------------------------------------------------------------------ the Reply interface

    def json(self, status: int, document: Any, headers: Mapping[str, str] | None = None) -> None:
        body = dumps(document).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, data: str) -> None:
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def connected(self) -> bool:
        # The request was read whole: anything readable now is the client closing (end of file).
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False

    # ------------------------------------------------------------------ routing

    def do_GET(self) -> None:
        self._serve(self._get)

    def do_POST(self) -> None:
        self._serve(self._post)

    def do_DELETE(self) -> None:
        self._serve(self._delete)

    def _serve(self, route: Callable[[str, str], None]) -> None:
        self._body_read = False  # one handler serves every request of a kept-alive connection
        try:
            caller = self.app.caller(self.headers.get("Authorization"))
            route(caller, self.path.split("?", 1)[0])
        except GatewayError as exc:
            self._drain()
            self.json(exc.status, exc.document)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug: answer it as an error rather than a dropped connection
            log(f"internal error on {self.command} {self.path}: {exc!r}")
            self.close_connection = True
            self.json(500, error_body(f"internal error: {exc}", "server_error", "internal_error"))

    def _drain(self) -> None:
        """Read an unread request body, so the connection can carry the next request."""
        if not getattr(self, "_body_read", False):
            self._body_read = True
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= MAX_BODY_BYTES:
                self.rfile.read(length)
            elif length:
                self.close_connection = True

    def _body(self) -> Any:
        self._body_read = True
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise GatewayError(413, "request body too large", "invalid_request_error", "request_too_large")
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request(f"the request body is not JSON: {exc}") from exc

    def _read_caller(self, key: str) -> str | None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        return scope.read_caller(self.app.settings, key, headers, self.path)

    def _get(self, key: str, path: str) -> None:
        if path == "/v1/models":
            self.json(
                200,
                {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": "foreigngw"} for m in chat.MODELS],
                },
            )
            return
        found = _RESPONSE_PATH.match(path)
        if _INPUT_ITEMS_PATH.match(path) and self.app.store is not None:
            self._decline_input_items()
            return
        if found is None or self.app.store is None:
            raise not_found()
        responses.handle_get(self.app.store, self._read_caller(key), found.group(1), self)

    def _decline_input_items(self) -> None:
        """It serves no input_items; FGW_INPUT_ITEMS says how it declines them."""
        answer = self.app.settings.input_items
        if answer == "405":
            self.json(405, error_body("Method Not Allowed", "invalid_request_error", None), {"Allow": "POST"})
        elif answer == "501":
            self.json(501, error_body("input_items are not implemented", "not_implemented", "not_implemented"))
        elif answer == "page":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(_CATCH_ALL_PAGE)))
            self.end_headers()
            self.wfile.write(_CATCH_ALL_PAGE)
        else:
            raise not_found()

    def _delete(self, key: str, path: str) -> None:
        found = _RESPONSE_PATH.match(path)
        if found is None or self.app.store is None:
            raise not_found()
        responses.handle_delete(self.app.store, self._read_caller(key), found.group(1), self)

    def _post(self, key: str, path: str) -> None:
        self.app.runner.check_cooldown()
        app = self.app
        if path not in ("/v1/chat/completions", "/v1/responses"):
            raise not_found()
        body = self._body()
        if app.busy.gate(self, isinstance(body, dict) and body.get("stream") is True):
            return
        caller = scope.body_caller(app.settings, key, body)
        if path == "/v1/chat/completions":
            chat.handle(app.settings, app.runner, caller, body, self)
        else:
            responses.handle_post(app.settings, app.runner, app.store, caller, body, self)


def main() -> int:
    try:
        settings = load_settings(os.environ)
    except SettingsError as exc:
        print(f"foreigngw: {exc}", file=sys.stderr, flush=True)
        return 2
    app = App(settings)
    handler = type("BoundHandler", (Handler,), {"app": app})
    try:
        server = ThreadingHTTPServer((settings.host, settings.port), handler)
    except OSError as exc:
        print(f"foreigngw: cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    server.daemon_threads = True

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, name="shutdown", daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    defects = ",".join(sorted(settings.defects)) or "-"
    log(f"personality={settings.personality} ls={settings.ls_address} defects={defects}")
    print(f"foreigngw: listening on http://{settings.host}:{server.server_port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
        app.ls.close()
    log("stopped")
    return 0

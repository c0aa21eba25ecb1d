"""A real HTTP server on 127.0.0.1 (port chosen by the OS) serving images and misbehaving on purpose.

Routes:
  /img.png, /img.gif              200 with the image
  /redirect/N                     302 -> /redirect/N-1, /redirect/0 serves the PNG
  /to?u=URL                       302 -> URL
  /nolocation                     302 without Location
  /missing                        404
  /html                           200 text/html
  /mime-params                    200 "Image/PNG; charset=binary"
  /exact                          200, exactly ``MAX_SIZE`` bytes with Content-Length
  /announce-big                   200, Content-Length above the cap, then stalls before the body
  /stream-big                     200, no Content-Length, streams past the cap
  /bytes/N, /bytes/N?stream=1     200, a PNG signature then zeros, N bytes in all; with Content-Length,
                                  or streamed without one (the connection close ends the body)
  /truncated                      200, Content-Length 100, closes after 10 bytes
  /slow-headers                   sleeps before answering
  /drip                           headers, then one byte every 50 ms (never idle long enough to time out)

Every request is recorded (path, Host, Accept) in ``requests``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from engine.media.gate import MAX_SIZE
from tests.support.imagegen import solid


@dataclass(frozen=True)
class Seen:
    path: str
    host: str | None
    accept: str | None


@dataclass
class ImageServer:
    port: int
    png: bytes
    gif: bytes
    requests: list[Seen] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ImageServer
    stop: threading.Event

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients abort on purpose (size caps, timeouts)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no answer waits ~40 ms for a delayed ACK (Nagle) on a kept-alive connection

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "image/png", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        state = self.server.state
        state.requests.append(Seen(self.path, self.headers.get("Host"), self.headers.get("Accept")))
        parts = urlsplit(self.path)
        path = parts.path
        if path == "/img.png":
            self._send(200, state.png)
        elif path == "/img.gif":
            self._send(200, state.gif, "image/gif")
        elif path.startswith("/redirect/"):
            n = int(path.rsplit("/", 1)[1])
            if n == 0:
                self._send(200, state.png)
            else:
                self._send(302, b"", "text/plain", Location=f"/redirect/{n - 1}")
        elif path == "/to":
            self._send(302, b"", "text/plain", Location=parse_qs(parts.query)["u"][0])
        elif path == "/nolocation":
            self._send(302, b"", "text/plain")
        elif path == "/missing":
            self._send(404, b"nope", "text/plain")
        elif path == "/html":
            self._send(200, b"<html></html>", "text/html")
        elif path == "/mime-params":
            self._send(200, state.png, "Image/PNG; charset=binary")
        elif path == "/exact":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * (MAX_SIZE - 8))
        elif path.startswith("/bytes/"):
            size = int(path.rsplit("/", 1)[1])
            body = (b"\x89PNG\r\n\x1a\n" + b"\0" * size)[:size]
            if parse_qs(parts.query).get("stream") == ["1"]:
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Connection", "close")
                self.end_headers()
                for start in range(0, size, 65536):
                    self.wfile.write(body[start : start + 65536])
                self.close_connection = True
            else:
                self._send(200, body)
        elif path == "/announce-big":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(MAX_SIZE + 1))
            self.end_headers()
            self.wfile.flush()
            self.server.stop.wait(5)
        elif path == "/stream-big":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"\0" * 65536
            for _ in range(MAX_SIZE // len(chunk) + 8):
                self.wfile.write(chunk)
            self.close_connection = True
        elif path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "100")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(state.png[:10])
            self.close_connection = True
        elif path == "/slow-headers":
            self.server.stop.wait(2)
            self._send(200, state.png)
        elif path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(100):
                self.wfile.write(b"\0")
                self.wfile.flush()
                if self.server.stop.wait(0.05):
                    break
        else:
            self._send(404, b"", "text/plain")


@contextmanager
def serve_images() -> Iterator[ImageServer]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.stop = threading.Event()
    server.state = ImageServer(port=server.server_address[1], png=solid(8, 6), gif=solid(8, 6, "GIF"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.state
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)

"""A gateway double that closes kept-alive connections the way Node servers do (``keepAliveTimeout``):
a client that reuses a connection the server has just closed gets no answer at all.

The race is made deterministic: each connection answers its first request (keeping the connection
alive, as Node does) and closes without a byte when a further request arrives on it. With
``answer_nothing`` every request but the kit's probe (``GET /v1/models``) is met that way.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


class IdleClosingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no answer waits ~40 ms for a delayed ACK (Nagle) on a kept-alive connection
    answer_nothing = False
    log: list[str] = []  # "answered PATH" or "closed PATH", in order
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def handle(self) -> None:
        self.served = 0
        super().handle()

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.served += 1
        if (self.answer_nothing and self.path != "/v1/models") or self.served > 1:
            with self.lock:
                self.log.append(f"closed {self.path}")
            self.close_connection = True  # not a byte of an answer
            return
        with self.lock:  # logged before the answer leaves: the client may go on as soon as it has it
            self.log.append(f"answered {self.path}")
        body = json.dumps(COMPLETION if self.command == "POST" else {"object": "list", "data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "keep-alive")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer


@contextmanager
def idle_closing_server(answer_nothing: bool = False) -> Iterator[tuple[str, list[str]]]:
    """The double on a loopback port; yields its root URL and its log."""
    handler: type[IdleClosingHandler] = type(
        "Handler", (IdleClosingHandler,), {"answer_nothing": answer_nothing, "log": []}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", handler.log
    finally:
        server.shutdown()
        server.server_close()

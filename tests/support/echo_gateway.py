"""A tiny stand-in gateway for the HTTP target's tests (standard library only).

    python tests/support/echo_gateway.py --port P [--ls-address A --csrf-token T] [--exit-at-once CODE]
                                         [--never-listen] [--ignore-term] [--leak-ls]

- ``GET /v1/models``: one model;
- ``GET /wiring``: its pid, its argv, the environment variables it was given (``LS_BINARY``, ``PORT`` and any
  ``ECHO_*``) and, when it spawned an LS, that child's pid, port and token;
- ``GET /v1/ledger``: a fixed ledger document (the kit's LEDGER_SCHEMA); ``/wiring`` shows the key it got;
- ``POST /v1/chat/completions``: a fixed completion that also carries the body and key it received
  (``received``, ``api_key``); ``"stream": true`` answers ``text/event-stream`` with a ``: ping``
  comment, two data events (the first with ``event:`` and ``id:`` fields, the second on two ``data:``
  lines, without the optional space) and ``data: [DONE]``; model
  ``bad`` answers 400 with an OpenAI error body, model ``text-error`` 502 with a plain-text body,
  model ``slow`` after 5 s; model ``die`` ends the process (exit code 5) without an answer.

With ``LS_BINARY`` set it spawns that binary as its language server, the way gateways do:
``[binary, --server_port=N, --csrf_token=T]`` with a scrubbed environment, and on SIGTERM stops it
before exiting. ``--ignore-term`` makes it ignore SIGTERM (the kit must SIGKILL it); ``--leak-ls``
starts the LS in a session of its own and leaves it running when it stops.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "echo-gateway-csrf-token"
COMPLETION = {
    "id": "chatcmpl-echo",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "echo-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "echo"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
_CHUNK = {"id": "chatcmpl-echo", "object": "chat.completion.chunk"}
EVENT_1 = _CHUNK | {"choices": [{"index": 0, "delta": {"content": "e"}}]}
EVENT_2 = _CHUNK | {"choices": [{"index": 0, "delta": {}}]}
LEDGER = {
    "tokens": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0},
    "credits": 1.5,
    "served": 2,
    "cache_served": 1,
    "account_spend": {"acct-1": 3},
    "row_count": 1,
    "rows": [{"model": "echo-model", "success": True, "cache_served": False, "credit": 1.5}],
}
_child: dict[str, Any] = {}
_seen: dict[str, str] = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no answer waits ~40 ms for a delayed ACK (Nagle) on a kept-alive connection

    def log_message(self, format: str, *args: Any) -> None:
        print(f"echo-gateway: {self.command} {self.path}", file=sys.stderr, flush=True)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "echo-model", "object": "model"}]})
        elif self.path == "/wiring":
            env = {k: v for k, v in os.environ.items() if k in ("LS_BINARY", "PORT") or k.startswith("ECHO_")}
            child = {k: v for k, v in _child.items() if k != "proc"}
            self._json(200, {"pid": os.getpid(), "argv": sys.argv, "env": env, "ls_child": child} | _seen)
        elif self.path == "/v1/ledger":
            _seen["ledger_api_key"] = self._key()
            self._json(200, LEDGER)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
        elif body.get("model") == "bad":
            self._json(400, {"error": {"message": "unknown model bad", "type": "invalid_request_error", "code": None}})
        elif body.get("model") == "slow":
            time.sleep(5)
            self._json(200, COMPLETION)
        elif body.get("model") == "text-error":
            self._send(502, b"upstream broke", "text/plain")
        elif body.get("model") == "die":
            print("echo-gateway: asked to die, exiting with code 5", file=sys.stderr, flush=True)
            os._exit(5)
        elif body.get("stream") is True:
            self._stream()
        else:
            self._json(200, COMPLETION | {"received": body, "api_key": self._key()})

    def _stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        two_lines = json.dumps(EVENT_2, indent=None).replace(', "choices"', ',\ndata: "choices"', 1)
        first = f"event: chunk\nid: 1\ndata: {json.dumps(EVENT_1)}\n\n"
        for chunk in (": ping\n\n", first, f"data:{two_lines}\n\n", "data: [DONE]\n\n"):
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True

    def _key(self) -> str:
        """The bearer key; "" without an Authorization header, "<no bearer>" with another one."""
        header = self.headers.get("Authorization")
        if header is None:
            return ""
        return header.removeprefix("Bearer ") if header.startswith("Bearer ") else "<no bearer>"

    def _json(self, status: int, document: Any) -> None:
        self._send(status, json.dumps(document).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _spawn_ls(binary: str, *, leak: bool) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    scrubbed = {"HOME": os.environ.get("HOME", "/tmp"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    argv = [binary, f"--server_port={port}", f"--csrf_token={TOKEN}"]
    proc = subprocess.Popen(argv, env=scrubbed, start_new_session=leak)
    _child.update(proc=proc, pid=proc.pid, server_port=port, csrf_token=TOKEN, leak=leak)


def _stop(signum: int, frame: Any) -> None:
    proc = _child.get("proc")
    if isinstance(proc, subprocess.Popen) and not _child["leak"]:
        proc.terminate()
        proc.wait(timeout=10)
    os._exit(0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ls-address")
    parser.add_argument("--csrf-token")
    parser.add_argument("--exit-at-once", type=int)
    parser.add_argument("--never-listen", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--leak-ls", action="store_true")
    args = parser.parse_args()
    print(f"echo-gateway: starting on port {args.port}", file=sys.stderr, flush=True)
    if args.exit_at_once is not None:
        print("echo-gateway: told to exit at once", file=sys.stderr, flush=True)
        return int(args.exit_at_once)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if args.ignore_term else _stop)
    if args.never_listen:
        while True:
            time.sleep(1)
    if os.environ.get("LS_BINARY"):
        _spawn_ls(os.environ["LS_BINARY"], leak=args.leak_ls)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"echo-gateway: serving on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

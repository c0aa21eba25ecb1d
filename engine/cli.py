"""``cascade-engine serve``: the reference gateway over HTTP, with its language server dialled or spawned."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
import sys
from collections.abc import Sequence

import uvicorn

from engine.http.app import DEFAULT_HEARTBEAT_S, DEFAULT_MAX_BODY_BYTES, HttpSettings, caller_id_for_key
from engine.http.gateway import Gateway, GatewayConfig
from engine.ls_spawn import LsSpawnError, spawn_ls

_LOOPBACK_NAMES = frozenset({"localhost"})


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.print_help()
        return 2
    return _serve(parser, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cascade-engine", description="The reference Cascade gateway.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the OpenAI-compatible HTTP front",
        description="Serve /v1/chat/completions, /v1/models, /v1/ledger, /metrics and /metrics.json in front of a "
        "Cascade language server, dialled at --ls-address or spawned from --ls-binary.",
    )
    serve.add_argument("--port", type=int, required=True, help="HTTP port (0: the OS picks; the bound port is printed)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ls = serve.add_mutually_exclusive_group(required=True)
    ls.add_argument("--ls-address", metavar="HOST:PORT", help="a running language server to dial")
    ls.add_argument("--ls-binary", metavar="PATH", help="a language-server binary to spawn as real gateways do")
    serve.add_argument("--csrf-token", default="", help="the CSRF token of --ls-address (spawned LSs get a fresh one)")
    serve.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY[=CALLER]",
        help="an accepted API key and the caller identity it stands for (repeatable); without any, requests are "
        "not authenticated, which is allowed only on a loopback address",
    )
    serve.add_argument("--native-bridge", action="store_true", help="map tool history to Cascade steps (field 9)")
    serve.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="largest request body")
    serve.add_argument("--heartbeat-s", type=float, default=DEFAULT_HEARTBEAT_S, help="SSE heartbeat interval")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    return parser


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    keys: dict[str, str] = {}
    for item in args.api_key:
        key, sep, caller = item.partition("=")
        if not key or (sep and not caller):
            parser.error(f"--api-key {item!r}: expected KEY or KEY=CALLER")
        keys[key] = caller or caller_id_for_key(key)
    if not keys and not _is_loopback(args.host):
        parser.error(f"--host {args.host} is not a loopback address: give at least one --api-key")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: expected 0..65535")
    if args.max_body_bytes < 1 or not args.heartbeat_s > 0:
        parser.error("--max-body-bytes must be >= 1 and --heartbeat-s > 0")
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    spawned = None
    if args.ls_binary:
        try:
            spawned = spawn_ls(args.ls_binary)
        except LsSpawnError as exc:
            print(f"cascade-engine: cannot start the language server: {exc}", file=sys.stderr)
            return 1
        address, csrf = spawned.address, spawned.csrf_token
    else:
        address, csrf = args.ls_address, args.csrf_token
    settings = HttpSettings(api_keys=keys, max_body_bytes=args.max_body_bytes, heartbeat_s=args.heartbeat_s)
    gateway = Gateway(GatewayConfig(ls_address=address, csrf_token=csrf, http=settings, native_mode=args.native_bridge))
    server = uvicorn.Server(uvicorn.Config(gateway.app, log_level=args.log_level, timeout_graceful_shutdown=5))
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        gateway.close()
        if spawned is not None:
            spawned.stop()
        print(f"cascade-engine: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    print(f"cascade-engine: http://{_url_host(host)}:{port} ls={address}", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        gateway.close()
        if spawned is not None:
            spawned.stop()
    return 0


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())

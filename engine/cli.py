"""``cascade-engine serve``: the reference gateway over HTTP, with its language server dialled or spawned."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import sys
from collections.abc import Sequence

from engine.cascade.polling import PollSettings
from engine.http.app import DEFAULT_HEARTBEAT_S, DEFAULT_MAX_BODY_BYTES, HttpSettings, caller_id_for_key
from engine.http.serve import PROG, ServeOptions, run_serve
from engine.sessions.log import default_log_path
from engine.store import StoreLimits, parse_byte_size

DEFAULT_POLL_INTERVAL_S = PollSettings().poll_interval_s

_LOOPBACK_NAMES = frozenset({"localhost"})


class UsageError(ValueError):
    """A serve option that argparse accepted but that makes no sense: one line on stderr, exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        options = _options(args)
    except UsageError as exc:
        print(f"{PROG} serve: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    return run_serve(options)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="The reference Cascade gateway.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the OpenAI-compatible HTTP front",
        description="Serve /v1/chat/completions, /v1/responses, /v1/models, /v1/ledger, /metrics and /metrics.json "
        "in front of a "
        "Cascade language server, dialled at --ls-address or spawned from --ls-binary. Runs until SIGINT or "
        "SIGTERM, then stops the language server it spawned and exits 0.",
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
    serve.add_argument(
        "--poll-interval-s",
        type=float,
        default=DEFAULT_POLL_INTERVAL_S,
        help="the longest wait between two polls of a turn (default 0.5, the reference client's); the first poll "
        "comes after 0.01 s (or this, if shorter) and the wait doubles up to it, so quick answers come quickly",
    )
    serve.add_argument(
        "--max-wait-s",
        type=float,
        default=PollSettings().max_wait_s,
        help="how long a turn may run before the gateway stops waiting and reports it cut (default 600)",
    )
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    _store_arguments(serve.add_argument_group("response store (/v1/responses, docs/responses-api.md)"))
    serve.add_argument(
        "--session-log",
        metavar="PATH|off",
        help="the SQLite session log behind X-Session-Id (docs/sessions.md): a file, or off (no sessions; the header "
        "is ignored). Default: $XDG_STATE_HOME/cascade-engine/sessions.db",
    )
    return parser


def _store_arguments(group: argparse._ArgumentGroup) -> None:
    limits = StoreLimits()
    group.add_argument(
        "--store",
        default="memory",
        metavar="SPEC",
        help="where stored responses live: memory (default), sqlite:PATH (survives restarts) or off",
    )
    group.add_argument(
        "--store-ttl-s", type=float, metavar="SECONDS", default=limits.ttl_s, help="idle time to live (default 3600)"
    )
    group.add_argument(
        "--store-max-age-s",
        type=float,
        metavar="SECONDS",
        default=limits.max_age_s,
        help="absolute age limit (default 86400)",
    )
    group.add_argument(
        "--store-max-entries", type=int, metavar="N", default=limits.max_entries, help="entries (default 2000)"
    )
    group.add_argument(
        "--store-max-messages",
        type=int,
        metavar="N",
        default=limits.max_messages,
        help="items kept per entry (default 400)",
    )
    group.add_argument(
        "--store-max-bytes", default="128m", metavar="SIZE", help="total size, e.g. 400k, 64m (default 128m)"
    )
    group.add_argument(
        "--store-max-entry-bytes", metavar="SIZE", help="size of one entry (default max(64k, max-bytes/4))"
    )
    group.add_argument(
        "--store-min-tenant-bytes", metavar="SIZE", help="a tenant's byte floor (default max(256k, max-bytes/64))"
    )


def _options(args: argparse.Namespace) -> ServeOptions:
    keys: dict[str, str] = {}
    for item in args.api_key:
        key, sep, caller = item.partition("=")
        if not key or (sep and not caller):
            raise UsageError(f"--api-key {item!r}: expected KEY or KEY=CALLER")
        keys[key] = caller or caller_id_for_key(key)
    if not keys and not _is_loopback(args.host):
        raise UsageError(f"--host {args.host} is not a loopback address: give at least one --api-key")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0..65535")
    if args.max_body_bytes < 1 or not args.heartbeat_s > 0:
        raise UsageError("--max-body-bytes must be >= 1 and --heartbeat-s > 0")
    if not 0.001 <= args.poll_interval_s <= 10:
        raise UsageError(f"--poll-interval-s {args.poll_interval_s}: expected 0.001..10 seconds")
    if not 0.01 <= args.max_wait_s <= 86400:
        raise UsageError(f"--max-wait-s {args.max_wait_s}: expected 0.01..86400 seconds")
    store, limits = _store_options(args)
    session_log = args.session_log if args.session_log is not None else str(default_log_path())
    if not session_log.strip():
        raise UsageError("--session-log: expected a file path or off")
    return ServeOptions(
        store=store,
        store_limits=limits,
        session_log=session_log,
        host=args.host,
        port=args.port,
        http=HttpSettings(api_keys=keys, max_body_bytes=args.max_body_bytes, heartbeat_s=args.heartbeat_s),
        ls_address=args.ls_address,
        csrf_token=args.csrf_token,
        ls_binary=args.ls_binary,
        native_mode=args.native_bridge,
        poll_interval_s=args.poll_interval_s,
        max_wait_s=args.max_wait_s,
        log_level=args.log_level,
    )


def _store_options(args: argparse.Namespace) -> tuple[str, StoreLimits]:
    spec = args.store
    if spec not in ("memory", "off") and not (spec.startswith("sqlite:") and len(spec) > len("sqlite:")):
        raise UsageError(f"--store {spec!r}: expected memory, sqlite:PATH or off")
    for option, value in (("--store-ttl-s", args.store_ttl_s), ("--store-max-age-s", args.store_max_age_s)):
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"{option} {value}: expected a positive number of seconds")
    for option, count in (
        ("--store-max-entries", args.store_max_entries),
        ("--store-max-messages", args.store_max_messages),
    ):
        if count < 1:
            raise UsageError(f"{option} {count}: expected a positive integer")
    sizes: dict[str, int | None] = {}
    for option, text in (
        ("--store-max-bytes", args.store_max_bytes),
        ("--store-max-entry-bytes", args.store_max_entry_bytes),
        ("--store-min-tenant-bytes", args.store_min_tenant_bytes),
    ):
        if text is None:
            sizes[option] = None
            continue
        try:
            size = parse_byte_size(text)
        except ValueError:
            raise UsageError(
                f"{option} {text!r}: expected a byte size such as 400k, 64m or 1g (units b, k, m, g)"
            ) from None
        if size < 1:
            raise UsageError(f"{option} {text!r}: expected a size of at least 1 byte")
        sizes[option] = size
    max_bytes = sizes["--store-max-bytes"]
    assert max_bytes is not None
    limits = StoreLimits(
        ttl_s=args.store_ttl_s,
        max_age_s=args.store_max_age_s,
        max_entries=args.store_max_entries,
        max_messages=args.store_max_messages,
        max_bytes=max_bytes,
        entry_bytes=sizes["--store-max-entry-bytes"],
        tenant_bytes=sizes["--store-min-tenant-bytes"],
    )
    try:
        limits.validate()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return spec, limits


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())

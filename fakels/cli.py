"""The ``fakels`` command: ``serve``, ``stand-in``, ``demo``."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
from pathlib import Path

# grpc core logs bind failures itself; the command reports them in one line instead.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from fakels.cascade import DEFAULT_MAX_CASCADES
from fakels.demo import run_demo
from fakels.journal import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES
from fakels.retention import Retention
from fakels.scenario import Scenario, ScenarioError, load_scenario, scenario_to_document
from fakels.server import LOOPBACK, FakeLS
from fakels.service import DEFAULT_MAX_REQUEST_BYTES
from fakels.standin import ports_file, write_standin


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range (0-65535): {value}")
    return value


def _id_prefix(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.]{1,32}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: 1-32 letters, digits, '_' or '.'")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fakels", description="A fake Windsurf/Codeium Cascade language server.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the fake LS on loopback until interrupted")
    serve.add_argument("--port", type=_port, default=0, help="gRPC (h2c) port; 0 picks a free one (default)")
    serve.add_argument("--connect-port", type=_port, help="also serve Connect framing on this port (0 = pick)")
    serve.add_argument(
        "--h2-port",
        type=_port,
        help="also serve gRPC written by hand on this port (0 = pick), where overrides can fail a call at the HTTP "
        "level (http_status, cut_frame)",
    )
    serve.add_argument("--control-port", type=_port, help="control endpoint port: journal, scenario, reset (0 = pick)")
    serve.add_argument("--csrf-token", help="require this x-codeium-csrf-token on every call")
    serve.add_argument("--scenario", type=Path, help="scenario file (.json, .yaml, .yml)")
    serve.add_argument("--journal", type=Path, help="append every request as JSON lines to this file")
    serve.add_argument(
        "--max-request-bytes",
        type=_positive,
        default=DEFAULT_MAX_REQUEST_BYTES,
        help=f"reject larger requests with RESOURCE_EXHAUSTED (default {DEFAULT_MAX_REQUEST_BYTES})",
    )
    retention = serve.add_argument_group("retention (the oldest goes first past each bound; docs/fakels.md)")
    retention.add_argument(
        "--journal-max-entries",
        type=_positive,
        default=DEFAULT_MAX_ENTRIES,
        help=f"journal entries kept in memory (default {DEFAULT_MAX_ENTRIES}; --journal's file keeps all)",
    )
    retention.add_argument(
        "--journal-max-bytes",
        type=_positive,
        default=DEFAULT_MAX_BYTES,
        help=f"raw request bytes the kept journal entries may hold (default {DEFAULT_MAX_BYTES})",
    )
    retention.add_argument(
        "--max-cascades",
        type=_positive,
        default=DEFAULT_MAX_CASCADES,
        help=f"cascades kept; past it the one used longest ago answers as expired (default {DEFAULT_MAX_CASCADES})",
    )
    serve.add_argument(
        "--control-token",
        help="the control endpoint then requires Authorization: Bearer TOKEN (it always refuses other Host names, "
        "any Origin and non-JSON POST bodies)",
    )
    serve.add_argument(
        "--journal-secrets",
        action="store_true",
        help="journal the CSRF token's value (default: only whether it matched and its length)",
    )
    serve.add_argument(
        "--cascade-id-prefix",
        type=_id_prefix,
        help="cascade ids are fakels-cascade-PREFIX-0001, ... (default: a random prefix per server; ids are never "
        "reused, not even after a reset)",
    )

    standin = sub.add_parser("stand-in", help="write an executable a gateway can spawn as its LS binary")
    standin.add_argument("--out", type=Path, required=True, help="where to write the executable")
    standin.add_argument("--scenario", type=Path, help="scenario file to bake in")
    standin.add_argument("--journal", type=Path, help="journal JSONL file the stand-in writes")
    standin.add_argument("--control-port", type=_port, help="control endpoint port (0 = pick; see <out>.ports.json)")
    standin.add_argument("--connect-port", type=_port, help="Connect framing port (0 = pick)")

    sub.add_parser("demo", help="start the fake, play one cascade turn against it, print the journal")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "stand-in":
            return _standin(args)
        return run_demo()
    except ScenarioError as exc:
        print(f"fakels: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fakels: {exc}", file=sys.stderr)
        return 1


def _serve(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario) if args.scenario else Scenario()
    return asyncio.run(_serve_async(args, scenario))


async def _serve_async(args: argparse.Namespace, scenario: Scenario) -> int:
    server = FakeLS(
        port=args.port,
        connect_port=args.connect_port,
        control_port=args.control_port,
        grpc_h2_port=args.h2_port,
        csrf_token=args.csrf_token,
        scenario=scenario,
        journal_path=args.journal,
        max_request_bytes=args.max_request_bytes,
        cascade_id_prefix=args.cascade_id_prefix,
        record_secrets=args.journal_secrets,
        control_token=args.control_token,
        retention=Retention(args.journal_max_entries, args.journal_max_bytes, args.max_cascades),
    )
    ports = await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    line = f"fakels: grpc={LOOPBACK}:{ports.grpc}"
    if ports.connect is not None:
        line += f" connect={LOOPBACK}:{ports.connect}"
    if ports.control is not None:
        line += f" control={LOOPBACK}:{ports.control}"
    if ports.grpc_h2 is not None:
        line += f" h2={LOOPBACK}:{ports.grpc_h2}"
    print(line, flush=True)
    await stop.wait()
    await server.stop()
    print("fakels: stopped", flush=True)
    return 0


def _standin(args: argparse.Namespace) -> int:
    document = scenario_to_document(load_scenario(args.scenario)) if args.scenario else None
    out = write_standin(
        args.out,
        scenario_document=document,
        journal=args.journal,
        control_port=args.control_port,
        connect_port=args.connect_port,
    )
    print(f"fakels: wrote stand-in {out}")
    print(f"  spawn it as: {out} --server_port=N --csrf_token=T [other LS flags are ignored]")
    print(f"  it reports its ports in {ports_file(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The stand-in: an executable a gateway spawns as its language-server binary.

Gateways start the LS as ``<binary> --server_port=N --csrf_token=T ...`` with a scrubbed
environment, so everything else the fake needs (scenario, journal path, extra ports) is baked
into the generated file. :func:`write_standin` writes it; :func:`run_standin` is what it runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakels.scenario import ScenarioError, parse_scenario
from fakels.server import FakeLS

_TEMPLATE = """#!{python}
# fakels stand-in language server, written by `fakels stand-in`. Regenerate rather than edit.
import os
import sys

os.environ.setdefault("GRPC_VERBOSITY", "NONE")
sys.path.insert(0, {import_root!r})
from fakels.standin import run_standin

CONFIG = {config}

sys.exit(run_standin(CONFIG, sys.argv[1:]))
"""


@dataclass(frozen=True)
class StandinArgs:
    server_port: int
    csrf_token: str | None
    ignored: tuple[str, ...]


class StandinUsageError(ValueError):
    pass


def parse_ls_command_line(argv: list[str]) -> StandinArgs:
    """Read ``--server_port`` and ``--csrf_token`` (``--flag=v`` or ``--flag v``); keep the rest
    as ignored flags, the way the real LS binary is invoked by gateways."""
    values: dict[str, str] = {}
    ignored: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in ("--server_port", "--csrf_token"):
            if not eq:
                if i + 1 >= len(argv):
                    raise StandinUsageError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            values[name] = value
        else:
            ignored.append(arg)
        i += 1
    if "--server_port" not in values:
        raise StandinUsageError("missing --server_port=N (the port the gateway will dial)")
    try:
        port = int(values["--server_port"])
    except ValueError:
        raise StandinUsageError(f"--server_port must be a number, got {values['--server_port']!r}") from None
    if not 0 <= port <= 65535:
        raise StandinUsageError(f"--server_port out of range: {port}")
    return StandinArgs(server_port=port, csrf_token=values.get("--csrf_token"), ignored=tuple(ignored))


def write_standin(
    out: Path,
    *,
    scenario_document: dict[str, Any] | None = None,
    journal: Path | None = None,
    control_port: int | None = None,
    connect_port: int | None = None,
) -> Path:
    """Write the stand-in executable to ``out`` and return its absolute path."""
    if scenario_document is not None:
        parse_scenario(scenario_document, source="baked scenario")  # fail now, not in the gateway's child
    config = {
        "scenario": scenario_document,
        "journal": str(journal.resolve()) if journal is not None else None,
        "control_port": control_port,
        "connect_port": connect_port,
    }
    import_root = str(Path(__file__).resolve().parent.parent)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        _TEMPLATE.format(python=sys.executable, import_root=import_root, config=repr(config)), encoding="utf-8"
    )
    out.chmod(out.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return out


def ports_file(executable: Path) -> Path:
    """Where a running stand-in reports its pid, ports and the CSRF token it was started with (beside
    the executable): ``{"pid", "grpc", "connect", "control", "csrf_token", "ignored_flags"}``; ``csrf_token``
    is None when the command line carried no ``--csrf_token``."""
    return executable.with_name(executable.name + ".ports.json")


def read_ports(executable: Path, *, wait_s: float = 10.0) -> dict[str, Any]:
    """The report of the stand-in running as ``executable`` (:func:`ports_file`), waiting up to ``wait_s``
    for it: a parent that sees the stand-in's port answer may ask before the report is written.
    ``FileNotFoundError`` when none came in time."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            report: dict[str, Any] = json.loads(ports_file(executable).read_text(encoding="utf-8"))
            return report
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def run_standin(config: dict[str, Any], argv: list[str]) -> int:
    try:
        args = parse_ls_command_line(argv)
        scenario = parse_scenario(config["scenario"], source="baked scenario") if config.get("scenario") else None
    except (StandinUsageError, ScenarioError) as exc:
        print(f"fakels stand-in: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(config, args, scenario))
    except OSError as exc:
        print(f"fakels stand-in: {exc}", file=sys.stderr)
        return 1


async def _serve(config: dict[str, Any], args: StandinArgs, scenario: Any) -> int:
    journal = config.get("journal")
    server = FakeLS(
        port=args.server_port,
        connect_port=config.get("connect_port"),
        control_port=config.get("control_port"),
        csrf_token=args.csrf_token,
        scenario=scenario,
        journal_path=Path(journal) if journal else None,
    )
    # Handlers before the port opens: a parent that sees the port answer may stop us at once.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ports = await server.start()
    report = {
        "pid": os.getpid(),
        "grpc": ports.grpc,
        "connect": ports.connect,
        "control": ports.control,
        "csrf_token": args.csrf_token,
        "ignored_flags": list(args.ignored),
    }
    executable = Path(sys.argv[0]).resolve()
    # Written beside and renamed into place: a reader sees the whole report or none, never a half-written one.
    partial = ports_file(executable).with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(report), encoding="utf-8")
    partial.replace(ports_file(executable))
    print(f"fakels stand-in: serving gRPC on 127.0.0.1:{ports.grpc} (pid {os.getpid()})", file=sys.stderr, flush=True)
    await stop.wait()
    await server.stop()
    return 0

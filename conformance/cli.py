"""The ``cascade-conformance`` command line: its parser, and the dispatch to each command
(:mod:`conformance.commands`). Only what parsing needs is imported here, so ``--help`` and a usage error
answer at once; a command imports what it needs when it runs."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path

from conformance.interrupts import InterruptWatch, exit_code_of, say_still_stopping, signal_name, stop_signals_interrupt
from conformance.jobs import parse_jobs
from conformance.options import HTTP_FLAGS
from conformance.profiles import PROFILES, shrink_budget
from conformance.program import EXIT_OK, EXIT_USAGE, kit_program
from conformance.shards import parse_shard

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # what a shell reports for a process a closed pipe ended
DEFAULT_REPORT = Path("reports/conformance")
DEFAULT_REPLAY_REPORT = Path("reports/replay")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cascade-conformance", description="Conformance suites for Cascade gateways.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the invariant catalogue against a target")
    _target_option(run)
    run.add_argument(
        "--only",
        help="comma-separated invariant IDs or families, in any case, e.g. WIRE or wire-1,WIRE-3 "
        "(default: every implemented invariant)",
    )
    run.add_argument("--known-failures", type=Path, help="JSON/YAML file of invariants expected to fail")
    run.add_argument("--report", type=Path, default=DEFAULT_REPORT, help="report folder")
    _cache_option(run, "REPORT/hypothesis")
    run.add_argument(
        "--example-db",
        type=Path,
        metavar="DIR",
        help="where failing examples are kept between runs, per target, and tried first (default: REPORT/examples)",
    )
    run.add_argument("--profile", choices=PROFILES, default="ci", help="ci: derandomized, bounded; thorough: more")
    run.add_argument("--seed", type=int, help="Hypothesis seed (reproduces a thorough run)")
    run.add_argument(
        "--max-examples",
        type=_positive_int,
        metavar="N",
        help="at most N examples per invariant: a quick pass, e.g. over a slow gateway (default: the profile's)",
    )
    run.add_argument(
        "--no-shrink",
        dest="shrink",
        action="store_false",
        help="report each failure with the example that first showed it, unshrunk: the same verdict, much "
        "sooner over a slow gateway, but bigger counterexamples, and failures only shrinking tells apart come as one",
    )
    run.add_argument(
        "--shrink-budget",
        type=shrink_budget,
        metavar="S",
        help="seconds shrinking may take per invariant from its first failing example; then each failure is "
        "reported with the smallest case found so far (default: 60 for exec: and http:// targets, no limit for "
        "python: and the reference)",
    )
    run.add_argument(
        "--jobs",
        type=parse_jobs,
        metavar="N",
        help="judge N invariants at once, each in a worker process of its own: a whole number or auto (two per CPU); "
        "the output and the reports are a serial run's (default: auto for python: targets and the reference, 1 "
        "for exec: and http:// targets, which may not take concurrent examples)",
    )
    run.add_argument(
        "--shard",
        type=parse_shard,
        metavar="I/N",
        help="judge only shard I of N: every N-th selected invariant from the I-th, for a CI matrix of N machines; "
        "`merge` joins the N report folders into one",
    )
    run.add_argument(
        "--log-level",
        default="ERROR",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level of the reference implementations while they are checked (default ERROR: the "
        "engine warns about every image it drops, which the properties provoke on purpose)",
    )
    replay = sub.add_parser("replay", help="run one saved case file against a target")
    replay.add_argument("case", type=Path)
    replay.add_argument(
        "--report", type=Path, default=DEFAULT_REPLAY_REPORT, help=f"report folder (default: {DEFAULT_REPLAY_REPORT})"
    )
    _target_option(replay)
    _cache_option(replay, str(DEFAULT_REPORT / "hypothesis"))
    save = sub.add_parser("save-case", help="copy a failing case from a report into a case file of your own")
    save.add_argument("invariant", help="the invariant ID whose case to save")
    save.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    save.add_argument("--out", type=Path, required=True)
    merge = sub.add_parser("merge", help="join the report folders of the shards of one run into its one report")
    merge.add_argument(
        "shards", nargs="+", type=Path, metavar="SHARD_REPORT_DIR", help="the report folder of each shard's run"
    )
    merge.add_argument("--report", type=Path, default=DEFAULT_REPORT, help=f"report folder (default: {DEFAULT_REPORT})")
    sub.add_parser(
        "list", help="the whole catalogue: IDs, statements, the operations each property needs or 'not yet implemented'"
    )
    ops = sub.add_parser("operations", help="the adapter protocol's operations")
    ops.add_argument("--json", action="store_true", help="the operations with their JSON Schemas")
    return parser


def _target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        help="python:PKG.MODULE:FACTORY, exec:COMMAND, http://127.0.0.1:PORT (port 0 with --launch: the kit "
        "picks one) or reference (the default)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        help="seconds an adapter may take per call (default: calibrated), or an HTTP request (default: 120)",
    )
    http = parser.add_argument_group("http:// targets (docs/adapters.md, 'Black-box HTTP targets')")
    for flag in HTTP_FLAGS:
        http.add_argument(flag.option("cli"), **flag.declaration("cli"))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of examples, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1 example, got {value}")
    return value


def _cache_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help=f"where Hypothesis keeps its own storage, never .hypothesis/ in the current folder (default: {default})",
    )


def main(argv: list[str] | None = None) -> int:
    # Before any target loads (grpc reads it when it is imported; a launched gateway inherits it), and
    # not at import: importing the command changes nothing.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    words = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(words)
    args.command_line = f"{kit_program()} {shlex.join(words)}"
    with stop_signals_interrupt(say_still_stopping) as watch:
        try:
            return _command(args, watch)
        except BrokenPipeError:
            # The reader went away (`cascade-conformance list | head`): stop quietly, as a process a closed
            # pipe ends does, and keep the interpreter's last flush from failing on it again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt as exc:  # before a run began (starting the target) or in a replay
            print(f"\ncascade-conformance: interrupted ({signal_name(exc)}); nothing was judged", file=sys.stderr)
            return exit_code_of(exc)


def _command(args: argparse.Namespace, watch: InterruptWatch) -> int:
    from conformance.cases import CaseFileError
    from conformance.errors import TargetError, TargetSpecError
    from conformance.known_failures import KnownFailuresError

    try:
        return _dispatch(args, watch)
    except (TargetSpecError, KnownFailuresError, CaseFileError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"cascade-conformance: {message}", file=sys.stderr)
        return EXIT_USAGE
    except TargetError as exc:
        print(f"cascade-conformance: the target failed to start: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace, watch: InterruptWatch) -> int:
    if args.command in ("list", "operations"):
        from conformance.listing import list_catalogue, list_operations

        if args.command == "operations":
            list_operations(args.json)
        else:
            list_catalogue()
        return EXIT_OK
    from conformance import commands
    from conformance.runner import hypothesis_storage

    if args.command == "save-case":
        return commands.save_case(args)
    if args.command == "merge":
        return commands.merge(args)
    if args.command == "replay":
        with hypothesis_storage(args.cache_dir or DEFAULT_REPORT / "hypothesis"):
            return commands.replay(args)
    with hypothesis_storage(args.cache_dir or args.report / "hypothesis"):
        code = commands.run(args, watch)
    if args.only is None and not watch.received:
        print(commands.not_yet_implemented_line())
    return code


if __name__ == "__main__":
    sys.exit(main())

"""The ``cascade-conformance`` command: run the catalogue against a target, replay saved cases."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from conformance.cases import CaseFileError, read_case
from conformance.catalogue import CATALOGUE
from conformance.known_failures import KnownFailure, KnownFailuresError, load_known_failures
from conformance.operations import OPERATIONS, PROTOCOL_VERSION
from conformance.properties import Property, properties
from conformance.report import save_failure_cases, summary_line, write_junit, write_markdown
from conformance.runner import PROFILES, Result, RunOptions, Status, replay_case, run_property, select
from conformance.targets import Target, TargetError, TargetSpecError, load_target

EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cascade-conformance", description="Conformance suites for Cascade gateways.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the invariant catalogue against a target")
    _target_option(run)
    run.add_argument("--only", help="comma-separated invariant IDs or families, e.g. WIRE or WIRE-1,WIRE-3")
    run.add_argument("--known-failures", type=Path, help="JSON/YAML file of invariants expected to fail")
    run.add_argument("--report", type=Path, default=Path("reports/conformance"), help="report folder")
    run.add_argument("--profile", choices=PROFILES, default="ci", help="ci: derandomized, bounded; thorough: more")
    run.add_argument("--seed", type=int, help="Hypothesis seed (reproduces a thorough run)")
    run.add_argument(
        "--log-level",
        default="ERROR",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level of the reference implementations while they are checked (default ERROR: the "
        "engine warns about every image it drops, which the properties provoke on purpose)",
    )
    replay = sub.add_parser("replay", help="run one saved case file against a target")
    replay.add_argument("case", type=Path)
    _target_option(replay)
    save = sub.add_parser("save-case", help="copy a failing case from a report into a case file of your own")
    save.add_argument("invariant", help="the invariant ID whose case to save")
    save.add_argument("--report", type=Path, default=Path("reports/conformance"))
    save.add_argument("--out", type=Path, required=True)
    sub.add_parser("list", help="the catalogue: IDs, statements, the operations each property needs")
    ops = sub.add_parser("operations", help="the adapter protocol's operations")
    ops.add_argument("--json", action="store_true", help="the operations with their JSON Schemas")
    return parser


def _target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", help="python:PKG.MODULE:FACTORY or exec:COMMAND (default: the reference)")
    parser.add_argument("--call-timeout", type=float, help="seconds an adapter may take per call (default: calibrated)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "operations":
            return _operations(args.json)
        if args.command == "save-case":
            return _save_case(args)
        if args.command == "replay":
            return _replay(args)
        return _run(args)
    except (TargetSpecError, KnownFailuresError, CaseFileError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"cascade-conformance: {message}", file=sys.stderr)
        return EXIT_USAGE
    except TargetError as exc:
        print(f"cascade-conformance: the target failed to start: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    loggers = [logging.getLogger(name) for name in ("engine", "fakels")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(args.log_level)
    try:
        return _run_with_logging_set(args)
    finally:  # main() may run in a host process (tests, an embedding tool): leave its logging as found
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _run_with_logging_set(args: argparse.Namespace) -> int:
    chosen = select(args.only.split(",") if args.only else None)
    known = load_known_failures(args.known_failures) if args.known_failures else {}
    target = load_target(args.target, call_timeout_s=args.call_timeout)
    options = RunOptions(profile=args.profile, seed=args.seed, database=args.report / "hypothesis-db")
    results: list[Result] = []
    try:
        print(f"target: {target.description}", file=sys.stderr)
        for index, prop in enumerate(chosen, start=1):
            print(f"[{index}/{len(chosen)}] {prop.invariant.id} ...", end="", file=sys.stderr, flush=True)
            result = _run_one(prop, target, options, known.get(prop.invariant.id))
            print(f" {result.status.value} ({result.seconds:.1f}s)", file=sys.stderr, flush=True)
            results.append(result)
    finally:
        target.close()
    cases = save_failure_cases(results, args.report, target.description)
    junit = write_junit(results, args.report / "junit.xml", target.description)
    markdown = write_markdown(results, args.report / "report.md", target.description, args.target, cases)
    for result in results:
        print(summary_line(result))
    unexpected = [r for r in results if not r.status.ok]
    print(
        f"{len(results)} invariant(s): "
        + ", ".join(
            f"{sum(1 for r in results if r.status == s)} {s.value}"
            for s in Status
            if any(r.status == s for r in results)
        )
    )
    print(f"reports: {markdown} {junit}")
    for result in unexpected:
        print(f"\n{result.invariant.id} {result.status.value}: {result.message}")
        if result.invariant.id in cases:
            from conformance.report import replay_command

            print(f"  replay: {replay_command(cases[result.invariant.id], args.target)}")
    return EXIT_UNEXPECTED if unexpected else EXIT_OK


def _run_one(prop: Property, target: Target, options: RunOptions, known: KnownFailure | None) -> Result:
    if known is None:
        return run_property(prop, target, options)
    result = (
        replay_case(prop, target, read_case(known.case).case) if known.case else run_property(prop, target, options)
    )
    if result.status == Status.FAIL:
        result.status, result.message = Status.KNOWN_FAILURE, f"{known.reason}: {result.message}"
    elif result.status == Status.PASS:
        result.status = Status.UNEXPECTED_PASS
        result.message = f"listed as a known failure ({known.reason}) but it passes: remove it from the list"
    return result


def _replay(args: argparse.Namespace) -> int:
    saved = read_case(args.case)
    prop = properties().get(saved.invariant)
    if prop is None:
        raise KeyError(f"{saved.invariant} has no property in this kit")
    target = load_target(args.target, call_timeout_s=args.call_timeout)
    try:
        result = replay_case(prop, target, saved.case)
    finally:
        target.close()
    print(summary_line(result))
    if result.status == Status.FAIL:
        print(result.message)
        if result.evidence:
            print(json.dumps(result.evidence, indent=2, ensure_ascii=False, default=str)[:20000])
    return EXIT_UNEXPECTED if not result.status.ok else EXIT_OK


def _save_case(args: argparse.Namespace) -> int:
    source = args.report / "cases" / f"{args.invariant.lower()}.json"
    read_case(source)  # refuses anything that is not a case file
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, args.out)
    print(f"saved {args.out} (replay: cascade-conformance replay {args.out})")
    return EXIT_OK


def _list() -> int:
    registered = properties()
    for inv_id, inv in CATALOGUE.items():
        prop = registered.get(inv_id)
        needs = ", ".join(sorted(prop.needs)) if prop else "no property yet"
        print(f"{inv_id:<8} {inv.statement}\n         needs: {needs}")
    return EXIT_OK


def _operations(as_json: bool) -> int:
    if as_json:
        document = {
            "protocol": PROTOCOL_VERSION,
            "operations": {
                name: {"summary": op.summary, "params": op.params, "result": op.result}
                for name, op in OPERATIONS.items()
            },
        }
        print(json.dumps(document, indent=2))
        return EXIT_OK
    for name, op in OPERATIONS.items():
        print(f"{name:<22} {op.summary}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

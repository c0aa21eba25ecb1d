"""The ``cascade-mutations`` command: ``verify`` (run mutations) and ``check`` (static checks)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from conformance.interrupts import exit_code_of, say_still_stopping, signal_name, stop_signals_interrupt
from conformance.shards import Shard, parse_shard
from mutations.conformance_share import ConformanceVerdict, engine_mutations, share_line
from mutations.matrix import coverage_problems, invariants_with_tests, kill_matrix, write_report
from mutations.runner import EXIT_MISBEHAVED, EXIT_NO_VERDICT, EXIT_OK, NoVerdict, Outcome, format_seconds, verify
from mutations.spec import Spec, SpecError, default_spec_paths, load_spec, static_problems


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cascade-mutations", description="Mutation specs that pin each invariant.")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: the current folder)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("verify", help="apply each mutation in a disposable copy and check the named tests catch it")
    run.add_argument("specs", nargs="*", type=Path, help="spec files (default: every spec under mutations/specs/)")
    run.add_argument("--keep-going", action="store_true", help="run every mutation even after one misbehaves")
    run.add_argument("--timeout", type=float, default=900.0, help="seconds one test run may take (default 900)")
    run.add_argument("--report", type=Path, default=Path("reports/mutations"), help="where to write the kill matrix")
    run.add_argument(
        "--jobs",
        type=_positive,
        default=_cpus(),
        help="disposable copies running mutations at once (default: the number of CPUs, here %(default)s)",
    )
    run.add_argument(
        "--shard",
        type=parse_shard,
        metavar="I/N",
        help="verify only shard I of N: every N-th mutation from the I-th over the specs in order (with the "
        "baselines of their specs), for a CI matrix of N machines",
    )
    run.add_argument(
        "--no-early-stop",
        dest="early_stop",
        action="store_false",
        help="run every mutation over its full selection, so the kill matrix lists every killing test (default: "
        "a mutation expected CAUGHT stops at its first killing test, the expected tests first)",
    )
    run.add_argument(
        "--no-conformance",
        dest="conformance",
        action="store_false",
        help="skip the conformance share (default: each engine mutation is also judged by cascade-conformance run "
        "--only its invariants against the mutated reference, and the share caught is printed)",
    )
    run.add_argument(
        "--conformance-only",
        dest="conformance",
        action="store_const",
        const="only",
        help="measure the conformance share only: no spec baselines, no test runs under the mutations",
    )
    check = sub.add_parser("check", help="static checks only: schema, anchors, files, tests, coverage")
    check.add_argument("specs", nargs="*", type=Path)
    return parser


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return max(1, os.cpu_count() or 1)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _load(paths: list[Path]) -> list[Spec]:
    return [load_spec(p) for p in (paths or default_spec_paths())]


def _catalogue() -> set[str]:
    from conformance.catalogue import CATALOGUE

    return set(CATALOGUE)


def _implemented() -> set[str]:
    """The invariants with a property: only they must be pinned by a mutation (the catalogue also
    holds the invariants not yet implemented)."""
    from conformance.properties import properties

    return set(properties())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root: Path = args.root.resolve()
    try:
        specs = _load(args.specs)
        if getattr(args, "shard", None) is not None:
            specs = sharded(specs, args.shard)
    except SpecError as exc:
        print(f"cascade-mutations: {exc}", file=sys.stderr)
        return EXIT_NO_VERDICT
    catalogue = _catalogue()
    if args.command == "check":
        problems = [f"{s.path.name}: {p}" for s in specs for p in static_problems(s, root, catalogue)]
        if not args.specs:
            problems += coverage_problems(specs, _implemented(), invariants_with_tests(root))
        for problem in problems:
            print(f"cascade-mutations: {problem}", file=sys.stderr)
        print(
            f"{len(specs)} spec(s), {sum(len(s.mutations) for s in specs)} mutation(s): "
            f"{'OK' if not problems else f'{len(problems)} problem(s)'}"
        )
        return EXIT_NO_VERDICT if problems else EXIT_OK
    try:
        with stop_signals_interrupt(say_still_stopping):
            outcome = verify(
                specs,
                root,
                catalogue,
                keep_going=args.keep_going,
                timeout_s=args.timeout,
                jobs=args.jobs,
                early_stop=args.early_stop,
                conformance=args.conformance,
            )
    except NoVerdict as exc:
        print(f"cascade-mutations: no verdict: {exc}", file=sys.stderr)
        return EXIT_NO_VERDICT
    except KeyboardInterrupt as exc:
        # verify() has ended its test runs (their process groups killed) and removed its copies.
        print(f"\ncascade-mutations: interrupted ({signal_name(exc)}): no verdict", file=sys.stderr)
        return exit_code_of(exc)
    if args.conformance == "only":
        print(f"wall time in total: {format_seconds(outcome.wall_s)} ({args.jobs} job(s), conformance share only)")
    else:
        _print_matrix(outcome, args.report if args.report.is_absolute() else root / args.report)
        _print_times(outcome, args.jobs, args.early_stop)
    if outcome.conformance is None:
        print("conformance share: not measured (--no-conformance)")
    elif outcome.conformance or engine_mutations(specs):
        print(share_line(outcome.conformance))
    bad = outcome.misbehaved
    if bad:
        judged = len(outcome.verdicts) + len(outcome.conformance or [])
        print(f"{len(bad)} of {judged} verdict(s) did NOT behave as expected:")
        for v in bad:
            print(f"  {v.mutation.name}{' (conformance)' if isinstance(v, ConformanceVerdict) else ''}: {v.why}")
        print(
            "  advice: add an assertion that drives the real code path, or document the survivor with its premise "
            "(a conformance miss: a property or strategy that draws the shape, or conformance_blind)"
        )
        return EXIT_MISBEHAVED
    print(f"all {len(outcome.verdicts)} mutation(s) behaved as expected")
    return EXIT_OK


def sharded(specs: list[Spec], shard: Shard) -> list[Spec]:
    """The specs cut to ``shard``'s mutations: every N-th over all the specs' mutations in order, from the I-th;
    a spec none of whose mutations is in the shard is left out (its baseline with it)."""
    kept: list[Spec] = []
    position = 0
    for spec in specs:
        mine = []
        for mutation in spec.mutations:
            if position % shard.count == shard.index - 1:
                mine.append(mutation)
            position += 1
        if mine:
            kept.append(replace(spec, mutations=tuple(mine)))
    return kept


def _print_matrix(outcome: Outcome, report_dir: Path) -> None:
    matrix = kill_matrix(outcome.verdicts, outcome.conformance)
    paths = write_report(matrix, report_dir)
    print("\nkill matrix (invariant: mutation -> killed by; a run stopped early names its first killer only):")
    for invariant_id, rows in matrix.items():
        for row in rows:
            killers = ", ".join(row["killed_by"][:3]) + (" ..." if len(row["killed_by"]) > 3 else "")
            first = " (first killer)" if row["first_killer"] else ""
            share = f"; conformance: {row['conformance']}" if row["conformance"] else ""
            print(f"  {invariant_id}: {row['mutation']} -> {killers or 'SURVIVED'}{first}{share}")
    print(f"kill matrix: {', '.join(str(p) for p in paths)}")


def _print_times(outcome: Outcome, jobs: int, early_stop: bool) -> None:
    per_spec = ", ".join(f"{t.spec.path.name} {format_seconds(t.wall_s)}" for t in outcome.times)
    print(f"wall time per spec: {per_spec}" + (" (they overlap: copies run specs side by side)" if jobs > 1 else ""))
    mode = "early stop" if early_stop else "full runs"
    print(f"wall time in total: {format_seconds(outcome.wall_s)} ({jobs} job(s), {mode})")


if __name__ == "__main__":
    sys.exit(main())

"""``python -m mutations.explore``: an exploratory mutmut run with a real score and a verdict.

mutmut's own exit code says nothing about survivors (``mutmut run`` exits 0 with any number of
them), so this script:

1. removes ``mutants/`` (results, and data files under ``source_paths``, are otherwise reused
   from the last run and can be stale);
2. runs ``mutmut run`` on the mutants of the chosen scopes (``--scope``, default: every scope of
   ``mutations/explore/scopes.json``; see :mod:`mutations.explore.scopes`) with the ``[tool.mutmut]``
   config of pyproject.toml; mutmut runs, for each mutant, the selected tests that cover its
   function (``--max-children`` is passed through);
3. runs ``mutmut export-cicd-stats`` and reads ``mutants/mutmut-cicd-stats.json``, plus the per-file
   ``mutants/**/*.py.meta`` results (the CI/CD JSON leaves out "caught by type check" and "not
   checked", and lists no mutant names);
4. prints every status count and the score of each scope against its floor, lists the survivors
   with their diffs (``mutmut show``), and checks them against
   ``mutations/explore/accepted-survivors.json``.

A run over every scope takes longer than a machine may stay up. ``--resume`` goes on with the run in
``mutants/`` where it was cut off: mutmut keeps each verdict as soon as it has one and tests only the
mutants without one, and :mod:`mutations.explore.resume` makes sure the tree and the scopes are the
ones the run started with (a run record in ``mutants/``), so the pieces add up to one run. Without
``mutants/``, ``--resume`` starts a fresh run, so the same command serves every piece. When
``mutants/`` itself will not outlive the machine, ``--save-checkpoint FILE`` keeps the verdicts in one
file and ``--resume-from FILE`` goes on with them on another checkout (:mod:`mutations.explore.checkpoint`).

Exit codes: 0 = every scope reached its floor and every survivor is on the accepted list; 1 = a
scope below its floor or survivors that are not accepted (each printed with its diff); 2 = no
score: mutmut is missing, failed, stopped early, or left mutants of a chosen scope without a
verdict. A run that did not happen never gets a score.

The score is ``(killed + timeout + caught by type check) / (total - skipped)``: "no tests"
mutants count against it (code the selected tests never reach is not tested). The score among
mutants that had covering tests is printed as well.

Accepted survivors. mutmut's mutant names are positional (``..._compute__mutmut_7``): any edit
to a function renumbers its mutants. An entry therefore names the function with a glob
(``fakels.journal.x_read_jsonl__mutmut_*``) and pins the mutation by its changed source lines
(``removed``/``added``, as ``mutmut show`` prints them, whitespace-trimmed). Such an entry survives
renumbering and edits elsewhere; when the mutated line itself changes it stops matching and the
survivor shows up as not accepted (the safe direction), to be re-triaged. A bare positional name
without the lines could silently accept a *different* mutant after renumbering, so it is refused.
A function glob without lines accepts every survivor in that function; use it only when the
reason holds for the whole function.

What the score does not cover: mutmut 3 never mutates module-level code (constants, wire tables),
decorated functions (``@property``, ``@lru_cache``...), nested classes or code that runs only in a
child process ("no tests"). Invariants that live there are pinned by the kit's own mutation specs
(``cascade-mutations``), not by this run.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mutations.explore.accepted import (
    ACCEPTED_PATH,
    Accepted,
    Survivor,
    changed_lines,
    function_of,
    load_accepted,
    order,
    triage,
)
from mutations.explore.checkpoint import restore_checkpoint, save_checkpoint
from mutations.explore.results import (
    CICD_STATS,
    MUTANTS_DIR,
    STATUS_BY_EXIT_CODE,
    Counts,
    NoScore,
    counts_from_cicd,
    counts_from_statuses,
    covered_score,
    mutation_score,
)
from mutations.explore.resume import (
    CHECKPOINT_SUFFIX,
    RUN_RECORD,
    RunRecord,
    check_same_run,
    describe,
    hashed_files,
    left_to_run,
    new_piece,
    read_record,
    record_path,
    retest_beaten,
    retest_unfinished,
    write_record,
)
from mutations.explore.scopes import SCOPES_PATH, Scope, choose, load_scopes, statuses_of

EXIT_OK, EXIT_UNACCEPTED, EXIT_NO_SCORE = 0, 1, 2

INSTALL_HINT = "install the 'mutation' extra: pip install -e '.[test,mutation]' (or run: tox -e mutmut)"
INTERRUPT_GRACE_S = 30.0

# ------------------------------------------------------------------ running mutmut


def mutmut_command() -> list[str]:
    """The ``mutmut`` console script of this interpreter's environment (mutmut warns against -m)."""
    import importlib.util

    if importlib.util.find_spec("mutmut") is None:
        raise NoScore(f"mutmut is not installed in {sys.prefix}: {INSTALL_HINT}")
    here = Path(sys.executable).parent / "mutmut"
    found = str(here) if here.exists() else shutil.which("mutmut")
    if found is None:
        raise NoScore(f"mutmut is importable but its 'mutmut' command is not on PATH: {INSTALL_HINT}")
    return [found]


def read_config(root: Path) -> dict[str, Any]:
    """The ``[tool.mutmut]`` section of ``root/pyproject.toml``."""
    import tomllib

    pyproject = root / "pyproject.toml"
    try:
        config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise NoScore(f"cannot read {pyproject}: {exc}") from None
    section = config.get("tool", {}).get("mutmut")
    if not isinstance(section, dict) or not section.get("source_paths"):
        raise NoScore(f"{pyproject} has no [tool.mutmut] section with source_paths; run from the repository root")
    return section


def reproduce_hint(config: Mapping[str, Any]) -> str:
    """The pytest command mutmut's stats run amounts to. Under process_isolation = "forkserver"
    mutmut swallows the output of its stats and clean runs, so this is how to see the failure."""
    selection = [str(a) for a in config.get("pytest_add_cli_args_test_selection", [])]
    extra = [str(a) for a in config.get("pytest_add_cli_args", [])]
    args = ["--rootdir=.", "--tb=native", "-x", "-q", "-p", "no:randomly", *selection, *extra]
    return f"cd {MUTANTS_DIR} && MUTANT_UNDER_TEST=stats python -m pytest {' '.join(shlex.quote(a) for a in args)}"


def fresh_mutants_dir(root: Path) -> None:
    mutants = root / MUTANTS_DIR
    if mutants.is_symlink() or (mutants.exists() and not mutants.is_dir()):
        raise NoScore(f"{mutants} is not a plain directory; refusing to remove it")
    if mutants.exists():
        shutil.rmtree(mutants)


def run_mutmut(
    command: list[str], root: Path, max_children: int | None, config: Mapping[str, Any], globs: Sequence[str]
) -> float:
    args = [*command, "run"]
    if max_children is not None:
        args += ["--max-children", str(max_children)]
    args += list(globs)
    print(f"$ {' '.join(args)}", flush=True)
    started = time.monotonic()
    try:
        # A process group of its own: mutmut leaves its fork server (and whatever a test started) running
        # when it stops early, e.g. after a red clean run; those must not go on eating the cores.
        proc = subprocess.Popen(args, cwd=root, process_group=0, env=_mutmut_environment())
    except OSError as exc:
        raise NoScore(f"cannot start mutmut: {exc}") from None
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:
        # Ctrl-C reaches only the foreground group: pass it on, let mutmut stop its workers, then end it.
        _signal_group(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise NoScore("interrupted: mutmut did not finish, so there is no score") from None
    finally:
        _signal_group(proc.pid, signal.SIGKILL)
    elapsed = time.monotonic() - started
    if returncode < 0:
        raise NoScore(
            f"'mutmut run' was killed by signal {-returncode} ({_signal_name(-returncode)}) after {elapsed:.0f}s; "
            "the verdicts it reached are kept in mutants/: go on with --resume"
        )
    if returncode != 0:
        raise NoScore(
            f"'mutmut run' exited {returncode} after {elapsed:.0f}s: it stopped before or while testing mutants "
            "(stats, clean or forced-fail run; see its output above). A red or flaky selected test is the usual "
            f"cause; to see it: {reproduce_hint(config)}"
        )
    return elapsed


def _mutmut_environment() -> dict[str, str]:
    """mutmut hands each mutant its covering tests as a set: a fixed hash seed makes their order, and so
    the verdicts, the same on every run (unless the caller chose a seed)."""
    return {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # nothing of the group is left
        os.killpg(group, signum)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def export_cicd_stats(command: list[str], root: Path) -> dict[str, Any]:
    path = root / MUTANTS_DIR / CICD_STATS
    path.unlink(missing_ok=True)
    proc = subprocess.run([*command, "export-cicd-stats"], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not path.exists():
        detail = (proc.stdout + proc.stderr).strip().splitlines()
        raise NoScore(f"'mutmut export-cicd-stats' wrote no {CICD_STATS}: {detail[-1] if detail else 'no output'}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise NoScore(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise NoScore(f"{path} is not a JSON object")
    return data


def read_statuses(root: Path) -> dict[str, str]:
    """Every mutant's status, from the per-file ``.meta`` results."""
    statuses: dict[str, str] = {}
    for meta in sorted((root / MUTANTS_DIR).rglob("*.py.meta")):
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            results = data["exit_code_by_key"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise NoScore(f"cannot read mutmut results {meta}: {exc}") from None
        if not isinstance(results, dict):
            raise NoScore(f"{meta}: exit_code_by_key is not an object")
        for name, code in results.items():
            statuses[name] = STATUS_BY_EXIT_CODE.get(code, "suspicious")
    return statuses


def show_survivors(command: list[str], root: Path, names: Sequence[str]) -> list[Survivor]:
    def show(name: str) -> Survivor:
        proc = subprocess.run([*command, "show", name], cwd=root, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise NoScore(f"'mutmut show {name}' failed: {(proc.stdout + proc.stderr).strip()[-300:]}")
        diff = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("# "))
        removed, added = changed_lines(diff)
        return Survivor(name=name, removed=removed, added=added, diff=diff.strip())

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(show, names))


def resume_run(
    command: list[str],
    root: Path,
    max_children: int | None,
    config: Mapping[str, Any],
    scopes: Sequence[Scope],
    globs: Sequence[str],
    every_scope: bool,
) -> float | None:
    """Test what the run in ``mutants/`` left untested; the wall time of this piece (None: nothing was left)."""
    mutants = root / MUTANTS_DIR
    if not record_path(root).is_file():
        raise NoScore(
            f"--resume: {mutants} holds no record of the run it came from ({RUN_RECORD}), so it cannot be resumed "
            "safely; run without --resume to start afresh"
        )
    record = read_record(root)
    files = hashed_files(root, config)
    selection = config.get("pytest_add_cli_args_test_selection", [])
    if not isinstance(selection, list) or not all(isinstance(entry, str) for entry in selection):
        raise NoScore("pyproject.toml: [tool.mutmut] pytest_add_cli_args_test_selection must be a list of test paths")
    added_tests = check_same_run(record, globs, files, selection)
    retested = retest_unfinished(root)
    if added_tests:
        beaten = retest_beaten(root, lambda name: any(s.holds(name) for s in scopes))
        print(
            f"--resume: {len(added_tests)} test module(s) added ({', '.join(added_tests)}): {beaten} survivor(s) "
            "and untested mutant(s) are tested again"
        )
    statuses = {name: status for name, status in read_statuses(root).items() if any(s.holds(name) for s in scopes)}
    left = left_to_run(root, [module for scope in scopes for module in scope.modules()], statuses)
    print(f"--resume: {describe(record)}; {retested} cut-off result(s) cleared, {len(left)} glob(s) left", flush=True)
    if not left:
        print("--resume: every mutant of the chosen scopes has a verdict; mutmut was not run again")
        return None
    record = record.with_piece(new_piece(), files)
    write_record(root, record)
    # With every scope chosen, only_mutate is exactly their modules: mutmut without names tests just the
    # mutants without a result. Named mutants are always tested again, so a subset names its open functions.
    wall_s = run_mutmut(command, root, max_children, config, [] if every_scope else left)
    write_record(root, record.finishing_last_piece(wall_s))
    return sum(p.wall_s or 0.0 for p in record.pieces[:-1]) + wall_s


# ------------------------------------------------------------------ report


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def print_report(
    counts: Counts,
    statuses: Mapping[str, str],
    matched: Sequence[tuple[Survivor, Accepted]],
    unaccepted: Sequence[Survivor],
    unused: Sequence[Accepted],
    wall_s: float | None,
) -> None:
    print()
    print("mutmut results of the chosen scopes (from mutants/*.meta, checked against mutmut-cicd-stats.json)")
    for label, value in counts.rows():
        print(f"  {label:<22}{value:>6}")
    print(
        f"score: {_percent(mutation_score(counts))} = (killed + timeout + type-caught) {counts.detected} / "
        f"(total - skipped) {counts.total - counts.skipped}"
    )
    print(f"score among mutants with covering tests: {_percent(covered_score(counts))}")
    if wall_s is not None:
        print(f"wall time of 'mutmut run' (every piece of a resumed run that finished): {wall_s:.0f}s")
    no_tests = sorted({function_of(n) for n, s in statuses.items() if s == "no tests"})
    if no_tests:
        print(f"\nfunctions with mutants no selected test reaches ({len(no_tests)}):")
        for name in no_tests:
            print(f"  {name}")
    print(f"\nsurvivors: {len(matched) + len(unaccepted)} ({len(matched)} accepted, {len(unaccepted)} not accepted)")
    for survivor, entry in matched:
        print(f"  accepted  {survivor.name}: {survivor.removed!r} -> {survivor.added!r}")
        print(f"            reason: {entry.reason}")
    for survivor in unaccepted:
        print(f"  SURVIVED  {survivor.name}")
        for line in survivor.diff.splitlines():
            if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
                print(f"            {line}")
    if unused:
        print(f"\naccepted entries that matched no survivor ({len(unused)}; killed now or renumbered lines):")
        for entry in unused:
            print(f"  {entry.mutant}: {entry.removed!r} -> {entry.added!r}")


def scope_rows(scopes: Sequence[Scope], statuses: Mapping[str, str]) -> list[tuple[Scope, Counts, float | None]]:
    """Each chosen scope's counts and score; a scope with mutants left without a verdict has no score."""
    rows = []
    for scope in scopes:
        counts = counts_from_statuses(statuses_of(scope, statuses).values())
        if counts.total == 0:
            raise NoScore(f"scope {scope.name!r}: mutmut made no mutant matching {', '.join(scope.mutants)}")
        if counts.without_verdict:
            raise NoScore(
                f"scope {scope.name!r}: {counts.without_verdict} mutant(s) have no verdict (not checked "
                f"{counts.not_checked}, interrupted {counts.interrupted}, segfault {counts.segfault}, suspicious "
                f"{counts.suspicious}): the run is incomplete or unreliable, so there is no score"
            )
        rows.append((scope, counts, mutation_score(counts)))
    return rows


def print_scopes(rows: Sequence[tuple[Scope, Counts, float | None]]) -> list[str]:
    """The per-scope table; returns the names of the scopes below their floor."""
    print("\nscore per scope (killed + timeout + type-caught) / (total - skipped), against its floor:")
    print(f"  {'scope':<20}{'mutants':>8}{'survived':>10}{'no tests':>10}{'score':>9}{'floor':>8}  verdict")
    below = []
    for scope, counts, score in rows:
        ok = score is not None and 100 * score >= scope.min_score
        if not ok:
            below.append(scope.name)
        print(
            f"  {scope.name:<20}{counts.total:>8}{counts.survived:>10}{counts.no_tests:>10}"
            f"{_percent(score):>9}{scope.min_score:>7.1f}%  {'ok' if ok else 'BELOW THE FLOOR'}"
        )
    return below


# ------------------------------------------------------------------ main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mutations.explore",
        description="Run mutmut from a fresh mutants/ on the chosen scopes, print each scope's score against its "
        "floor and check survivors against the accepted list. Exit 0: every floor reached and every survivor "
        "accepted; 1: a floor missed or survivors not accepted; 2: no score.",
    )
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: the current folder)")
    parser.add_argument("--max-children", type=int, help="passed to 'mutmut run' (default: mutmut's, the CPU count)")
    parser.add_argument(
        "--scope",
        action="append",
        metavar="NAME",
        help=f"repeatable; the scopes of <root>/{SCOPES_PATH.as_posix()} to run (default: all of them)",
    )
    parser.add_argument("--list-scopes", action="store_true", help="print the scopes and their floors, run nothing")
    parser.add_argument(
        "--accepted", type=Path, help=f"accepted-survivor list (default: <root>/{ACCEPTED_PATH.as_posix()})"
    )
    given_results = parser.add_mutually_exclusive_group()
    given_results.add_argument(
        "--resume",
        action="store_true",
        help="go on with the run in mutants/ where it was cut off (only on the tree and scopes it started with); "
        "without mutants/, start a fresh run",
    )
    given_results.add_argument(
        "--resume-from",
        type=Path,
        metavar="FILE",
        help="on a checkout without mutants/: restore the run saved by --save-checkpoint, then go on as --resume",
    )
    given_results.add_argument(
        "--save-checkpoint",
        type=Path,
        metavar="FILE",
        help=f"run nothing: save the verdicts of the run in mutants/ to FILE (named *{CHECKPOINT_SUFFIX}), "
        "for --resume-from on another checkout or machine",
    )
    given_results.add_argument(
        "--report-only",
        action="store_true",
        help="do not run mutmut: report on the results an earlier run left in mutants/ (says so in the output)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root: Path = args.root.resolve()
    accepted_path: Path = args.accepted or root / ACCEPTED_PATH
    try:
        known_scopes = load_scopes(root / SCOPES_PATH)
        scopes = choose(known_scopes, args.scope)
        if args.list_scopes:
            for scope in scopes:
                print(f"{scope.name:<20} floor {scope.min_score:.1f}%  {scope.about}")
                print(f"{'':<20} {' '.join(scope.mutants)}")
            return EXIT_OK
        if args.save_checkpoint:
            decided, open_ = save_checkpoint(root, args.save_checkpoint)
            print(f"--save-checkpoint: {args.save_checkpoint}: {decided} verdict(s) kept, {open_} mutant(s) still open")
            return EXIT_OK
        accepted = load_accepted(accepted_path)
        command = mutmut_command()
        config = read_config(root)
        globs = [glob for scope in scopes for glob in scope.mutants]
        wall_s: float | None = None
        if args.report_only:
            if not (root / MUTANTS_DIR).is_dir():
                raise NoScore(f"--report-only: there is no {root / MUTANTS_DIR} from an earlier run")
            print("--report-only: mutmut was NOT run; these are the results an earlier run left in mutants/")
        elif args.resume_from:
            record = restore_checkpoint(root, args.resume_from)
            print(f"--resume-from: restored the run of {args.resume_from} ({describe(record)})", flush=True)
            wall_s = resume_run(command, root, args.max_children, config, scopes, globs, scopes == known_scopes)
        elif args.resume and (root / MUTANTS_DIR).exists():
            wall_s = resume_run(command, root, args.max_children, config, scopes, globs, scopes == known_scopes)
        else:
            fresh_mutants_dir(root)
            record = RunRecord(tuple(globs), hashed_files(root, config), (new_piece(),))
            write_record(root, record)
            # With every scope, mutmut gets no names (only_mutate is their modules): named mutants make its
            # clean run take the covering tests in set order, which differs from process to process.
            wall_s = run_mutmut(command, root, args.max_children, config, [] if scopes == known_scopes else globs)
            write_record(root, record.finishing_last_piece(wall_s))
        cicd = export_cicd_stats(command, root)
        every = read_statuses(root)
        every_count = counts_from_statuses(every.values())
        if counts_from_cicd(cicd, every_count.not_checked) != every_count:
            raise NoScore(f"mutants/{CICD_STATS} {cicd} disagrees with the per-file results {every_count}")
        statuses = {name: status for name, status in every.items() if any(s.holds(name) for s in scopes)}
        rows = scope_rows(scopes, statuses)
        survivors = show_survivors(
            command, root, sorted((n for n, s in statuses.items() if s == "survived"), key=order)
        )
        in_reach = [e for e in accepted if any(fnmatch.fnmatchcase(name, e.mutant) for name in statuses)]
        matched, unaccepted, unused = triage(survivors, in_reach)
        print_report(counts_from_statuses(statuses.values()), statuses, matched, unaccepted, unused, wall_s)
        outside = len(every) - len(statuses)
        if outside:
            print(f"\n{outside} mutant(s) outside the chosen scopes were not run")
        below = print_scopes(rows)
    except NoScore as exc:
        print(f"mutmut_score: NO SCORE: {exc}", file=sys.stderr)
        return EXIT_NO_SCORE
    problems = []
    if below:
        problems.append(f"scope(s) below their floor: {', '.join(below)}")
    if unaccepted:
        problems.append(
            f"{len(unaccepted)} survivor(s) not on {accepted_path.name}: add a test that kills each, or accept it "
            "there with the reason it is harmless"
        )
    if problems:
        print("\nmutmut_score: " + "; ".join(problems))
        return EXIT_UNACCEPTED
    print(f"\nmutmut_score: OK, every scope reached its floor and every survivor is on {accepted_path.name}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

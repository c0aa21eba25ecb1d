"""``python -m mutations.mutmut_score``: an exploratory mutmut run with a real score and a verdict.

mutmut's own exit code says nothing about survivors (``mutmut run`` exits 0 with any number of
them), so this script:

1. removes ``mutants/`` (results, and data files under ``source_paths``, are otherwise reused
   from the last run and can be stale);
2. runs ``mutmut run`` with the ``[tool.mutmut]`` config of pyproject.toml (``--max-children`` is
   passed through);
3. runs ``mutmut export-cicd-stats`` and reads ``mutants/mutmut-cicd-stats.json``, plus the per-file
   ``mutants/**/*.py.meta`` results (the CI/CD JSON leaves out "caught by type check" and "not
   checked", and lists no mutant names);
4. prints every status count and the score, lists the survivors with their diffs
   (``mutmut show``), and checks them against ``mutations/mutmut-accepted-survivors.json``.

Exit codes: 0 = every survivor is on the accepted list; 1 = survivors that are not (each printed
with its diff); 2 = no score: mutmut is missing, failed, stopped early, or left mutants without a
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
import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_UNACCEPTED, EXIT_NO_SCORE = 0, 1, 2

MUTANTS_DIR = "mutants"
CICD_STATS = "mutmut-cicd-stats.json"
ACCEPTED_PATH = Path("mutations") / "mutmut-accepted-survivors.json"
INSTALL_HINT = "install the 'mutation' extra: pip install -e '.[test,mutation]' (or run: tox -e mutmut)"
MIN_REASON_CHARS = 30
INTERRUPT_GRACE_S = 30.0

# mutmut 3.8.1 ``mutmut.stats.status_by_exit_code`` (the pinned version), mirrored so the per-file
# results can be read without importing mutmut. Any other exit code is "suspicious".
STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    2: "check was interrupted by user",
    None: "not checked",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "caught by type check",
    -11: "segfault",
    -9: "segfault",
}

# The fields of mutmut-cicd-stats.json and the status each counts.
CICD_FIELDS: dict[str, str] = {
    "killed": "killed",
    "survived": "survived",
    "no_tests": "no tests",
    "skipped": "skipped",
    "suspicious": "suspicious",
    "timeout": "timeout",
    "check_was_interrupted_by_user": "check was interrupted by user",
    "segfault": "segfault",
}

_MUTANT_NAME = re.compile(r"^(?P<module>.+)\.x(?:ǁ(?P<cls>[^ǁ]+)ǁ|_)(?P<func>.+)__mutmut_(?P<n>\d+)$")
_POSITIONAL = re.compile(r"__mutmut_\d+$")


class NoScore(Exception):
    """mutmut produced no results a score could be computed from."""


# ------------------------------------------------------------------ counts and score (pure)


@dataclass(frozen=True)
class Counts:
    killed: int = 0
    survived: int = 0
    no_tests: int = 0
    timeout: int = 0
    caught_by_type_check: int = 0
    skipped: int = 0
    suspicious: int = 0
    segfault: int = 0
    interrupted: int = 0
    not_checked: int = 0

    @property
    def total(self) -> int:
        return (
            self.killed
            + self.survived
            + self.no_tests
            + self.timeout
            + self.caught_by_type_check
            + self.skipped
            + self.suspicious
            + self.segfault
            + self.interrupted
            + self.not_checked
        )

    @property
    def detected(self) -> int:
        """Mutants the tests (or the type checker) noticed; a timeout is a hang the suite would show."""
        return self.killed + self.timeout + self.caught_by_type_check

    @property
    def without_verdict(self) -> int:
        """Mutants with no trustworthy outcome: never run, interrupted, crashed or unclassifiable."""
        return self.not_checked + self.interrupted + self.segfault + self.suspicious

    def rows(self) -> list[tuple[str, int]]:
        return [
            ("killed", self.killed),
            ("timeout", self.timeout),
            ("caught by type check", self.caught_by_type_check),
            ("survived", self.survived),
            ("no tests", self.no_tests),
            ("skipped", self.skipped),
            ("suspicious", self.suspicious),
            ("segfault", self.segfault),
            ("interrupted", self.interrupted),
            ("not checked", self.not_checked),
            ("total", self.total),
        ]


def counts_from_statuses(statuses: Iterable[str]) -> Counts:
    """Count per-mutant statuses (the values of :data:`STATUS_BY_EXIT_CODE`)."""
    field_by_status = {
        "killed": "killed",
        "survived": "survived",
        "no tests": "no_tests",
        "timeout": "timeout",
        "caught by type check": "caught_by_type_check",
        "skipped": "skipped",
        "suspicious": "suspicious",
        "segfault": "segfault",
        "check was interrupted by user": "interrupted",
        "not checked": "not_checked",
    }
    tally = dict.fromkeys(field_by_status.values(), 0)
    for status in statuses:
        tally[field_by_status.get(status, "suspicious")] += 1
    return Counts(**tally)


def counts_from_cicd(stats: Mapping[str, Any], not_checked: int = 0) -> Counts:
    """Counts from a ``mutmut-cicd-stats.json`` dict.

    That file's ``total`` includes mutants it has no field for (caught by type check, not checked);
    ``not_checked`` comes from the per-file results and the rest of the gap is type-caught.
    """
    values: dict[str, int] = {}
    for key in (*CICD_FIELDS, "total"):
        value = stats.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise NoScore(f"{CICD_STATS}: {key!r} is {value!r}, not a count")
        values[key] = value
    listed = sum(values[key] for key in CICD_FIELDS)
    implicit = values["total"] - listed
    if implicit < 0 or not_checked < 0 or not_checked > implicit:
        raise NoScore(
            f"{CICD_STATS}: total {values['total']} does not add up (listed {listed}, not checked {not_checked})"
        )
    return Counts(
        killed=values["killed"],
        survived=values["survived"],
        no_tests=values["no_tests"],
        timeout=values["timeout"],
        caught_by_type_check=implicit - not_checked,
        skipped=values["skipped"],
        suspicious=values["suspicious"],
        segfault=values["segfault"],
        interrupted=values["check_was_interrupted_by_user"],
        not_checked=not_checked,
    )


def mutation_score(counts: Counts) -> float | None:
    """``detected / (total - skipped)``: survivors and "no tests" both count against it.

    None when there is nothing to score, or when some mutants have no verdict (the run is not
    complete, so no number may be reported for it).
    """
    scored = counts.total - counts.skipped
    if scored <= 0 or counts.without_verdict:
        return None
    return counts.detected / scored


def covered_score(counts: Counts) -> float | None:
    """The same, among mutants that had at least one covering test (no-tests left out)."""
    scored = counts.total - counts.skipped - counts.no_tests
    if scored <= 0 or counts.without_verdict:
        return None
    return counts.detected / scored


# ------------------------------------------------------------------ survivors and the accepted list


@dataclass(frozen=True)
class Survivor:
    name: str
    removed: str
    added: str
    diff: str

    @property
    def function(self) -> str:
        return function_of(self.name)


@dataclass(frozen=True)
class Accepted:
    mutant: str
    reason: str
    removed: str | None = None
    added: str | None = None

    def matches(self, survivor: Survivor) -> bool:
        if not fnmatch.fnmatchcase(survivor.name, self.mutant):
            return False
        if self.removed is not None and normalize_lines(self.removed) != survivor.removed:
            return False
        return self.added is None or normalize_lines(self.added) == survivor.added


def function_of(mutant_name: str) -> str:
    """``fakels.journal.xǁJournalǁappend__mutmut_3`` -> ``fakels.journal.Journal.append``."""
    match = _MUTANT_NAME.match(mutant_name)
    if match is None:
        return mutant_name
    owner = f"{match['cls']}." if match["cls"] else ""
    return f"{match['module']}.{owner}{match['func']}"


def _order(mutant_name: str) -> tuple[str, int]:
    """Function first, then mutant number (so _2 sorts before _10)."""
    match = _MUTANT_NAME.match(mutant_name)
    return (mutant_name, 0) if match is None else (function_of(mutant_name), int(match["n"]))


def normalize_lines(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and added source lines of a unified diff, whitespace-normalized."""
    removed: list[str] = []
    added: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return normalize_lines("\n".join(removed)), normalize_lines("\n".join(added))


def parse_accepted(data: Any) -> list[Accepted]:
    """Validate the accepted-survivor list; raises ValueError naming the bad entry."""
    if not isinstance(data, list):
        raise ValueError("the accepted-survivor list must be a JSON list of objects")
    entries: list[Accepted] = []
    for index, item in enumerate(data):
        where = f"entry {index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object")
        unknown = set(item) - {"mutant", "reason", "removed", "added"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        mutant, reason = item.get("mutant"), item.get("reason")
        removed, added = item.get("removed"), item.get("added")
        if not isinstance(mutant, str) or not mutant.strip():
            raise ValueError(f"{where}: 'mutant' must be a mutant name or glob")
        if not isinstance(reason, str) or len(reason.strip()) < MIN_REASON_CHARS:
            raise ValueError(f"{where} ({mutant}): 'reason' must say why it is harmless ({MIN_REASON_CHARS}+ chars)")
        for key, value in (("removed", removed), ("added", added)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{where} ({mutant}): {key!r} must be the changed source line(s)")
        if _POSITIONAL.search(mutant) and (removed is None or added is None):
            raise ValueError(
                f"{where} ({mutant}): a numbered mutant name is positional and renumbers on any edit; "
                "use a function glob (..__mutmut_*) with 'removed' and 'added', or pin both lines"
            )
        entries.append(Accepted(mutant=mutant, reason=reason.strip(), removed=removed, added=added))
    return entries


def load_accepted(path: Path) -> list[Accepted]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError) as exc:
        raise NoScore(f"cannot read {path}: {exc}") from None
    try:
        return parse_accepted(data)
    except ValueError as exc:
        raise NoScore(f"{path}: {exc}") from None


def triage(
    survivors: Sequence[Survivor], accepted: Sequence[Accepted]
) -> tuple[list[tuple[Survivor, Accepted]], list[Survivor], list[Accepted]]:
    """Split survivors into accepted (with the entry) and not accepted; also the unused entries."""
    matched: list[tuple[Survivor, Accepted]] = []
    unaccepted: list[Survivor] = []
    used: set[int] = set()
    for survivor in survivors:
        entry = next((e for e in accepted if e.matches(survivor)), None)
        if entry is None:
            unaccepted.append(survivor)
        else:
            matched.append((survivor, entry))
            used.add(id(entry))
    unused = [e for e in accepted if id(e) not in used]
    return matched, unaccepted, unused


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


def run_mutmut(command: list[str], root: Path, max_children: int | None, config: Mapping[str, Any]) -> float:
    args = [*command, "run"]
    if max_children is not None:
        args += ["--max-children", str(max_children)]
    print(f"$ {' '.join(args)}", flush=True)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(args, cwd=root)
    except OSError as exc:
        raise NoScore(f"cannot start mutmut: {exc}") from None
    try:
        returncode = proc.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached mutmut too (same process group): let it stop its workers, then make sure it is gone.
        try:
            proc.wait(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise NoScore("interrupted: mutmut did not finish, so there is no score") from None
    elapsed = time.monotonic() - started
    if returncode != 0:
        raise NoScore(
            f"'mutmut run' exited {returncode} after {elapsed:.0f}s: it stopped before or while testing mutants "
            "(stats, clean or forced-fail run; see its output above). A red or flaky selected test is the usual "
            f"cause; to see it: {reproduce_hint(config)}"
        )
    return elapsed


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
    print("mutmut results (from mutants/*.meta, checked against mutmut-cicd-stats.json)")
    for label, value in counts.rows():
        print(f"  {label:<22}{value:>6}")
    print(
        f"score: {_percent(mutation_score(counts))} = (killed + timeout + type-caught) {counts.detected} / "
        f"(total - skipped) {counts.total - counts.skipped}"
    )
    print(f"score among mutants with covering tests: {_percent(covered_score(counts))}")
    if wall_s is not None:
        print(f"wall time of 'mutmut run': {wall_s:.0f}s")
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
        print(f"\naccepted entries that matched no survivor ({len(unused)}; killed now, renumbered lines, or not run):")
        for entry in unused:
            print(f"  {entry.mutant}: {entry.removed!r} -> {entry.added!r}")


# ------------------------------------------------------------------ main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mutations.mutmut_score",
        description="Run mutmut from a fresh mutants/, print the real score and check survivors against the "
        "accepted list. Exit 0: all survivors accepted; 1: survivors not accepted; 2: no score.",
    )
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: the current folder)")
    parser.add_argument("--max-children", type=int, help="passed to 'mutmut run' (default: mutmut's, the CPU count)")
    parser.add_argument(
        "--accepted", type=Path, help=f"accepted-survivor list (default: <root>/{ACCEPTED_PATH.as_posix()})"
    )
    parser.add_argument(
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
        accepted = load_accepted(accepted_path)
        command = mutmut_command()
        config = read_config(root)
        wall_s: float | None = None
        if args.report_only:
            if not (root / MUTANTS_DIR).is_dir():
                raise NoScore(f"--report-only: there is no {root / MUTANTS_DIR} from an earlier run")
            print("--report-only: mutmut was NOT run; these are the results an earlier run left in mutants/")
        else:
            fresh_mutants_dir(root)
            wall_s = run_mutmut(command, root, args.max_children, config)
        cicd = export_cicd_stats(command, root)
        statuses = read_statuses(root)
        counts = counts_from_statuses(statuses.values())
        if counts.total == 0:
            raise NoScore("mutmut left no mutants in mutants/ (nothing under source_paths/only_mutate to mutate?)")
        if counts_from_cicd(cicd, counts.not_checked) != counts:
            raise NoScore(f"mutants/{CICD_STATS} {cicd} disagrees with the per-file results {counts}")
        survivors = show_survivors(
            command, root, sorted((n for n, s in statuses.items() if s == "survived"), key=_order)
        )
        matched, unaccepted, unused = triage(survivors, accepted)
        print_report(counts, statuses, matched, unaccepted, unused, wall_s)
        if counts.without_verdict:
            raise NoScore(
                f"{counts.without_verdict} mutant(s) have no verdict (not checked {counts.not_checked}, interrupted "
                f"{counts.interrupted}, segfault {counts.segfault}, suspicious {counts.suspicious}): the run is "
                "incomplete or unreliable, so there is no score"
            )
    except NoScore as exc:
        print(f"mutmut_score: NO SCORE: {exc}", file=sys.stderr)
        return EXIT_NO_SCORE
    if unaccepted:
        print(
            f"\nmutmut_score: {len(unaccepted)} survivor(s) not on {accepted_path.name}: add a test that kills "
            "each, or accept it there with the reason it is harmless"
        )
        return EXIT_UNACCEPTED
    print(f"\nmutmut_score: OK, every survivor is on {accepted_path.name}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

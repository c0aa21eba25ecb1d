"""Resuming an interrupted mutmut run: what it was started on, and what is left of it.

A run over every scope takes longer than a machine may stay up. mutmut keeps each mutant's verdict
in ``mutants/**/*.py.meta`` as soon as it has one, and a later ``mutmut run`` without mutant names
tests only the mutants that have none. That is only sound on the tree the run started on: mutmut
resets the verdicts of a function whose source changed, but not those a changed *test* decided. So
a fresh run records, in ``mutants/cascade-run.json``, a hash of every file mutmut copies into
``mutants/`` (pyproject.toml, tests/, the source paths, ``also_copy``) and the mutant globs it was
started with; ``--resume`` goes on only when both are unchanged, and says which files differ when
they are not. The one change allowed is a new test module that mutmut's test selection collects
(the kit's selection names ``tests/mutmut_added/`` for this): it can only add kills, so the killed
verdicts stand and the survivors are tested again. A module the selection does not collect is
refused, since mutmut would never run it, and changing the selection resets every result.

The accepted-survivor list is left out of the hash: it is read when the report is made, never by
mutmut, so it may change between the pieces of one run. So are checkpoints of the run
(``*.mutmut-checkpoint.gz``, see :mod:`mutations.explore.checkpoint`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mutations.explore.accepted import ACCEPTED_PATH
from mutations.explore.results import MUTANTS_DIR, STATUS_BY_EXIT_CODE, NoScore, load_document

RUN_RECORD = "cascade-run.json"
# A checkpoint of the run (see mutations.explore.checkpoint) may sit in the tree; it is never part of it.
CHECKPOINT_SUFFIX = ".mutmut-checkpoint.gz"
_RECORD_VERSION = 1
_SKIPPED_DIRS = frozenset({"__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", MUTANTS_DIR})
# Statuses that are no verdict on the mutant: the run was cut while testing it (SIGKILL reads as
# "segfault"), or its result is not one mutmut knows. A resumed run tests them again.
RETESTED = frozenset({"not checked", "check was interrupted by user", "segfault", "suspicious"})
_SHOWN_CHANGES = 10


def hashed_files(root: Path, config: Mapping[str, Any]) -> dict[str, str]:
    """sha256 of every file mutmut copies into ``mutants/``, by path relative to ``root``."""
    tops = ["pyproject.toml", "tests", *config.get("source_paths", []), *config.get("also_copy", [])]
    found: dict[str, str] = {}
    for top in dict.fromkeys(str(t).rstrip("/") for t in tops):
        for path in _walk(root / top):
            relative = path.relative_to(root).as_posix()
            if relative != ACCEPTED_PATH.as_posix() and not relative.endswith(CHECKPOINT_SUFFIX):
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(found.items()))


def _walk(path: Path) -> Iterable[Path]:
    if path.is_file():
        yield path
        return
    for directory, subdirs, files in os.walk(path):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith(".pyc"):
                yield Path(directory) / name


@dataclass(frozen=True)
class Piece:
    """One ``mutmut run`` of a run: when it started, and how long mutmut ran (None: it was cut off)."""

    started: str
    wall_s: float | None


@dataclass(frozen=True)
class RunRecord:
    globs: tuple[str, ...]
    files: dict[str, str]
    pieces: tuple[Piece, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": _RECORD_VERSION,
            "globs": list(self.globs),
            "pieces": [{"started": p.started, "wall_s": p.wall_s} for p in self.pieces],
            "files": self.files,
        }

    def with_piece(self, piece: Piece, files: dict[str, str]) -> RunRecord:
        """The next piece, on the tree with ``files`` (the same, or with test modules added)."""
        return RunRecord(self.globs, files, (*self.pieces, piece))

    def finishing_last_piece(self, wall_s: float) -> RunRecord:
        last = self.pieces[-1]
        return RunRecord(self.globs, self.files, (*self.pieces[:-1], Piece(last.started, wall_s)))


def parse_record(data: Any) -> RunRecord:
    if not isinstance(data, dict) or data.get("version") != _RECORD_VERSION:
        raise ValueError(f"not a run record of version {_RECORD_VERSION}")
    globs, files, pieces = data.get("globs"), data.get("files"), data.get("pieces")
    if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
        raise ValueError("'globs' must be a list of mutant globs")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ValueError("'files' must map paths to hashes")
    if not isinstance(pieces, list) or not all(
        isinstance(p, dict) and isinstance(p.get("started"), str) and isinstance(p.get("wall_s"), int | float | None)
        for p in pieces
    ):
        raise ValueError("'pieces' must be a list of {started, wall_s}")
    return RunRecord(tuple(globs), dict(files), tuple(Piece(p["started"], p["wall_s"]) for p in pieces))


def record_path(root: Path) -> Path:
    return root / MUTANTS_DIR / RUN_RECORD


def read_record(root: Path) -> RunRecord:
    return load_document(record_path(root), "the run record", parse_record)


def write_record(root: Path, record: RunRecord) -> None:
    path = record_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record.to_json(), indent=1) + "\n", encoding="utf-8")
    partial.replace(path)  # a run cut off while writing keeps the previous record whole


def new_piece() -> Piece:
    return Piece(datetime.now(UTC).isoformat(timespec="seconds"), None)


def check_same_run(
    record: RunRecord, globs: Sequence[str], files: Mapping[str, str], selection: Sequence[str]
) -> list[str]:
    """The test modules added since ``record`` started; NoScore unless it was started with these globs on
    a tree with these files, give or take added test modules that mutmut's test ``selection``
    (``pytest_add_cli_args_test_selection``) collects.

    An added test module can only add kills: the verdict of a killed mutant still holds (the tests that
    killed it are unchanged), and the survivors and untested mutants are tested again with it. mutmut
    only ever runs the tests its selection collects, and resets every result when the selection
    changes, so a module outside the selection would be a test no mutant meets."""
    if list(record.globs) != list(globs):
        raise NoScore(
            "--resume: mutants/ holds a run of other scopes (its globs: "
            f"{' '.join(record.globs)}); resume it with the same --scope options, or run without --resume"
        )
    added = sorted(files.keys() - record.files.keys())
    added_tests = [p for p in added if _is_test_module(p)]
    uncollected = [p for p in added_tests if not _collected(p, selection)]
    if uncollected:
        folders = [entry for entry in selection if not _selected_path(entry).endswith(".py")]
        where = (
            f"put it under a folder the selection names ({', '.join(folders)})"
            if folders
            else "the selection names no folder to put it in"
        )
        them = "it" if len(uncollected) == 1 else "them"
        raise NoScore(
            f"--resume: {', '.join(uncollected)} added since the run in mutants/ started, but mutmut's test "
            f"selection (pytest_add_cli_args_test_selection) does not collect {them}, so no mutant would meet "
            f"{them}: {where}, or run without --resume to start afresh (mutmut resets every result when the "
            "selection changes)"
        )
    changed = sorted(
        {p for p in record.files.keys() & files.keys() if record.files[p] != files[p]}
        | (record.files.keys() - files.keys())
        | (set(added) - set(added_tests))
    )
    if changed:
        shown = ", ".join(changed[:_SHOWN_CHANGES]) + (
            f" and {len(changed) - _SHOWN_CHANGES} more" if len(changed) > _SHOWN_CHANGES else ""
        )
        raise NoScore(
            f"--resume: {len(changed)} file(s) changed since the run in mutants/ started ({shown}); its verdicts "
            "may not hold for this tree, so run without --resume to start afresh (only new test modules, "
            "tests/**/test_*.py, that mutmut's test selection collects may be added between the pieces of a run)"
        )
    return added_tests


def _is_test_module(path: str) -> bool:
    name = path.rpartition("/")[2]
    return path.startswith("tests/") and name.startswith("test_") and name.endswith(".py")


def _collected(path: str, selection: Sequence[str]) -> bool:
    """Whether pytest, given mutmut's test selection, collects the test module at ``path``. With no
    selection, mutmut gives pytest no paths and it collects every test module."""
    if not selection:
        return True
    for entry in selection:
        selected = _selected_path(entry).rstrip("/")
        if path == selected or path.startswith(f"{selected}/"):
            return True
    return False


def _selected_path(entry: str) -> str:
    """The file or folder a selection entry names (``tests/test_x.py::test_y`` names ``tests/test_x.py``)."""
    return entry.partition("::")[0]


def retest_beaten(root: Path, chosen: Callable[[str], bool]) -> int:
    """Clear the verdicts "survived" and "no tests" of the ``chosen`` mutants, for new tests to have their go."""
    return _clear(root, lambda name, status: status in {"survived", "no tests"} and chosen(name))


def retest_unfinished(root: Path) -> int:
    """Clear the results that are no verdict (see ``RETESTED``) so mutmut tests those mutants again;
    a results file cut off mid-write is removed (mutmut makes it again, its mutants untested).
    Returns how many mutants will be tested again."""
    return _clear(root, lambda name, status: status in RETESTED)


def _clear(root: Path, clear: Callable[[str, str], bool]) -> int:
    """Set to null the results ``clear(name, status)`` picks, so mutmut tests those mutants again; remove a
    results file that is not whole. Returns how many results were cleared."""
    cleared = 0
    for meta in sorted((root / MUTANTS_DIR).rglob("*.py.meta")):
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            results = data["exit_code_by_key"]
            if not isinstance(results, dict):
                raise TypeError("exit_code_by_key is not an object")
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
            meta.unlink()
            continue
        picked = [name for name, code in results.items() if clear(name, STATUS_BY_EXIT_CODE.get(code, "suspicious"))]
        for name in picked:
            results[name] = None
        if picked:
            meta.write_text(json.dumps(data), encoding="utf-8")
        cleared += len(picked)
    return cleared


def function_globs(names: Iterable[str]) -> list[str]:
    """One mutmut glob per function of these mutants (``mod.x_f__mutmut_3`` -> ``mod.x_f__mutmut_*``)."""
    return sorted({name.rpartition("__mutmut_")[0] + "__mutmut_*" for name in names})


def describe(record: RunRecord) -> str:
    done = [p.wall_s for p in record.pieces if p.wall_s is not None]
    cut = len(record.pieces) - len(done)
    return (
        f"run started {record.pieces[0].started if record.pieces else 'never'}, in {len(record.pieces)} piece(s)"
        f" ({cut} cut off), mutmut ran {sum(done):.0f}s in the pieces that finished"
    )


def left_to_run(root: Path, modules: Iterable[str], statuses: Mapping[str, str]) -> list[str]:
    """The mutmut globs a resumed run still has to test: each function with a mutant that has no
    verdict, and each whole module that has no results file yet (the run was cut before mutmut
    made it)."""
    mutants = root / MUTANTS_DIR
    missing = [
        f"{module}.*"
        for module in modules
        if not any((mutants / f"{module.replace('.', '/')}{tail}.meta").is_file() for tail in (".py", "/__init__.py"))
    ]
    return missing + function_globs(name for name, status in statuses.items() if status == "not checked")

"""Carrying a mutmut run to another checkout: the verdicts it reached, in one file.

A session, a CI job or a machine may end before a run over every scope does, and take ``mutants/``
with it. ``--save-checkpoint FILE`` writes the run record and every whole result file of ``mutants/``
into one gzip-compressed JSON document (about 200 KB for 25,000 mutants). ``--resume-from FILE``, on
a checkout without ``mutants/``, puts them back and goes on as ``--resume`` does, so only on the tree
and the scopes the run started with. mutmut then makes the mutant sources again and keeps each
result whose function is unchanged (``hash_by_function_name`` in the result file): the restored
verdicts stand and only the mutants without one are tested.

A checkpoint is never part of the tree it records: files named ``*.mutmut-checkpoint.gz`` are left
out of the run's hash, so one may be committed beside the code between pieces.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from mutations.explore.results import MUTANTS_DIR, STATUS_BY_EXIT_CODE, NoScore
from mutations.explore.resume import CHECKPOINT_SUFFIX, RETESTED, RunRecord, parse_record, read_record, write_record

_FORMAT = "cascade-mutmut-checkpoint"
_VERSION = 1


def save_checkpoint(root: Path, path: Path) -> tuple[int, int]:
    """Write the run in ``root/mutants`` to ``path``; returns (mutants with a verdict, mutants without).

    A result file torn by a write that was cut off is left out: mutmut makes it again and tests its mutants.
    """
    if not path.name.endswith(CHECKPOINT_SUFFIX):
        raise NoScore(f"--save-checkpoint: name the file *{CHECKPOINT_SUFFIX} (it is then left out of the run's hash)")
    record = read_record(root)
    results: dict[str, Any] = {}
    decided = open_ = 0
    mutants = root / MUTANTS_DIR
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = _whole_result_file(meta)
        if data is None:
            continue
        results[meta.relative_to(mutants).as_posix()] = data
        for code in data["exit_code_by_key"].values():
            if STATUS_BY_EXIT_CODE.get(code, "suspicious") in RETESTED:
                open_ += 1
            else:
                decided += 1
    document = {"format": _FORMAT, "version": _VERSION, "record": record.to_json(), "results": results}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(gzip.compress(json.dumps(document, sort_keys=True).encode("utf-8"), mtime=0))
    partial.replace(path)
    return decided, open_


def restore_checkpoint(root: Path, path: Path) -> RunRecord:
    """Put the run saved in ``path`` into ``root/mutants``, which must not exist yet."""
    mutants = root / MUTANTS_DIR
    if mutants.exists():
        raise NoScore(
            f"--resume-from: {mutants} exists; go on with the run there with --resume, or remove it to restore {path}"
        )
    try:
        document = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NoScore(f"--resume-from: cannot read the checkpoint {path}: {exc}") from None
    try:
        record, results = _parse_checkpoint(document)
    except ValueError as exc:
        raise NoScore(f"--resume-from: {path}: {exc}") from None
    for relative, data in results.items():
        target = mutants / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data), encoding="utf-8")
    write_record(root, record)
    return record


def _whole_result_file(meta: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("exit_code_by_key"), dict):
        return None
    return data


def _parse_checkpoint(document: Any) -> tuple[RunRecord, Mapping[str, Any]]:
    if not isinstance(document, dict) or document.get("format") != _FORMAT:
        raise ValueError(f"not a checkpoint written by --save-checkpoint (no 'format': {_FORMAT!r})")
    if document.get("version") != _VERSION:
        raise ValueError(f"checkpoint version {document.get('version')!r}; this kit reads version {_VERSION}")
    record = parse_record(document.get("record"))
    results = document.get("results")
    if not isinstance(results, dict):
        raise ValueError("'results' must map result files to their contents")
    for relative, data in results.items():
        parts = PurePosixPath(relative).parts
        if not relative.endswith(".py.meta") or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise ValueError(f"{relative!r} is not a result file inside mutants/")
        if not isinstance(data, dict) or not isinstance(data.get("exit_code_by_key"), dict):
            raise ValueError(f"{relative}: no 'exit_code_by_key' object")
    return record, results

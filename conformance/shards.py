"""Shards across CI machines: ``run --shard I/N`` judges a deterministic, balanced share of the selected
invariants, and ``merge`` joins the shards' report folders into the report one machine would have written.

A shard's share: the selected invariants in the catalogue's order, every N-th one from the I-th (the
families' long and short invariants spread over the shards alike). Besides its reports, a shard writes
``shard.json``: what it was (I/N, the whole selection), how the run was made, and every verdict with its
counterexamples and evidence, which a merge needs to write report.md and the case files again.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SHARD_FILE = "shard.json"
_FORMAT = "cascade-conformance-shard"


@dataclass(frozen=True)
class Shard:
    index: int  # from 1
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def share(self, invariants: Sequence[str]) -> list[str]:
        """This shard's invariants among ``invariants`` (in the catalogue's order)."""
        return [inv for position, inv in enumerate(invariants) if position % self.count == self.index - 1]


def parse_shard(text: str) -> Shard:
    """``--shard``'s value, ``I/N`` with 1 <= I <= N (argparse type)."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N, e.g. 2/4; got {text!r}")
    return Shard(int(match[1]), int(match[2]))


def write_shard_file(
    report_dir: Path,
    shard: Shard,
    selection: Sequence[str],
    run: dict[str, Any],
    verdicts: Sequence[dict[str, Any]],
) -> Path:
    """``shard.json`` in ``report_dir``: ``run`` holds the target, its words and the run's settings;
    ``verdicts`` each verdict as :func:`conformance.result_json.result_to_json` gives it."""
    document = {
        "format": _FORMAT,
        "shard": asdict(shard),
        "selection": list(selection),
        "run": run,
        "verdicts": list(verdicts),
    }
    path = report_dir / SHARD_FILE
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class ShardReport:
    folder: Path
    shard: Shard
    selection: list[str]
    run: dict[str, Any]
    verdicts: list[dict[str, Any]]


class MergeError(ValueError):
    """Shards that cannot be merged: one line, naming the folder and what is wrong."""


def read_shards(folders: Sequence[Path]) -> list[ShardReport]:
    """Every shard's ``shard.json``, checked: the same run (target, settings, selection, N) and each of the N
    shards once. Raises :class:`MergeError` naming a missing shard, a shard given twice, or another run's."""
    shards = [_read(folder) for folder in folders]
    if not shards:
        raise MergeError("no shard report folders given")
    first = shards[0]
    for other in shards[1:]:
        for what, mine, theirs in (
            ("shard count", first.shard.count, other.shard.count),
            ("selection", first.selection, other.selection),
            ("target", first.run.get("target_words"), other.run.get("target_words")),
            ("settings", _settings(first.run), _settings(other.run)),
        ):
            if mine != theirs:
                raise MergeError(f"{other.folder} is another run's shard: its {what} differs from {first.folder}'s")
    seen: dict[int, Path] = {}
    for report in shards:
        if report.shard.index in seen:
            raise MergeError(f"shard {report.shard} is given twice: {seen[report.shard.index]} and {report.folder}")
        seen[report.shard.index] = report.folder
    missing = [f"{index}/{first.shard.count}" for index in range(1, first.shard.count + 1) if index not in seen]
    if missing:
        raise MergeError(f"shard {', '.join(missing)} is missing: give every one of the {first.shard.count} folders")
    return sorted(shards, key=lambda report: report.shard.index)


def _settings(run: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in run.items() if key not in ("started", "command", "interrupted")}


def _read(folder: Path) -> ShardReport:
    path = folder / SHARD_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MergeError(f"{folder}: no {SHARD_FILE}; is it the report folder of a run --shard I/N?") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MergeError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != _FORMAT:
        raise MergeError(f'{path}: not a shard file (expected "format": "{_FORMAT}")')
    shard = document["shard"]
    return ShardReport(
        folder, Shard(shard["index"], shard["count"]), document["selection"], document["run"], document["verdicts"]
    )

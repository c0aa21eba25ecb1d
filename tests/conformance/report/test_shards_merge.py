"""``run --shard I/N`` and ``merge`` through the real command: the N shards judge every selected invariant once,
and merged they give the report one run gives (results.json, junit.xml, report.md, case files); a merge says
which shard is missing, given twice, or another run's."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE
from conformance.cli import main
from conformance.shards import Shard

BROKEN = "python:tests.support.broken_targets:forgets_fields"
ONLY = "WIRE-1,WIRE-2,WIRE-3,OFF-1,SO-1"  # a failure with its case, a pass, not-checkable verdicts


def _files(folder: Path) -> dict[str, str]:
    """Every report file, without what differs between any two runs: the folder, times, command, start."""
    seen = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "shard.json"):
        if {"hypothesis", "examples"} & set(path.relative_to(folder).parts):
            continue
        text = path.read_text(encoding="utf-8").replace(str(folder), "REPORT")
        text = re.sub(r'\| [0-9.]+ \|$|time="[0-9.]+"|"seconds": [0-9.]+', "T", text, flags=re.M)
        seen[str(path.relative_to(folder))] = re.sub(
            r'^- (Command|Started): .*$|"(command|started)": "[^"]*"', "", text, flags=re.M
        )
    return seen


def _differences(got: dict[str, str], want: dict[str, str]) -> str:
    """Each file that differs, as a unified diff (want, then got), so a failure shows the lines themselves."""
    shown = []
    for name in sorted(set(got) | set(want)):
        if got.get(name) != want.get(name):
            lines = difflib.unified_diff(
                want.get(name, "").splitlines(), got.get(name, "").splitlines(), "single run", "merged", lineterm=""
            )
            shown.append(f"{name}:\n" + "\n".join(lines))
    return "\n".join(shown)


def _shards(tmp_path: Path, count: int, capsys: pytest.CaptureFixture[str]) -> list[Path]:
    folders = []
    for index in range(1, count + 1):
        folder = tmp_path / f"shard-{index}"
        main(["run", "--target", BROKEN, "--only", ONLY, "--shard", f"{index}/{count}", "--report", str(folder)])
        folders.append(folder)
    capsys.readouterr()
    return folders


def test_four_shards_merged_give_the_report_one_run_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    single = tmp_path / "single"
    assert main(["run", "--target", BROKEN, "--only", ONLY, "--report", str(single)]) == 1
    shards = _shards(tmp_path, 4, capsys)
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, reversed(shards)), "--report", str(merged)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"merged 4 shards: {', '.join(map(str, shards))}\n")
    assert not (differences := _differences(_files(merged), _files(single))), differences
    assert "cases/wire-1.json" in _files(merged)


def test_every_selected_invariant_is_in_exactly_one_shard() -> None:
    ids = list(CATALOGUE)
    for count in (1, 2, 3, 4, 7, len(ids) + 1):
        shares = [Shard(index, count).share(ids) for index in range(1, count + 1)]
        assert sorted(inv for share in shares for inv in share) == sorted(ids)
        assert max(map(len, shares)) - min(map(len, shares)) <= 1, "balanced"


def test_a_merge_names_a_missing_shard_a_repeated_one_and_another_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = _shards(tmp_path, 3, capsys)
    other = tmp_path / "other"
    main(["run", "--target", BROKEN, "--only", "WIRE-1,WIRE-2", "--shard", "2/3", "--report", str(other)])
    capsys.readouterr()
    for folders, message in (
        ([one, three], "shard 2/3 is missing: give every one of the 3 folders"),
        ([one, two, two, three], f"shard 2/3 is given twice: {two} and {two}"),
        ([one, other, three], f"{other} is another run's shard: its selection differs from {one}'s"),
        ([one, tmp_path], f"{tmp_path}: no shard.json; is it the report folder of a run --shard I/N?"),
    ):
        assert main(["merge", *map(str, folders), "--report", str(tmp_path / "m")]) == 2
        assert capsys.readouterr().err == f"cascade-conformance: {message}\n"


@pytest.mark.parametrize("text", ["0/4", "5/4", "1", "a/b", "1/0"])
def test_a_shard_is_i_of_n(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--shard", text])
    assert f"argument --shard: expected I/N with 1 <= I <= N, e.g. 2/4; got {text!r}" in capsys.readouterr().err

"""``python -m mutations.mutmut_score --resume``: a run cut off (the machine went down) goes on where
it stopped, on the same tree and scopes only, through the real script with a stand-in ``mutmut``
(tests/support/mutmut_standin.py) that keeps mutmut's on-disk results and incremental contract."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import mutations.mutmut_score as mutmut_score
from mutations._mutmut_resume import RUN_RECORD, function_globs, hashed_files
from mutations.mutmut_score import EXIT_NO_SCORE, EXIT_OK, EXIT_UNACCEPTED, main
from tests.support import mutmut_standin

DECODER = {f"fakels.decoder.x_decode__mutmut_{n}": 1 for n in range(1, 4)} | {
    "fakels.decoder.x_frame__mutmut_1": 1,
    "fakels.decoder.x_frame__mutmut_2": 1,
}
USAGE = {"engine.usage.x_offset__mutmut_1": 1, "engine.usage.x_offset__mutmut_2": 1}
SCOPES = {
    "scopes": [
        {"name": "decoder", "about": "the decoder", "min_score": 80.0, "mutants": ["fakels.decoder.*"]},
        {"name": "usage", "about": "usage", "min_score": 90.0, "mutants": ["engine.usage.*"]},
    ]
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["fakels", "engine"]\nalso_copy = ["mutations/"]\n', encoding="utf-8"
    )
    for path, text in {
        "fakels/decoder.py": "def decode(): return 1\n",
        "engine/usage.py": "def offset(): return 2\n",
        "tests/test_decoder.py": "def test_decode(): pass\n",
        "mutations/mutmut-scopes.json": json.dumps(SCOPES),
        "mutations/mutmut-accepted-survivors.json": "[]",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    _plan(tmp_path, die_after=None)
    monkeypatch.setattr(mutmut_score, "mutmut_command", lambda: [sys.executable, mutmut_standin.__file__])
    return tmp_path


def _plan(root: Path, die_after: int | None, decoder: dict[str, int] = DECODER) -> None:
    plan = {"modules": {"fakels/decoder.py": decoder, "engine/usage.py": USAGE}, "die_after": die_after}
    (root / "mutmut-plan.json").write_text(json.dumps(plan), encoding="utf-8")


def _runs(root: Path) -> list[list[str]]:
    calls = [json.loads(line) for line in (root / "mutmut-calls.jsonl").read_text(encoding="utf-8").splitlines()]
    return [call for call in calls if call[0] == "run"]


def _results(root: Path, module_path: str) -> dict[str, Any]:
    data = json.loads((root / "mutants" / f"{module_path}.meta").read_text(encoding="utf-8"))
    results: dict[str, Any] = data["exit_code_by_key"]
    return results


def _score(root: Path, *args: str) -> int:
    return main(["--root", str(root), "--max-children", "2", *args])


def _cut_off_run(root: Path, after: int, *args: str, decoder: dict[str, int] = DECODER) -> None:
    """A run that mutmut's machine ends (SIGKILL) after ``after`` results; the next run goes on with the same
    outcomes for ``decoder``'s mutants."""
    _plan(root, die_after=after, decoder=decoder)
    assert _score(root, *args) == EXIT_NO_SCORE
    _plan(root, die_after=None, decoder=decoder)


SURVIVOR = {**DECODER, "fakels.decoder.x_frame__mutmut_2": 0}


def test_a_run_cut_off_goes_on_where_it_stopped_and_scores_the_whole(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _cut_off_run(root, after=2)
    assert "'mutmut run' was killed by signal 9 (SIGKILL) after " in capfd.readouterr().err
    assert list(_results(root, "fakels/decoder.py").values()) == [1, 1, None, None, None]

    assert _score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    # The two verdicts of the first piece stand: only the other five mutants are tested.
    assert "tested 5" in out
    assert "in 1 piece(s) (1 cut off)" in out
    assert re.search(r"^  killed +7$", out, re.MULTILINE)
    assert "score: 100.0%" in out
    assert _runs(root) == [
        ["run", "--max-children", "2", "fakels.decoder.*", "engine.usage.*"],
        ["run", "--max-children", "2"],
    ]
    record = json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))
    assert [piece["wall_s"] is None for piece in record["pieces"]] == [True, False]


def test_resuming_a_finished_run_runs_nothing_and_reports_it(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert _score(root) == EXIT_OK
    capfd.readouterr()
    assert _score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert "every mutant of the chosen scopes has a verdict; mutmut was not run again" in out
    assert "score: 100.0%" in out
    assert len(_runs(root)) == 1


def test_without_mutants_dir_resume_starts_a_fresh_run(root: Path) -> None:
    assert _score(root, "--resume") == EXIT_OK
    assert _runs(root) == [["run", "--max-children", "2", "fakels.decoder.*", "engine.usage.*"]]
    assert json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))["globs"] == [
        "fakels.decoder.*",
        "engine.usage.*",
    ]


@pytest.mark.parametrize(
    "edit",
    ["tests/test_decoder.py", "fakels/decoder.py", "pyproject.toml", "mutations/mutmut-scopes.json", "tests/new.py"],
)
def test_a_changed_tree_is_not_resumed(root: Path, edit: str, capsys: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, after=2)
    path = root / edit
    path.write_text(path.read_text(encoding="utf-8") + "\n" if path.exists() else "x = 1\n", encoding="utf-8")
    capsys.readouterr()
    assert _score(root, "--resume") == EXIT_NO_SCORE
    err = capsys.readouterr().err
    assert f"--resume: 1 file(s) changed since the run in mutants/ started ({edit})" in err
    assert "run without --resume to start afresh" in err
    assert len(_runs(root)) == 1


def test_the_accepted_list_may_change_between_pieces(root: Path) -> None:
    _cut_off_run(root, 2, decoder=SURVIVOR)
    accepted = [
        {
            "mutant": "fakels.decoder.x_frame__mutmut_*",
            "removed": "return x",
            "added": "return None",
            "reason": "the stand-in's survivor, accepted to show the list is read at report time",
        }
    ]
    (root / "mutations/mutmut-accepted-survivors.json").write_text(json.dumps(accepted), encoding="utf-8")
    assert _score(root, "--resume") == EXIT_OK


def test_a_survivor_found_by_a_resumed_run_is_triaged(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, 1, decoder=SURVIVOR)
    assert _score(root, "--resume") == EXIT_UNACCEPTED
    assert "SURVIVED  fakels.decoder.x_frame__mutmut_2" in capsys.readouterr().out


def test_other_scopes_are_not_resumed(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, 2, "--scope", "decoder")
    capsys.readouterr()
    assert _score(root, "--resume") == EXIT_NO_SCORE
    assert "mutants/ holds a run of other scopes (its globs: fakels.decoder.*)" in capsys.readouterr().err


def test_a_subset_resumes_by_naming_the_functions_left(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, 1, "--scope", "decoder")
    assert _score(root, "--resume", "--scope", "decoder") == EXIT_OK
    # x_decode has two mutants left and is named whole; mutmut tests a named function's every mutant.
    assert _runs(root)[-1] == [
        "run",
        "--max-children",
        "2",
        "fakels.decoder.x_decode__mutmut_*",
        "fakels.decoder.x_frame__mutmut_*",
    ]
    assert "tested 5" in capfd.readouterr().out


def test_a_module_without_results_yet_is_run_whole(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, 1, "--scope", "usage")
    (root / "mutants/engine/usage.py.meta").unlink()  # cut off while mutmut was still making mutants
    capfd.readouterr()
    assert _score(root, "--resume", "--scope", "usage") == EXIT_OK
    assert _runs(root)[-1] == ["run", "--max-children", "2", "engine.usage.*"]
    out = capfd.readouterr().out
    assert "1 glob(s) left" in out
    assert "tested 2" in out


def test_with_every_scope_a_module_without_results_leaves_mutmut_to_make_it(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _cut_off_run(root, 0)
    (root / "mutants/engine/usage.py.meta").unlink()
    capfd.readouterr()
    assert _score(root, "--resume") == EXIT_OK
    assert _runs(root)[-1] == ["run", "--max-children", "2"]
    out = capfd.readouterr().out
    assert "3 glob(s) left" in out  # engine.usage.* and decoder's two functions
    assert "tested 7" in out


def test_results_cut_off_mid_write_or_by_a_kill_are_tested_again(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, after=6)
    decoder = root / "mutants/fakels/decoder.py.meta"
    killed = json.loads(decoder.read_text(encoding="utf-8"))
    killed["exit_code_by_key"]["fakels.decoder.x_decode__mutmut_2"] = -9  # SIGKILLed while testing it
    decoder.write_text(json.dumps(killed), encoding="utf-8")
    usage = root / "mutants/engine/usage.py.meta"
    usage.write_text(usage.read_text(encoding="utf-8")[:20], encoding="utf-8")  # torn write
    capfd.readouterr()
    assert _score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert "1 cut-off result(s) cleared" in out
    assert "tested 3" in out  # the cleared one and both mutants of the torn file
    assert re.search(r"^  segfault +0$", out, re.MULTILINE)


def test_a_mutants_dir_without_a_record_is_not_resumed(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "mutants").mkdir()
    assert _score(root, "--resume") == EXIT_NO_SCORE
    assert f"holds no record of the run it came from ({RUN_RECORD})" in capsys.readouterr().err
    assert not (root / "mutmut-calls.jsonl").exists()


def test_resume_and_report_only_exclude_each_other(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _score(root, "--resume", "--report-only")
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_hash_covers_what_mutmut_copies_and_skips_caches_and_the_accepted_list(root: Path) -> None:
    (root / "tests/__pycache__").mkdir()
    (root / "tests/__pycache__/test_decoder.cpython-311.pyc").write_bytes(b"\0")
    (root / "docs").mkdir()
    (root / "docs/notes.md").write_text("not copied", encoding="utf-8")
    assert list(hashed_files(root, {"source_paths": ["fakels", "engine"], "also_copy": ["mutations/"]})) == [
        "engine/usage.py",
        "fakels/decoder.py",
        "mutations/mutmut-scopes.json",
        "pyproject.toml",
        "tests/test_decoder.py",
    ]


def test_function_globs_name_each_function_once() -> None:
    names = ["m.x_f__mutmut_3", "m.x_f__mutmut_12", "m.xǁCǁg__mutmut_1"]
    assert function_globs(names) == ["m.x_f__mutmut_*", "m.xǁCǁg__mutmut_*"]


def test_a_test_module_added_between_pieces_retests_the_survivors_only(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _cut_off_run(root, 6, decoder=SURVIVOR)
    (root / "tests/test_frame.py").write_text("def test_frame(): pass\n", encoding="utf-8")
    _plan(root, die_after=None)  # the new test kills the survivor
    capfd.readouterr()
    assert _score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert "1 test module(s) added (tests/test_frame.py): 1 survivor(s) and untested mutant(s) are tested again" in out
    assert "tested 2" in out  # the survivor and the one mutant the cut left
    record = json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))
    assert "tests/test_frame.py" in record["files"]


@pytest.mark.parametrize("added", ["tests/conftest.py", "tests/support/helpers.py", "fakels/test_inside.py"])
def test_other_added_files_are_not_resumed(root: Path, added: str, capsys: pytest.CaptureFixture[str]) -> None:
    _cut_off_run(root, 2)
    (root / added).parent.mkdir(parents=True, exist_ok=True)
    (root / added).write_text("x = 1\n", encoding="utf-8")
    capsys.readouterr()
    assert _score(root, "--resume") == EXIT_NO_SCORE
    assert f"({added});" in capsys.readouterr().err

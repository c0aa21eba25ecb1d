"""``python -m mutations.explore --resume``: a run cut off (the machine went down) goes on where
it stopped, on the same tree and scopes only, through the real script with a stand-in ``mutmut``
(tests/support/mutmut_standin.py) that keeps mutmut's on-disk results and incremental contract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mutations.explore.resume import RUN_RECORD, function_globs, hashed_files
from mutations.explore.score import EXIT_NO_SCORE, EXIT_OK, EXIT_UNACCEPTED
from tests.support.standin_runs import SURVIVOR, cut_off_run, make_tree, plan, results, runs, score


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_tree(tmp_path, monkeypatch)


def test_a_run_cut_off_goes_on_where_it_stopped_and_scores_the_whole(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cut_off_run(root, after=2)
    assert "'mutmut run' was killed by signal 9 (SIGKILL) after " in capfd.readouterr().err
    assert list(results(root, "fakels/decoder.py").values()) == [1, 1, None, None, None]

    assert score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    # The two verdicts of the first piece stand: only the other five mutants are tested.
    assert "tested 5" in out
    assert "in 1 piece(s) (1 cut off)" in out
    assert re.search(r"^  killed +7$", out, re.MULTILINE)
    assert "score: 100.0%" in out
    # With every scope chosen, mutmut gets no names: fresh or resumed, it takes only_mutate.
    assert runs(root) == [["run", "--max-children", "2"], ["run", "--max-children", "2"]]
    record = json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))
    assert [piece["wall_s"] is None for piece in record["pieces"]] == [True, False]


def test_resuming_a_finished_run_runs_nothing_and_reports_it(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert score(root) == EXIT_OK
    capfd.readouterr()
    assert score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert "every mutant of the chosen scopes has a verdict; mutmut was not run again" in out
    assert "score: 100.0%" in out
    assert len(runs(root)) == 1


def test_without_mutants_dir_resume_starts_a_fresh_run(root: Path) -> None:
    assert score(root, "--resume") == EXIT_OK
    assert runs(root) == [["run", "--max-children", "2"]]
    assert json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))["globs"] == [
        "fakels.decoder.*",
        "engine.usage.*",
    ]


@pytest.mark.parametrize(
    "edit",
    ["tests/test_decoder.py", "fakels/decoder.py", "pyproject.toml", "mutations/explore/scopes.json", "tests/new.py"],
)
def test_a_changed_tree_is_not_resumed(root: Path, edit: str, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=2)
    path = root / edit
    path.write_text(path.read_text(encoding="utf-8") + "\n" if path.exists() else "x = 1\n", encoding="utf-8")
    capsys.readouterr()
    assert score(root, "--resume") == EXIT_NO_SCORE
    err = capsys.readouterr().err
    assert f"--resume: 1 file(s) changed since the run in mutants/ started ({edit})" in err
    assert "run without --resume to start afresh" in err
    assert len(runs(root)) == 1


def test_the_accepted_list_may_change_between_pieces(root: Path) -> None:
    cut_off_run(root, 2, decoder=SURVIVOR)
    accepted = [
        {
            "mutant": "fakels.decoder.x_frame__mutmut_*",
            "removed": "return x",
            "added": "return None",
            "reason": "the stand-in's survivor, accepted to show the list is read at report time",
        }
    ]
    (root / "mutations/explore/accepted-survivors.json").write_text(json.dumps(accepted), encoding="utf-8")
    assert score(root, "--resume") == EXIT_OK


def test_a_survivor_found_by_a_resumed_run_is_triaged(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 1, decoder=SURVIVOR)
    assert score(root, "--resume") == EXIT_UNACCEPTED
    assert "SURVIVED  fakels.decoder.x_frame__mutmut_2" in capsys.readouterr().out


def test_other_scopes_are_not_resumed(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 2, "--scope", "decoder")
    capsys.readouterr()
    assert score(root, "--resume") == EXIT_NO_SCORE
    assert "mutants/ holds a run of other scopes (its globs: fakels.decoder.*)" in capsys.readouterr().err


def test_a_subset_resumes_by_naming_the_functions_left(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 1, "--scope", "decoder")
    assert runs(root) == [["run", "--max-children", "2", "fakels.decoder.*"]]  # a subset is named
    assert score(root, "--resume", "--scope", "decoder") == EXIT_OK
    # x_decode has two mutants left and is named whole; mutmut tests a named function's every mutant.
    assert runs(root)[-1] == [
        "run",
        "--max-children",
        "2",
        "fakels.decoder.x_decode__mutmut_*",
        "fakels.decoder.x_frame__mutmut_*",
    ]
    assert "tested 5" in capfd.readouterr().out


def test_a_module_without_results_yet_is_run_whole(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 1, "--scope", "usage")
    (root / "mutants/engine/usage.py.meta").unlink()  # cut off while mutmut was still making mutants
    capfd.readouterr()
    assert score(root, "--resume", "--scope", "usage") == EXIT_OK
    assert runs(root)[-1] == ["run", "--max-children", "2", "engine.usage.*"]
    out = capfd.readouterr().out
    assert "1 glob(s) left" in out
    assert "tested 2" in out


def test_with_every_scope_a_module_without_results_leaves_mutmut_to_make_it(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cut_off_run(root, 0)
    (root / "mutants/engine/usage.py.meta").unlink()
    capfd.readouterr()
    assert score(root, "--resume") == EXIT_OK
    assert runs(root)[-1] == ["run", "--max-children", "2"]
    out = capfd.readouterr().out
    assert "3 glob(s) left" in out  # engine.usage.* and decoder's two functions
    assert "tested 7" in out


def test_results_cut_off_mid_write_or_by_a_kill_are_tested_again(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=6)
    decoder = root / "mutants/fakels/decoder.py.meta"
    killed = json.loads(decoder.read_text(encoding="utf-8"))
    killed["exit_code_by_key"]["fakels.decoder.x_decode__mutmut_2"] = -9  # SIGKILLed while testing it
    decoder.write_text(json.dumps(killed), encoding="utf-8")
    usage = root / "mutants/engine/usage.py.meta"
    usage.write_text(usage.read_text(encoding="utf-8")[:20], encoding="utf-8")  # torn write
    capfd.readouterr()
    assert score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert "1 cut-off result(s) cleared" in out
    assert "tested 3" in out  # the cleared one and both mutants of the torn file
    assert re.search(r"^  segfault +0$", out, re.MULTILINE)


def test_a_mutants_dir_without_a_record_is_not_resumed(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "mutants").mkdir()
    assert score(root, "--resume") == EXIT_NO_SCORE
    assert f"holds no record of the run it came from ({RUN_RECORD})" in capsys.readouterr().err
    assert not (root / "mutmut-calls.jsonl").exists()


def test_resume_and_report_only_exclude_each_other(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        score(root, "--resume", "--report-only")
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
        "mutations/explore/scopes.json",
        "pyproject.toml",
        "tests/test_decoder.py",
    ]


def test_function_globs_name_each_function_once() -> None:
    names = ["m.x_f__mutmut_3", "m.x_f__mutmut_12", "m.xǁCǁg__mutmut_1"]
    assert function_globs(names) == ["m.x_f__mutmut_*", "m.xǁCǁg__mutmut_*"]


@pytest.mark.parametrize("added", ["tests/conftest.py", "tests/support/helpers.py", "fakels/test_inside.py"])
def test_other_added_files_are_not_resumed(root: Path, added: str, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 2)
    (root / added).parent.mkdir(parents=True, exist_ok=True)
    (root / added).write_text("x = 1\n", encoding="utf-8")
    capsys.readouterr()
    assert score(root, "--resume") == EXIT_NO_SCORE
    assert f"({added});" in capsys.readouterr().err


def _select(root: Path, *selection: str) -> None:
    """mutmut's test selection in the tree's pyproject.toml (before the run starts: the file is hashed)."""
    pyproject = root / "pyproject.toml"
    listed = ", ".join(json.dumps(entry) for entry in selection)
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8") + f"pytest_add_cli_args_test_selection = [{listed}]\n", encoding="utf-8"
    )
    for entry in selection:
        (root / entry).parent.mkdir(parents=True, exist_ok=True)
        if entry.endswith("/"):
            (root / entry).mkdir(exist_ok=True)


@pytest.mark.parametrize(
    ("selection", "added"),
    [((), "tests/test_frame.py"), (("tests/test_decoder.py", "tests/added/"), "tests/added/test_frame.py")],
    ids=["no-selection-collects-every-test", "under-a-selected-folder"],
)
def test_a_test_module_added_between_pieces_retests_the_survivors_only(
    root: Path, capfd: pytest.CaptureFixture[str], selection: tuple[str, ...], added: str
) -> None:
    if selection:
        _select(root, *selection)
    cut_off_run(root, 6, decoder=SURVIVOR)
    (root / added).write_text("def test_frame(): pass\n", encoding="utf-8")
    plan(root, die_after=None)  # the new test kills the survivor
    capfd.readouterr()
    assert score(root, "--resume") == EXIT_OK
    out = capfd.readouterr().out
    assert f"1 test module(s) added ({added}): 1 survivor(s) and untested mutant(s) are tested again" in out
    assert "tested 2" in out  # the survivor and the one mutant the cut left
    record = json.loads((root / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))
    assert added in record["files"]


@pytest.mark.parametrize(
    ("selection", "where"),
    [
        (("tests/test_decoder.py",), "the selection names no folder to put it in"),
        (("tests/test_decoder.py::test_frame",), "the selection names no folder to put it in"),
        (("tests/test_decoder.py", "tests/added/"), "put it under a folder the selection names (tests/added/)"),
        (("tests/test_decoder.py", "tests/add"), "put it under a folder the selection names (tests/add)"),
    ],
)
def test_an_added_test_module_that_mutmut_would_not_collect_is_not_resumed(
    root: Path, selection: tuple[str, ...], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """mutmut runs only the tests its selection collects, so a module outside it could kill nothing."""
    _select(root, *selection)
    cut_off_run(root, 2)
    (root / "tests/additional").mkdir()
    (root / "tests/additional/test_frame.py").write_text("def test_frame(): pass\n", encoding="utf-8")
    capsys.readouterr()
    assert score(root, "--resume") == EXIT_NO_SCORE
    err = capsys.readouterr().err
    assert (
        "--resume: tests/additional/test_frame.py added since the run in mutants/ started, but mutmut's test "
        "selection (pytest_add_cli_args_test_selection) does not collect it, so no mutant would meet it: "
        f"{where}, or run without --resume to start afresh" in err
    )
    assert len(runs(root)) == 1


def test_a_selection_that_is_not_a_list_of_paths_is_no_score(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, 2)
    (root / "pyproject.toml").write_text(
        (root / "pyproject.toml").read_text(encoding="utf-8") + "pytest_add_cli_args_test_selection = 'tests'\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert score(root, "--resume") == EXIT_NO_SCORE
    assert "pytest_add_cli_args_test_selection must be a list of test paths" in capsys.readouterr().err

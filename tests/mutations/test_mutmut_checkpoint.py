"""``python -m mutations.explore --save-checkpoint`` / ``--resume-from``: a run whose ``mutants/`` will
not outlive the machine goes on, from one file of verdicts, on another checkout of the same tree; through
the real script with the stand-in ``mutmut`` (tests/support/mutmut_standin.py)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from mutations.explore.resume import RUN_RECORD
from mutations.explore.score import EXIT_NO_SCORE, EXIT_OK
from tests.support.standin_runs import cut_off_run, make_tree, results, runs, score

CHECKPOINT = "mutations/checkpoints/full.mutmut-checkpoint.gz"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "first").mkdir()
    return make_tree(tmp_path / "first", monkeypatch)


def _other_checkout(root: Path) -> Path:
    """The same tree on another machine: no mutants/, nothing the stand-in was asked before."""
    other = root.parent / "second"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns("mutants", "mutmut-calls.jsonl"))
    return other


def _rewrite(path: Path, edit: dict[str, object]) -> None:
    document = json.loads(gzip.decompress(path.read_bytes()))
    path.write_bytes(gzip.compress(json.dumps(document | edit).encode("utf-8")))


def test_a_run_saved_in_the_tree_goes_on_in_another_checkout(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=3)
    capfd.readouterr()
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    assert (
        f"--save-checkpoint: {root / CHECKPOINT}: 3 verdict(s) kept, 4 mutant(s) still open" in capfd.readouterr().out
    )
    other = _other_checkout(root)  # the checkpoint comes along, inside the hashed mutations/

    assert score(other, "--resume-from", str(other / CHECKPOINT)) == EXIT_OK
    out = capfd.readouterr().out
    assert "--resume-from: restored the run of" in out
    assert "in 1 piece(s) (1 cut off)" in out
    assert "tested 4" in out  # the three verdicts of the first checkout stand
    assert re.search(r"^  killed +7$", out, re.MULTILINE)
    assert runs(other) == [["run", "--max-children", "2"]]
    record = json.loads((other / "mutants" / RUN_RECORD).read_text(encoding="utf-8"))
    assert [piece["wall_s"] is None for piece in record["pieces"]] == [True, False]


def test_a_restored_run_is_a_run_like_any_other_for_resume(root: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=1)
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    other = _other_checkout(root)
    cut_off_run(other, 2, "--resume-from", str(other / CHECKPOINT))
    assert list(results(other, "fakels/decoder.py").values()) == [1, 1, 1, None, None]
    capfd.readouterr()
    assert score(other, "--resume") == EXIT_OK
    assert "tested 4" in capfd.readouterr().out


def test_a_result_file_torn_while_saving_is_left_out_and_tested_again(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cut_off_run(root, after=6)
    usage = root / "mutants/engine/usage.py.meta"
    usage.write_text(usage.read_text(encoding="utf-8")[:20], encoding="utf-8")
    capfd.readouterr()
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    assert "5 verdict(s) kept, 0 mutant(s) still open" in capfd.readouterr().out
    other = _other_checkout(root)
    assert score(other, "--resume-from", str(other / CHECKPOINT)) == EXIT_OK
    assert "tested 2" in capfd.readouterr().out


def test_saving_twice_gives_the_same_bytes(root: Path) -> None:
    cut_off_run(root, after=3)
    assert score(root, "--save-checkpoint", str(root / "a.mutmut-checkpoint.gz")) == EXIT_OK
    assert score(root, "--save-checkpoint", str(root / "b.mutmut-checkpoint.gz")) == EXIT_OK
    assert (root / "a.mutmut-checkpoint.gz").read_bytes() == (root / "b.mutmut-checkpoint.gz").read_bytes()


def test_an_existing_mutants_dir_is_not_overwritten(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=3)
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    before = results(root, "fakels/decoder.py")
    capsys.readouterr()
    assert score(root, "--resume-from", str(root / CHECKPOINT)) == EXIT_NO_SCORE
    assert "exists; go on with the run there with --resume, or remove it to restore" in capsys.readouterr().err
    assert results(root, "fakels/decoder.py") == before
    assert len(runs(root)) == 1


def test_a_checkout_of_another_tree_is_not_resumed(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=3)
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    other = _other_checkout(root)
    (other / "fakels/decoder.py").write_text("def decode(): return 3\n", encoding="utf-8")
    capsys.readouterr()
    assert score(other, "--resume-from", str(other / CHECKPOINT)) == EXIT_NO_SCORE
    assert (
        "--resume: 1 file(s) changed since the run in mutants/ started (fakels/decoder.py)" in capsys.readouterr().err
    )
    assert not (other / "mutmut-calls.jsonl").exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ({"format": "something else"}, "not a checkpoint written by --save-checkpoint"),
        ({"version": 2}, "checkpoint version 2; this kit reads version 1"),
        ({"record": {"version": 1}}, "'globs' must be a list of mutant globs"),
        ({"results": []}, "'results' must map result files to their contents"),
        ({"results": {"../escape.py.meta": {"exit_code_by_key": {}}}}, "is not a result file inside mutants/"),
        ({"results": {"/etc/escape.py.meta": {"exit_code_by_key": {}}}}, "is not a result file inside mutants/"),
        ({"results": {"fakels/decoder.py": {"exit_code_by_key": {}}}}, "is not a result file inside mutants/"),
        ({"results": {"fakels/decoder.py.meta": {"exit_codes": {}}}}, "no 'exit_code_by_key' object"),
    ],
)
def test_a_damaged_checkpoint_is_refused_before_anything_is_written(
    root: Path, damage: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cut_off_run(root, after=3)
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_OK
    other = _other_checkout(root)
    _rewrite(other / CHECKPOINT, damage)
    capsys.readouterr()
    assert score(other, "--resume-from", str(other / CHECKPOINT)) == EXIT_NO_SCORE
    assert message in capsys.readouterr().err
    assert not (other / "mutants").exists()
    assert not (root.parent / "escape.py.meta").exists()


def test_a_file_that_is_no_checkpoint_is_refused(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "plain.mutmut-checkpoint.gz").write_text("{}", encoding="utf-8")
    assert score(root, "--resume-from", str(root / "plain.mutmut-checkpoint.gz")) == EXIT_NO_SCORE
    assert "--resume-from: cannot read the checkpoint" in capsys.readouterr().err
    assert score(root, "--resume-from", str(root / "missing.mutmut-checkpoint.gz")) == EXIT_NO_SCORE
    assert "--resume-from: cannot read the checkpoint" in capsys.readouterr().err


def test_there_is_nothing_to_save_without_a_run(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert score(root, "--save-checkpoint", str(root / CHECKPOINT)) == EXIT_NO_SCORE
    assert "cannot read the run record" in capsys.readouterr().err
    assert not (root / CHECKPOINT).exists()


def test_a_checkpoint_is_named_so_the_hash_leaves_it_out(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut_off_run(root, after=3)
    assert score(root, "--save-checkpoint", str(root / "mutations/run.json.gz")) == EXIT_NO_SCORE
    assert "name the file *.mutmut-checkpoint.gz" in capsys.readouterr().err
    assert not (root / "mutations/run.json.gz").exists()


def test_save_checkpoint_runs_alone(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        score(root, "--resume", "--save-checkpoint", str(root / CHECKPOINT))
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err

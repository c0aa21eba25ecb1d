"""The command line's manners with the mistakes users make (issue 31): a selection that names nothing, a
near-miss ID, names separated by spaces, output cut off by a pager, one target syntax on both fronts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE, SelectionError, resolve
from conformance.cli import main
from conformance.runner import select

FAMILIES = "families: WIRE, IMG, OFF, SO, ACC, STORE, ATT, TURN, SCOPE, REQ"


@pytest.mark.parametrize("only", ["", ",", " , "])
def test_an_only_that_names_nothing_is_a_usage_error_not_every_invariant(
    only: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In CI an unset ``--only "$IDS"`` must not quietly run the whole catalogue."""
    assert main(["run", "--only", only]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "cascade-conformance: the selection names no invariant: give IDs or families, comma-separated "
        "(e.g. IMG,SO-1), or leave the option out for every one"
    ]


def test_no_selection_is_every_invariant_and_an_empty_one_is_refused() -> None:
    assert len(select(None)) == len(CATALOGUE)
    for empty in ([], [" ", ""]):
        with pytest.raises(SelectionError, match="names no invariant"):
            select(empty)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("IMG1", "did you mean IMG-1?"),
        ("img_1", "did you mean IMG-1?"),
        ("so 2", "did you mean SO-2?"),
        ("Store-01", "did you mean STORE-1?"),
        ("OFF-1 SO-1", "separate names with commas: OFF-1,SO-1"),
        ("wire img", "separate names with commas: WIRE,IMG"),
    ],
)
def test_a_near_miss_says_what_was_meant(name: str, hint: str) -> None:
    with pytest.raises(SelectionError) as raised:
        resolve(name)
    assert str(raised.value) == f"{name!r} is neither an invariant ID nor a family ({hint})"


@pytest.mark.parametrize("name", ["IMG9", "XYZ-1", "OFF-1 NOPE"])
def test_a_name_near_nothing_gets_the_family_list(name: str) -> None:
    with pytest.raises(SelectionError) as raised:
        resolve(name)
    assert str(raised.value).endswith(f"{FAMILIES})")
    assert "did you mean" not in str(raised.value)
    assert "commas" not in str(raised.value)


def test_output_cut_off_by_a_closed_pipe_ends_quietly() -> None:
    """``cascade-conformance list | head``: the reader goes away; no traceback, the exit status of a
    process a closed pipe ended (128 + SIGPIPE)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "list"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_reference_is_a_target_spec_on_the_command_line_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pytest --cascade-target reference`` works; so does ``run --target reference``."""
    assert main(["run", "--target", "Reference", "--only", "OFF-1", "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("OFF-1")] == [["OFF-1", "pass"]]


def test_the_target_usage_names_every_kind_of_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", "nonsense"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "cascade-conformance: 'nonsense' is not a target. Use python:PACKAGE.MODULE:FACTORY (an in-process "
        "object), exec:COMMAND (an adapter speaking JSON lines), http://127.0.0.1:PORT (a gateway over HTTP), "
        "or reference (the kit's own reference, the default)"
    ]


MYGW = '''
class Gateway:
    """Offers no operation: every invariant is not checkable, at once."""

    def operations(self):
        return []


def make_target():
    return Gateway()
'''


@pytest.mark.parametrize("front", ["cli", "pytest"])
def test_a_python_target_beside_you_is_importable_as_python_m_would_find_it(front: str, tmp_path: Path) -> None:
    """``mygw.py`` in the folder the command runs in: the console scripts do not put that folder on the
    path (``python -m`` does), so the target is looked up there too."""
    (tmp_path / "mygw.py").write_text(MYGW, encoding="utf-8")
    scripts = Path(sys.executable).parent
    command = (
        [str(scripts / "cascade-conformance"), "run", "--target", "python:mygw:make_target", "--only", "WIRE-1"]
        if front == "cli"
        else [
            str(scripts / "pytest"),
            "-p",
            "no:cacheprovider",
            "--cascade-target",
            "python:mygw:make_target",
            "--cascade-only",
            "WIRE-1",
        ]
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False, env=env)
    assert "cannot import mygw" not in done.stdout + done.stderr
    assert "not checkable" in done.stdout or "SKIPPED" in done.stdout, done.stdout + done.stderr


def _without_the_venv_on_path() -> dict[str, str]:
    scripts = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != scripts)
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PATH": path}


def test_printed_replay_commands_run_as_printed_without_an_activated_venv(tmp_path: Path) -> None:
    """``.venv/bin/cascade-conformance run`` (the README's way, no venv activated) prints replay lines
    that a shell can run as they are: the bare name would not be found."""
    script = Path(sys.executable).parent / "cascade-conformance"
    env = _without_the_venv_on_path()
    repo = Path(__file__).resolve().parents[3]
    target = "python:tests.support.broken_targets:drops_unknown_fields"
    argv = [str(script), "run", "--target", target, "--only", "WIRE-2", "--no-shrink", "--report", str(tmp_path)]
    done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    replay = next(line.strip().removeprefix("replay: ") for line in done.stdout.splitlines() if "replay: " in line)
    assert replay.startswith(f"{script} replay ")
    assert f"```\n{replay}\n```" in (tmp_path / "report.md").read_text(encoding="utf-8")
    again = subprocess.run(["sh", "-c", replay], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr  # it ran, and the case still fails
    assert again.stdout.startswith("WIRE-2   fail"), again.stdout


def test_the_docs_launch_of_the_kits_own_gateway_runs_without_an_activated_venv(tmp_path: Path) -> None:
    """``--launch "cascade-engine serve ..."`` as docs/adapters.md prints it: the bare name is not on the
    PATH of a shell whose venv is not activated; the kit starts its own environment's copy."""
    script = Path(sys.executable).parent / "cascade-conformance"
    launch = "cascade-engine serve --port {port} --ls-address {ls_address} --csrf-token {csrf_token}"
    argv = [str(script), "run", "--target", "http://127.0.0.1:0", "--launch", launch, "--only", "SO-1"]
    argv += ["--max-examples", "2", "--report", str(tmp_path / "report")]
    env = _without_the_venv_on_path()
    assert shutil.which("cascade-engine", path=env["PATH"]) is None
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("SO-1     pass"), done.stdout


def test_the_plugin_in_a_users_folder_prints_no_warning_of_the_kits_own_dependencies(tmp_path: Path) -> None:
    """A user's pytest run with the kit installed (``.[test]``) must not print a deprecation warning about
    an option of a plugin the kit pulled in (pytest-asyncio's loop scope did, on every run)."""
    pytest_script = Path(sys.executable).parent / "pytest"
    done = subprocess.run(
        [str(pytest_script), "-p", "no:cacheprovider", "--cascade-target", "reference", "--cascade-only", "OFF-1"],
        cwd=tmp_path,
        env=_without_the_venv_on_path(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr

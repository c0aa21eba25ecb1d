"""A static check in a sub-folder of a selected test folder is found (issue 44): the spec checker
walks the folder recursively, not only its top level, so a spec selecting ``tests/engine`` while a
static check sits in ``tests/engine/store/deep/`` is refused by ``cascade-mutations check`` and by
``verify`` before any run. Looking only at the top level (``glob``, not ``rglob``), both let it
through, and a static check, which fails on any edit to a line it reads, would pass for a catch.

Through the real command on a committed toy tree, as the runner outcome tests are."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutations.cli import main as cascade_mutations
from mutations.runner import EXIT_NO_VERDICT, EXIT_OK
from mutations.spec import STATIC_CHECK_MARKER, static_check_files
from tests.support.toy_project import DESCRIBE, commit_toy_repo, toy_files, toy_mutation, write_toy_spec

BEHAVIOURAL = """from fakels.toy import describe


def test_describe():
    assert describe(3) == "odd"
    assert describe(4) == "even"
"""

# Written through the constant so that this file itself never holds the marker's text.
DEEP_STATIC = f"""import pytest


@pytest.mark.{STATIC_CHECK_MARKER}
def test_reads_the_tree():
    assert '"odd"' in open("fakels/toy.py").read()
"""

DEEP = "tests/engine/store/deep/test_static_deep.py"
ODD_IS_EVEN = toy_mutation("odd-is-even", DESCRIBE, '"even"')


def _toy(root: Path, selected: str) -> Path:
    """A committed toy tree whose only static check sits three folders below ``tests/engine``, and a spec
    selecting ``selected``; the spec's path."""
    files = {
        **toy_files(tests=None),
        "tests/__init__.py": "",
        "tests/engine/__init__.py": "",
        "tests/engine/test_toy.py": BEHAVIOURAL,
        "tests/engine/store/__init__.py": "",
        "tests/engine/store/deep/__init__.py": "",
        DEEP: DEEP_STATIC,
    }
    (root / "specs").mkdir()
    spec = write_toy_spec(root / "specs", [ODD_IS_EVEN], baseline=1, tests=(selected,))
    commit_toy_repo(root, files)
    return spec


@pytest.mark.parametrize("selected", ["tests", "tests/engine", "tests/engine/store", DEEP])
def test_the_checker_finds_a_static_check_below_a_selected_folder(tmp_path: Path, selected: str) -> None:
    _toy(tmp_path, selected)
    assert static_check_files(selected, tmp_path) == [DEEP]


@pytest.mark.parametrize("selected", ["tests/engine", "tests/engine/store"])
def test_check_refuses_a_spec_whose_folder_holds_a_static_check_in_a_sub_folder(
    tmp_path: Path, selected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _toy(tmp_path, selected)
    assert cascade_mutations(["--root", str(tmp_path), "check", str(spec)]) == EXIT_NO_VERDICT
    out, err = capsys.readouterr()
    assert out.strip() == "1 spec(s), 1 mutation(s): 1 problem(s)"
    assert f"spec.json: the test selection {selected!r} includes static checks ({DEEP})" in err


def test_verify_refuses_it_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _toy(tmp_path, "tests/engine")
    code = cascade_mutations(["--root", str(tmp_path), "verify", "--no-conformance", "--jobs", "1", str(spec)])
    out, err = capsys.readouterr()
    assert code == EXIT_NO_VERDICT, out + err
    assert "cascade-mutations: no verdict: the specs have static problems:" in err
    assert DEEP in err
    assert "baseline" not in out  # nothing ran


@pytest.mark.parametrize("selected", ["tests/engine/test_toy.py", "tests/engine/test_toy.py::test_describe"])
def test_a_selection_without_static_checks_passes_the_check(
    tmp_path: Path, selected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _toy(tmp_path, selected)
    assert cascade_mutations(["--root", str(tmp_path), "check", str(spec)]) == EXIT_OK
    assert capsys.readouterr().out.strip() == "1 spec(s), 1 mutation(s): OK"


@pytest.mark.parametrize(
    ("selected", "problem"),
    [
        ("tests/nowhere", "test file tests/nowhere does not exist"),
        ("tests/engine::test_describe", "test file tests/engine does not exist"),  # a node ID names a file
    ],
)
def test_a_folder_is_a_selection_and_a_missing_one_is_named(
    tmp_path: Path, selected: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _toy(tmp_path, selected)
    (tmp_path / DEEP).unlink()  # no static check anywhere: only the selection itself is judged
    assert cascade_mutations(["--root", str(tmp_path), "check", str(spec)]) == EXIT_NO_VERDICT
    assert capsys.readouterr().err.strip() == f"cascade-mutations: spec.json: {problem}"


def test_a_folder_without_static_checks_passes_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _toy(tmp_path, "tests/engine")
    (tmp_path / DEEP).unlink()
    assert cascade_mutations(["--root", str(tmp_path), "check", str(spec)]) == EXIT_OK
    assert capsys.readouterr().out.strip() == "1 spec(s), 1 mutation(s): OK"

"""The known-failures file (docs/cli.md "Known failures", docs/adapters.md): JSON or YAML listing the
invariants expected to fail, each with a reason and optionally a pinned case relative to the file.
What it accepts, what it refuses, and the one line a user reads for each refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.known_failures import KnownFailure, KnownFailuresError, load_known_failures
from tests.conformance.report.case_files_support import ascii_process_locale
from tests.support.registry import without_family

YAML_LIST = """\
known_failures:
  - id: WIRE-2
    reason: our decoder drops unknown fields (ISSUE-12)
  - id: OFF-1
    reason: usage-less windows parse as null
"""


def refusal(path: Path) -> str:
    with pytest.raises(KnownFailuresError) as raised:
        load_known_failures(path)
    return str(raised.value)


@pytest.mark.parametrize("name", ["known.yaml", "known.yml", "known.YAML", "known.YML"])
def test_a_yaml_file_by_either_suffix_in_any_case_lists_its_invariants_in_file_order(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(YAML_LIST, encoding="utf-8")
    loaded = load_known_failures(path)
    assert list(loaded.items()) == [
        ("WIRE-2", KnownFailure("WIRE-2", "our decoder drops unknown fields (ISSUE-12)", None)),
        ("OFF-1", KnownFailure("OFF-1", "usage-less windows parse as null", None)),
    ]


def test_any_other_suffix_is_read_as_json(tmp_path: Path) -> None:
    listed = {"known_failures": [{"id": "WIRE-1", "reason": "was broken once"}]}
    for name in ("known.json", "known.txt", "known"):
        path = tmp_path / name
        path.write_text(json.dumps(listed), encoding="utf-8")
        assert load_known_failures(path) == {"WIRE-1": KnownFailure("WIRE-1", "was broken once")}
    yaml_in_json = tmp_path / "yaml.json"
    yaml_in_json.write_text(YAML_LIST, encoding="utf-8")
    assert refusal(yaml_in_json) == f"{yaml_in_json}: cannot parse: Expecting value: line 1 column 1 (char 0)"


def test_an_empty_list_expects_nothing(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures: []\n", encoding="utf-8")
    assert load_known_failures(path) == {}


def test_the_file_is_utf8_whatever_the_process_locale(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures:\n  - id: WIRE-2\n    reason: décodeur ✗ (ticket №12)\n", encoding="utf-8")
    with ascii_process_locale():
        loaded = load_known_failures(path)
    assert loaded["WIRE-2"].reason == "décodeur ✗ (ticket №12)"


def test_a_pinned_case_is_resolved_against_the_files_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "gateway" / "conformance"
    (folder / "cases").mkdir(parents=True)
    (folder / "cases" / "wire-2.json").write_text("{}", encoding="utf-8")
    path = folder / "known.yaml"
    path.write_text(
        "known_failures:\n"
        "  - {id: WIRE-2, reason: drops unknowns, case: cases/wire-2.json}\n"
        "  - {id: WIRE-1, reason: not pinned}\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_known_failures(path) == {
        "WIRE-2": KnownFailure("WIRE-2", "drops unknowns", (folder / "cases" / "wire-2.json").resolve()),
        "WIRE-1": KnownFailure("WIRE-1", "not pinned", None),
    }
    monkeypatch.chdir(tmp_path)
    relative = Path("gateway") / "conformance" / "known.yaml"
    assert load_known_failures(relative)["WIRE-2"].case == (folder / "cases" / "wire-2.json").resolve()


@pytest.mark.parametrize("case", ["cases/nope.json", "cases"])
def test_a_pinned_case_that_is_not_a_file_is_refused(tmp_path: Path, case: str) -> None:
    (tmp_path / "cases").mkdir()
    path = tmp_path / "known.yaml"
    path.write_text(f"known_failures:\n  - {{id: WIRE-2, reason: drops unknowns, case: {case}}}\n", encoding="utf-8")
    assert refusal(path) == f"{path}: the pinned case {case} for WIRE-2 does not exist"


@pytest.mark.parametrize(
    ("document", "where_and_what"),
    [
        ([], "at <top level>: [] is not of type 'object'"),
        (None, "at <top level>: None is not of type 'object'"),
        ({}, "at <top level>: 'known_failures' is a required property"),
        (
            {"known_failures": [], "extra": 1},
            "at <top level>: Additional properties are not allowed ('extra' was unexpected)",
        ),
        ({"known_failures": {}}, "at known_failures: {} is not of type 'array'"),
        ({"known_failures": [{"id": "WIRE-2"}]}, "at known_failures/0: 'reason' is a required property"),
        ({"known_failures": [{"reason": 5}]}, "at known_failures/0: 'id' is a required property"),
        (
            {"known_failures": [{"id": "WIRE-2", "reason": "r"}, {"id": 3, "reason": "r"}]},
            "at known_failures/1/id: 3 is not of type 'string'",
        ),
        (
            {"known_failures": [{"id": "WIRE-2", "reason": "r", "why": "x"}]},
            "at known_failures/0: Additional properties are not allowed ('why' was unexpected)",
        ),
    ],
)
def test_a_document_outside_the_schema_is_refused_at_the_first_offending_place(
    tmp_path: Path, document: object, where_and_what: str
) -> None:
    path = tmp_path / "known.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert refusal(path) == f"{path}: {where_and_what}"


@pytest.mark.parametrize("field", ["reason", "case"])
def test_an_empty_reason_or_case_is_refused(tmp_path: Path, field: str) -> None:
    entry = {"id": "WIRE-2", "reason": "r", field: ""}
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_failures": [entry]}), encoding="utf-8")
    assert refusal(path).startswith(f"{path}: at known_failures/0/{field}: ''")


def test_an_empty_yaml_file_is_refused_at_the_top_level(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("", encoding="utf-8")
    assert refusal(path) == f"{path}: at <top level>: None is not of type 'object'"


def test_a_file_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures: [\n", encoding="utf-8")
    message = refusal(path)
    assert message.startswith(f"{path}: cannot parse: ")
    assert "line 2" in message, "YAML's own account of where it stopped"


@pytest.mark.parametrize(("kind", "strerror"), [("missing", "No such file or directory"), ("folder", "Is a directory")])
def test_a_file_that_cannot_be_read_is_refused_with_the_systems_reason(
    tmp_path: Path, kind: str, strerror: str
) -> None:
    path = tmp_path / "known.yaml"
    if kind == "folder":
        path.mkdir()
    assert refusal(path) == f"{path}: cannot read: {strerror}"


def test_an_id_outside_the_catalogue_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures:\n  - {id: WIRE-1, reason: r}\n  - {id: WIRE-9, reason: r}\n", encoding="utf-8")
    assert refusal(path) == f"{path}: 'WIRE-9' is not an invariant ID"


def test_an_invariant_without_a_property_can_neither_fail_nor_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_family(monkeypatch, "ATT")
    path = tmp_path / "known.yaml"
    path.write_text("known_failures:\n  - {id: WIRE-1, reason: r}\n  - {id: ATT-1, reason: r}\n", encoding="utf-8")
    assert refusal(path) == (
        f"{path}: ATT-1 has no property yet (not yet implemented in this kit), so it can neither fail nor pass: "
        "remove it from the list"
    )


def test_an_invariant_listed_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(
        "known_failures:\n  - {id: OFF-1, reason: one}\n  - {id: WIRE-1, reason: r}\n  - {id: OFF-1, reason: two}\n",
        encoding="utf-8",
    )
    assert refusal(path) == f"{path}: OFF-1 is listed twice"


def test_a_bad_known_failures_file_stops_the_run_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures:\n  - id: WIRE-2\n", encoding="utf-8")
    report = tmp_path / "report"
    assert main(["run", "--only", "WIRE-2", "--known-failures", str(path), "--report", str(report)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"cascade-conformance: {path}: at known_failures/0: 'reason' is a required property\n"
    assert captured.out == ""
    assert not (report / "report.md").exists(), "nothing was judged"


@pytest.mark.parametrize("name", ["known.yaml", "known.json"])
def test_a_file_that_is_not_utf8_is_refused_with_its_path_and_the_byte(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"known_failures:\n  - {id: WIRE-1, reason: caf\xe9}\n")
    assert refusal(path) == f"{path}: not UTF-8 text: invalid continuation byte at byte 44"

"""Case files (docs/cli.md "Case files", docs/adapters.md "Known failures, case files, replay"): one
shrunk counterexample as plain UTF-8 JSON that replays against any target. The exact bytes written,
what reading gives back, and the one line a user reads for each file that is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cases import CaseFile, CaseFileError, read_case, write_case
from conformance.catalogue import CATALOGUE
from conformance.cli import main
from tests.conformance.report.case_files_support import ascii_process_locale

WIRE_1_CASE: dict[str, Any] = {"method": "AddTrackedWorkspace", "raw_hex": "0a0178", "expected": {"workspace": "x"}}


def saved(**fields: Any) -> dict[str, Any]:
    """A valid case file document, with ``fields`` replaced (a value of ``...`` drops the field)."""
    document: dict[str, Any] = {
        "format": "cascade-conformance-case",
        "version": 1,
        "invariant": "WIRE-1",
        "statement": CATALOGUE["WIRE-1"].statement,
        "case": WIRE_1_CASE,
        "found_on": "python:conformance.targets.reference:make_target",
        "message": "decoded {'workspace': 'y'}",
    }
    document.update(fields)
    return {key: value for key, value in document.items() if value is not ...}


def refusal(path: Path) -> str:
    with pytest.raises(CaseFileError) as raised:
        read_case(path)
    return str(raised.value)


def test_a_case_file_is_indented_utf8_json_with_every_field_in_order(tmp_path: Path) -> None:
    path = tmp_path / "report" / "cases" / "wire-1.json"
    item = CaseFile("WIRE-1", WIRE_1_CASE, "exec:node adapter.mjs", "décodé « y » ✗")
    assert write_case(path, item) == path
    statement = json.dumps(CATALOGUE["WIRE-1"].statement, ensure_ascii=False)
    assert path.read_bytes().decode("utf-8") == (
        "{\n"
        '  "format": "cascade-conformance-case",\n'
        '  "version": 1,\n'
        '  "invariant": "WIRE-1",\n'
        f'  "statement": {statement},\n'
        '  "case": {\n'
        '    "method": "AddTrackedWorkspace",\n'
        '    "raw_hex": "0a0178",\n'
        '    "expected": {\n'
        '      "workspace": "x"\n'
        "    }\n"
        "  },\n"
        '  "found_on": "exec:node adapter.mjs",\n'
        '  "message": "décodé « y » ✗"\n'
        "}\n"
    )


def test_writing_again_replaces_the_file_in_an_existing_folder(tmp_path: Path) -> None:
    path = tmp_path / "cases" / "wire-1.json"
    write_case(path, CaseFile("WIRE-1", WIRE_1_CASE, message="first"))
    write_case(path, CaseFile("WIRE-1", WIRE_1_CASE, message="second"))
    assert read_case(path) == CaseFile("WIRE-1", WIRE_1_CASE, "", "second")


def test_a_written_case_reads_back_as_written(tmp_path: Path) -> None:
    item = CaseFile("OFF-1", {"records": [{"usage": None}], "n": 1}, "python:x:y", "parsed as null")
    assert read_case(write_case(tmp_path / "off-1.json", item)) == item


def test_case_files_are_utf8_whatever_the_process_locale(tmp_path: Path) -> None:
    path = tmp_path / "wire-1.json"
    item = CaseFile("WIRE-1", {**WIRE_1_CASE, "expected": {"workspace": "café ✓"}}, "python:x:y", "№ 2 ✗")
    with ascii_process_locale():
        write_case(path, item)
        assert read_case(path) == item
    assert "café ✓" in path.read_bytes().decode("utf-8")


def test_a_file_without_found_on_or_message_reads_them_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "hand-written.json"
    path.write_text(json.dumps(saved(statement=..., found_on=..., message=...)), encoding="utf-8")
    assert read_case(path) == CaseFile("WIRE-1", WIRE_1_CASE, "", "")
    path.write_text(json.dumps(saved(found_on="exec:node a.mjs", message=...)), encoding="utf-8")
    assert read_case(path) == CaseFile("WIRE-1", WIRE_1_CASE, "exec:node a.mjs", "")
    path.write_text(json.dumps(saved(found_on=..., message="it broke")), encoding="utf-8")
    assert read_case(path) == CaseFile("WIRE-1", WIRE_1_CASE, "", "it broke")
    path.write_text(json.dumps(saved(target_args=["--target", "exec:node a.mjs"])), encoding="utf-8")
    assert read_case(path).target_args == ("--target", "exec:node a.mjs")


NOT_A_CASE_FILE = 'not a case file (expected "format": "cascade-conformance-case")'


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([saved()], NOT_A_CASE_FILE),
        ("cascade-conformance-case", NOT_A_CASE_FILE),
        (saved(format="something-else"), NOT_A_CASE_FILE),
        (saved(format=...), NOT_A_CASE_FILE),
        (saved(version=2), "case file version 2; this kit reads version 1"),
        (saved(version="1"), "case file version '1'; this kit reads version 1"),
        (saved(version=...), "case file version None; this kit reads version 1"),
        # JSON true and 1.0 compare equal to 1 in Python; a case file's version is the integer 1
        (saved(version=True), "case file version True; this kit reads version 1"),
        (saved(version=1.0), "case file version 1.0; this kit reads version 1"),
        (saved(invariant="WIRE-9"), "unknown invariant 'WIRE-9'"),
        (saved(invariant="wire-1"), "unknown invariant 'wire-1'"),
        (saved(invariant=...), "unknown invariant None"),
        (saved(invariant=["WIRE-1"]), "unknown invariant ['WIRE-1']"),
        (saved(invariant={"id": "WIRE-1"}), "unknown invariant {'id': 'WIRE-1'}"),
        (saved(case=...), '"case" must be an object'),
        (saved(case=[WIRE_1_CASE]), '"case" must be an object'),
        (saved(case="0a0178"), '"case" must be an object'),
        (saved(target_args="--target exec:x"), '"target_args" must be a list of strings'),
        (saved(target_args=["--target", 1]), '"target_args" must be a list of strings'),
    ],
)
def test_a_document_that_is_not_a_readable_case_is_refused_in_one_line(
    tmp_path: Path, document: object, message: str
) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert refusal(path) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not valid JSON: Expecting value at line 1"),
        (
            '{\n  "format": "cascade-conformance-case"\n  "version": 1\n}\n',
            "not valid JSON: Expecting ',' delimiter at line 3",
        ),
    ],
)
def test_a_file_that_is_not_json_is_refused_with_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "case.json"
    path.write_text(text, encoding="utf-8")
    assert refusal(path) == f"{path}: {message}"


@pytest.mark.parametrize(("kind", "strerror"), [("missing", "No such file or directory"), ("folder", "Is a directory")])
def test_a_file_that_cannot_be_read_is_refused_with_the_systems_reason(
    tmp_path: Path, kind: str, strerror: str
) -> None:
    path = tmp_path / "case.json"
    if kind == "folder":
        path.mkdir()
    assert refusal(path) == f"{path}: cannot read: {strerror}"


def test_replaying_a_file_that_is_not_a_case_is_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(saved(invariant=["WIRE-1"])), encoding="utf-8")
    assert main(["replay", str(path), "--cache-dir", str(tmp_path / "cache")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"cascade-conformance: {path}: unknown invariant ['WIRE-1']\n"
    assert captured.out == ""


def test_a_known_failure_pinned_to_a_file_that_is_not_a_case_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Never judged as the listed failure: the pinned file is refused before any verdict."""
    (tmp_path / "pinned.json").write_text(json.dumps(saved(version=2)), encoding="utf-8")
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - {id: WIRE-1, reason: r, case: pinned.json}\n", encoding="utf-8")
    report = tmp_path / "report"
    assert main(["run", "--only", "WIRE-1", "--known-failures", str(known), "--report", str(report)]) == 2
    captured = capsys.readouterr()
    # the refusal is a line of its own, after the invariant's progress line it interrupted
    assert captured.err.splitlines()[-2:] == [
        "[1/1] WIRE-1 ...",
        f"cascade-conformance: {(tmp_path / 'pinned.json').resolve()}: case file version 2; this kit reads version 1",
    ]
    assert captured.out == ""
    assert not (report / "report.md").exists()


def test_a_file_that_is_not_utf8_is_refused_with_its_path_and_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_bytes(b'{"format": "\xff"}')
    assert refusal(path) == f"{path}: not UTF-8 text: invalid start byte at byte 12"

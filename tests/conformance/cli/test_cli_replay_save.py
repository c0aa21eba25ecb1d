"""``cascade-conformance replay`` and ``save-case`` in process: what a replayed case prints for each
verdict and its exit code, where Hypothesis keeps its storage meanwhile, and how a saved case is
copied out of a report (or refused). The properties are toys (cli_support.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.cases import read_case
from conformance.cli import main
from conformance.program import kit_program
from conformance.properties import Case, Check, Evidence
from conformance.results_document import RESULTS_SCHEMA
from conformance.targets import Target
from tests.conformance.cli.cli_support import (
    FAILS,
    NOTHING,
    PARTIAL,
    PASSES,
    TARGET_ERROR,
    TELLS_WHERE,
    UNMET,
    fails_twice,
    only_these,
    timeless,
    toy,
)

WIRE_1 = "Every RPC of the cascade flow decodes field for field as real clients…"


def _case(path: Path, invariant: str = "WIRE-1", case: Case | None = None) -> Path:
    document = {"format": "cascade-conformance-case", "version": 1, "invariant": invariant, "case": case or {"n": 7}}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _big_evidence(target: Target, case: Case, evidence: Evidence) -> None:
    evidence.add("where", Path("/srv/gateway"))  # not JSON: shown as its text
    evidence.add("text", "é" * 30000)
    raise AssertionError("too much")


@pytest.mark.parametrize(
    ("check", "code", "printed"),
    [
        (PASSES, 0, [f"WIRE-1   pass                    1 ex   Ts  {WIRE_1}"]),
        (
            PARTIAL,
            0,
            [
                f"WIRE-1   pass (partial: drop counters not exposed by the target)    1 ex   Ts  {WIRE_1}",
                "partial: drop counters not exposed by the target",
            ],
        ),
        (
            UNMET,
            0,
            [
                f"WIRE-1   not checkable                         {WIRE_1}",
                "not checkable on this case: the target never resumed",
            ],
        ),
        (FAILS, 1, [f"WIRE-1   fail                    1 ex   Ts  {WIRE_1}", "n is 7", "{", '  "seen": 7', "}"]),
        (
            TARGET_ERROR,
            1,
            [f"WIRE-1   error                   1 ex   Ts  {WIRE_1}", "the target misbehaved: it hung up"],
        ),
    ],
)
def test_a_replay_prints_the_verdict_then_the_message_and_evidence_of_a_verdict_that_is_not_a_pass(
    check: Check,
    code: int,
    printed: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    only_these(monkeypatch, toy("WIRE-1", check))
    case = _case(tmp_path / "case.json")
    report = tmp_path / "r"
    assert (
        main(["replay", str(case), "--target", NOTHING, "--cache-dir", str(tmp_path), "--report", str(report)]) == code
    )
    reports = f"reports: {report}/report.md {report}/junit.xml {report}/results.json"
    assert timeless(capsys.readouterr().out).splitlines() == [*printed, reports]


def test_a_replay_writes_the_reports_of_a_run_of_its_one_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", FAILS))
    case = _case(tmp_path / "case.json")
    report = tmp_path / "r"
    (report / "cases").mkdir(parents=True)
    (report / "cases" / "so-1.json").write_text("{}", encoding="utf-8")  # an earlier run's: not this one's
    assert main(["replay", str(case), "--target", NOTHING, "--report", str(report)]) == 1
    capsys.readouterr()
    document = json.loads((report / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, RESULTS_SCHEMA)
    (verdict,) = document["invariants"]
    assert (verdict["id"], verdict["status"], document["exit_code"]) == ("WIRE-1", "fail", 1)
    assert document["command"] == f"{kit_program()} replay {case} --target {NOTHING} --report {report}"
    (failure,) = verdict["failures"]
    assert failure["replay"] == f"{kit_program()} replay {report}/cases/wire-1.json --target {NOTHING}"
    assert read_case(report / "cases" / "wire-1.json").case == {"n": 7}
    assert sorted(p.name for p in (report / "cases").iterdir()) == ["wire-1.json"]
    markdown = (report / "report.md").read_text(encoding="utf-8")
    assert f"- Replayed: `{case}` (one saved case, no search)\n" in markdown
    assert "**exit status 1: 1 invariant(s): 1 fail**" in markdown
    assert 'name="status" value="fail"' in (report / "junit.xml").read_text(encoding="utf-8")


def test_replayed_evidence_is_json_with_its_text_as_is_cut_at_20000_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", _big_evidence))
    argv = ["replay", str(_case(tmp_path / "case.json")), "--target", NOTHING, "--report", str(tmp_path / "r")]
    assert main(argv) == 1
    _, message, evidence = capsys.readouterr().out.split("\n", 2)
    assert message == "too much"
    whole = '{\n  "where": "/srv/gateway",\n  "text": "' + "é" * 30000 + '"\n}'
    assert (
        evidence
        == whole[:20000] + f"\nreports: {tmp_path}/r/report.md {tmp_path}/r/junit.xml {tmp_path}/r/results.json\n"
    )


def test_a_replay_keeps_hypothesis_storage_in_the_default_report_folder_or_the_cache_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", TELLS_WHERE))
    monkeypatch.chdir(tmp_path)
    case = str(_case(tmp_path / "case.json"))
    assert main(["replay", case, "--target", NOTHING]) == 1
    assert (
        capsys.readouterr()
        .out.splitlines()[1]
        .startswith(f"storage {tmp_path / 'reports' / 'conformance' / 'hypothesis'}; ")
    )
    assert main(["replay", case, "--target", NOTHING, "--cache-dir", "mine"]) == 1
    assert capsys.readouterr().out.splitlines()[1].startswith(f"storage {tmp_path / 'mine'}; ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", "{tmp}/none.json"], "{tmp}/none.json: cannot read: No such file or directory"),
        (["replay", "{tmp}/case-of-wire-2.json"], "WIRE-2 has no property in this kit"),
        (
            ["replay", "{tmp}/case.json", "--target", "nonsense"],
            "'nonsense' is not a target. Use python:PACKAGE.MODULE:FACTORY (an in-process object), exec:COMMAND "
            "(an adapter speaking JSON lines), http://127.0.0.1:PORT (a gateway over HTTP), or reference (the kit's "
            "own reference, the default)",
        ),
        (
            ["replay", "{tmp}/case.json", "--target", "python:tests.support.plugin_targets:fails_to_start"],
            "the target failed to start: the gateway did not answer on 127.0.0.1:9",
        ),
        (["save-case", "WIRE-1", "--report", "{tmp}", "--out", "{tmp}/out.json"], ""),
    ],
)
def test_bad_input_to_replay_and_save_case_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES))
    _case(tmp_path / "case.json")
    _case(tmp_path / "case-of-wire-2.json", "WIRE-2")
    if not message:  # save-case of a folder that holds no report
        message = f"no report in {tmp_path}: run `cascade-conformance run` first, or name its folder with --report"
    assert main([arg.replace("{tmp}", str(tmp_path)) for arg in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"cascade-conformance: {message.replace('{tmp}', str(tmp_path))}\n"
    assert captured.out == ""
    assert not (tmp_path / "out.json").exists()


def test_save_case_copies_a_reports_case_by_its_id_in_any_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, fails_twice("WIRE-2"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--target", NOTHING, "--only", "WIRE-2"]) == 1  # the default report folder
    capsys.readouterr()
    out = tmp_path / "mine" / "deeper" / "second.json"
    assert main(["save-case", "Wire-2-2", "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"saved {out} (replay: {kit_program()} replay {out} --target {NOTHING})\n"
    saved = tmp_path / "reports" / "conformance" / "cases" / "wire-2-2.json"
    assert out.read_bytes() == saved.read_bytes()
    assert json.loads(out.read_text(encoding="utf-8"))["case"] == {"k": "a"}
    beside = out.parent / "first.json"  # into a folder that already exists
    assert main(["save-case", "WIRE-2", "--out", str(beside)]) == 0
    assert beside.read_bytes() == saved.with_name("wire-2.json").read_bytes()


def test_save_case_refuses_a_file_that_is_not_a_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "wire-1.json").write_text('{"format": "something else"}', encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["save-case", "WIRE-1", "--report", str(tmp_path), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f'cascade-conformance: {tmp_path}/cases/wire-1.json: not a case file (expected "format": '
        '"cascade-conformance-case")\n'
    )
    assert not out.exists()


def test_a_case_file_that_is_not_utf_8_is_refused_on_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "case.json"
    binary.write_bytes(b"\xff\xfe{}")
    assert main(["replay", str(binary), "--target", NOTHING]) == 2
    assert capsys.readouterr().err == f"cascade-conformance: {binary}: not UTF-8 text: invalid start byte at byte 0\n"


def test_save_case_of_an_invariant_that_did_not_fail_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES), fails_twice("WIRE-2"))
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1,WIRE-2", "--report", str(tmp_path)]) == 1
    capsys.readouterr()
    assert main(["save-case", "wire-1", "--report", str(tmp_path), "--out", str(tmp_path / "out.json")]) == 2
    assert capsys.readouterr().err == (
        f"cascade-conformance: WIRE-1 has no case in {tmp_path}: it did not fail in that run (only failures are "
        "saved as cases; `ls` the folder's cases/ to see which are)\n"
    )
    assert not (tmp_path / "out.json").exists()


def test_a_saved_case_replays_on_the_target_and_options_it_was_found_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay hint carries the target and its options, as ``run``'s replay lines do; a replay
    without --target of a case found elsewhere says which target it runs on."""
    only_these(monkeypatch, fails_twice("WIRE-2"))
    argv = ["run", "--target", NOTHING, "--only", "WIRE-2", "--report", str(tmp_path)]
    assert main(argv) == 1
    run_lines = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("replay:")]
    out = tmp_path / "mine.json"
    assert main(["save-case", "WIRE-2", "--report", str(tmp_path), "--out", str(out)]) == 0
    saved = capsys.readouterr().out
    assert saved == f"saved {out} (replay: {kit_program()} replay {out} --target {NOTHING})\n"
    assert run_lines[0] == f"replay: {kit_program()} replay {tmp_path / 'cases' / 'wire-2.json'} --target {NOTHING}"
    assert json.loads(out.read_text(encoding="utf-8"))["found_on"] == NOTHING
    replay = ["replay", str(out), "--report", str(tmp_path / "replayed")]
    main(replay)
    assert capsys.readouterr().out.splitlines()[0] == (
        f"replaying on the reference; this case was found on {NOTHING}: add --target {NOTHING} to replay it there"
    )
    document = json.loads(out.read_text(encoding="utf-8"))
    del document["target_args"]  # a case file from before target_args were kept
    out.write_text(json.dumps(document), encoding="utf-8")
    main(replay)
    assert capsys.readouterr().out.splitlines()[0] == (
        f"replaying on the reference; this case was found on {NOTHING}: add --target {NOTHING} (and its options) "
        "to replay it there"
    )
    main([*replay, "--target", NOTHING])  # on the target it names: no note
    assert not capsys.readouterr().out.startswith("replaying on")

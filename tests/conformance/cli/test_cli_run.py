"""``cascade-conformance run`` in process: the progress lines on stderr, the result page on stdout
(a line per invariant, the counts, the reports, every unexpected failure with its replay commands),
the exit code, and what a run leaves behind in its host process (loggers, Hypothesis's storage).

The properties are toys (tests/conformance/cli/cli_support.py) with known verdicts; the CLI, the runner
and the report writers are the real ones."""

from __future__ import annotations

import io
import json
import logging
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from hypothesis import configuration
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning

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

EVERY_VERDICT_OUT = """\
WIRE-1   pass                    1 ex   Ts  Every RPC of the cascade flow decodes field for field as real clients…
WIRE-2   fail (2 distinct failures)    6 ex   Ts  Unknown fields survive decoding and are reported in the journal…
WIRE-3   fail                    2 ex   Ts  Malformed frames or protobuf get a clean gRPC error; the server stays…
IMG-1    not checkable                         Images of every replayed turn reach field 6, within the bounds…
         not checkable on this target: in all 1 examples the target never resumed
IMG-2    pass (partial: drop counters not exposed by the target)    1 ex   Ts  Ordinals: current-turn images are \
#1..k, history images follow…
IMG-3    error                   2 ex   Ts  Bounds: at most CASCADE_MAX_HISTORY_IMAGES (4) images and…
OFF-1    not checkable                         Generator-metadata parsing keeps the record count when no record…
         not checkable on this target: it lacks ls.serve
7 invariant(s): 1 pass, 1 partial, 2 fail, 1 error, 2 not checkable
reports: R/report.md R/junit.xml R/results.json

WIRE-2 fail [1/2]: b is wrong too

WIRE-2 fail [2/2]: a is wrong
  replay: cascade-conformance replay R/cases/wire-2.json --target NOTHING
  replay: cascade-conformance replay R/cases/wire-2-2.json --target NOTHING

WIRE-3 fail: n is 1
  replay: cascade-conformance replay R/cases/wire-3.json --target NOTHING

IMG-3 error: the target misbehaved: it hung up
  replay: cascade-conformance replay R/cases/img-3.json --target NOTHING
"""

EVERY_VERDICT_ERR = """\
target: python:tests.support.broken_targets:implements_nothing
[1/7] WIRE-1 ... pass (Ts)
[2/7] WIRE-2 ... fail (2 distinct failures) (Ts)
[3/7] WIRE-3 ... fail (Ts)
[4/7] IMG-1 ... not checkable (Ts)
[5/7] IMG-2 ... pass (partial: drop counters not exposed by the target) (Ts)
[6/7] IMG-3 ... error (Ts)
[7/7] OFF-1 ... not checkable (Ts)
"""


@pytest.fixture
def every_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    only_these(
        monkeypatch,
        toy("WIRE-1", PASSES),
        fails_twice("WIRE-2"),
        toy("WIRE-3", FAILS),
        toy("IMG-1", UNMET),
        toy("IMG-2", PARTIAL),
        toy("IMG-3", TARGET_ERROR),
        toy("OFF-1", PASSES, needs=("ls.serve",)),
    )


def _page(text: str, report: Path) -> str:
    text = text.replace(f"{kit_program()} replay", "cascade-conformance replay")
    return timeless(text.replace(str(report), "R").replace(f"--target {NOTHING}", "--target NOTHING"))


@pytest.mark.usefixtures("every_verdict")
def test_a_run_prints_progress_then_results_counts_reports_and_each_unexpected_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = "wire,img,off-1"
    assert main(["run", "--target", NOTHING, "--only", only, "--report", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert _page(captured.out, tmp_path) == EVERY_VERDICT_OUT
    assert _page(captured.err, tmp_path) == EVERY_VERDICT_ERR
    cases = sorted(p.name for p in (tmp_path / "cases").iterdir())
    assert cases == ["img-3.json", "wire-2-2.json", "wire-2.json", "wire-3.json"]
    saved = json.loads((tmp_path / "cases" / "wire-3.json").read_text(encoding="utf-8"))
    assert (saved["found_on"], saved["message"], saved["case"]) == (NOTHING, "n is 1", {"n": 1})
    assert f"\n- Target: `{NOTHING}`\n" in (tmp_path / "report.md").read_text(encoding="utf-8")
    header = (tmp_path / "report.md").read_text(encoding="utf-8").split("\n| invariant |")[0]
    assert "\n- Kit: cascade-conformance " in header
    assert "\n- Profile: ci (derandomized), shrinking on, the profile's examples per invariant\n" in header
    assert "\n- Started: 20" in header
    assert not (tmp_path / "gateway-output.log").exists(), "only a launched gateway has output to keep"


@pytest.mark.usefixtures("every_verdict")
def test_results_json_holds_every_verdict_as_one_word_with_its_examples_failures_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--target", NOTHING, "--only", "wire,img,off-1", "--report", str(tmp_path)]) == 1
    capsys.readouterr()
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, RESULTS_SCHEMA)
    assert (document["schema"], document["target"], document["profile"], document["seed"]) == (1, NOTHING, "ci", None)
    assert document["started"].startswith("20")
    assert document["interrupted"] is None
    by_id = {entry["id"]: entry for entry in document["invariants"]}
    assert {inv: entry["status"] for inv, entry in by_id.items()} == {
        "WIRE-1": "pass",
        "WIRE-2": "fail",
        "WIRE-3": "fail",
        "IMG-1": "not-checkable",
        "IMG-2": "partial",
        "IMG-3": "error",
        "OFF-1": "not-checkable",
    }
    wire2 = by_id["WIRE-2"]
    assert wire2["verdict"] == "fail (2 distinct failures)"  # the display line, apart from the word
    assert [f["message"] for f in wire2["failures"]] == ["b is wrong too", "a is wrong"]
    cases = [f["case_file"] for f in wire2["failures"]]
    assert cases == [str(tmp_path / "cases" / "wire-2.json"), str(tmp_path / "cases" / "wire-2-2.json")]
    assert [f["replay"] for f in wire2["failures"]] == [
        f"{kit_program()} replay {case} --target {NOTHING}" for case in cases
    ]
    assert by_id["IMG-1"]["examples"]["not_judged"] >= 1
    assert by_id["IMG-1"]["examples"]["reasons"]
    assert by_id["WIRE-1"]["failures"] == []


@pytest.mark.usefixtures("every_verdict")
def test_a_run_without_only_ends_with_the_count_of_invariants_not_yet_implemented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert _page(out, tmp_path) == EVERY_VERDICT_OUT + (
        "44 of 51 catalogue invariants are not yet implemented (WIRE-4, IMG-4, IMG-5, IMG-6, IMG-7, IMG-8, OFF-2, "
        "OFF-3, OFF-4, OFF-5, SO, ACC, STORE, ATT, TURN, SCOPE, REQ): "
        "`cascade-conformance list` shows them\n"
    )


@pytest.mark.parametrize(
    ("verdicts", "code", "counts", "after"),
    [
        ((PASSES,), 0, "1 invariant(s): 1 pass", 0),
        ((PARTIAL,), 0, "1 invariant(s): 1 partial", 0),
        ((UNMET,), 1, "1 invariant(s): 1 not checkable", 2),  # nothing judged: a blank line and why
        ((UNMET, UNMET), 1, "2 invariant(s): 2 not checkable", 2),
        ((PASSES, PARTIAL, UNMET), 0, "3 invariant(s): 1 pass, 1 partial, 1 not checkable", 0),
        ((PASSES, FAILS), 1, "2 invariant(s): 1 pass, 1 fail", 3),  # a blank line, its message, its replay
        ((TARGET_ERROR, PASSES), 1, "2 invariant(s): 1 pass, 1 error", 3),
    ],
)
def test_the_exit_code_is_1_exactly_when_a_verdict_is_unexpected_or_nothing_was_judged(
    verdicts: tuple[Check, ...],
    code: int,
    counts: str,
    after: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = ["WIRE-1", "WIRE-2", "WIRE-3"][: len(verdicts)]
    only_these(monkeypatch, *(toy(inv_id, check) for inv_id, check in zip(ids, verdicts, strict=True)))
    assert main(["run", "--target", NOTHING, "--only", ",".join(ids), "--report", str(tmp_path)]) == code
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(counts)
    assert [line.split()[0] for line in lines[:at] if not line.startswith(" ")] == ids
    assert lines[at + 1] == f"reports: {tmp_path}/report.md {tmp_path}/junit.xml {tmp_path}/results.json"
    assert len(lines) == at + 2 + after
    if verdicts.count(UNMET) == len(verdicts):
        assert lines[-1].startswith(f"nothing was judged: all {len(ids)} invariant(s) were not checkable")


def test_a_failure_without_a_case_has_no_replay_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A known failure that passes is unexpected, and it has no case: only its message is printed.
    only_these(monkeypatch, toy("WIRE-1", PASSES))
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - {id: WIRE-1, reason: ISSUE-9}\n", encoding="utf-8")
    argv = ["run", "--target", NOTHING, "--only", "WIRE-1", "--known-failures", str(known), "--report", str(tmp_path)]
    assert main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "",
        "WIRE-1 known failure passed: listed as a known failure (ISSUE-9) but it passes: remove it from the list",
    ]


def test_the_run_sets_the_kit_loggers_to_the_log_level_and_restores_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", TELLS_WHERE))
    loggers = [logging.getLogger("engine"), logging.getLogger("fakels")]
    for level, logger in zip((5, 35), loggers, strict=True):
        monkeypatch.setattr(logger, "level", level)
    cache = tmp_path / "cache"
    for flags, levels in (
        ([], "{'engine': 40, 'fakels': 40}"),
        (["--log-level", "DEBUG"], "{'engine': 10, 'fakels': 10}"),
    ):
        argv = ["run", "--target", NOTHING, "--only", "WIRE-1", "--report", str(tmp_path), "--cache-dir", str(cache)]
        assert main([*argv, *flags]) == 1
        assert f"WIRE-1 fail: storage {cache.resolve()}; levels {levels}" in capsys.readouterr().out
        assert [logger.level for logger in loggers] == [5, 35]


@pytest.fixture
def hypothesis_home() -> Iterator[Path]:
    """A known Hypothesis home before main() runs, put back as it was afterwards."""
    before = vars(configuration).get("__hypothesis_home_directory")
    configuration.set_hypothesis_home_dir("/nonexistent/host-home")
    yield Path("/nonexistent/host-home")
    configuration.set_hypothesis_home_dir(before)


def test_hypothesis_storage_is_under_the_report_folder_during_a_run_and_restored_after(
    hypothesis_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    only_these(monkeypatch, toy("WIRE-1", TELLS_WHERE))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1", "--report", "r"]) == 1
    assert f"WIRE-1 fail: storage {tmp_path / 'r' / 'hypothesis'}; " in capsys.readouterr().out
    assert vars(configuration)["__hypothesis_home_directory"] == hypothesis_home
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1"]) == 1
    out = capsys.readouterr().out
    assert f"WIRE-1 fail: storage {tmp_path / 'reports' / 'conformance' / 'hypothesis'}; " in out
    assert (tmp_path / "reports" / "conformance" / "report.md").is_file()
    assert vars(configuration)["__hypothesis_home_directory"] == hypothesis_home


def test_failing_examples_are_kept_in_the_example_db_and_a_thorough_runs_database_beside_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    at_least_5 = st.fixed_dictionaries({"n": st.integers(min_value=5)})  # a minimal example worth keeping
    only_these(monkeypatch, toy("WIRE-1", FAILS, cases=at_least_5))
    argv = ["run", "--target", NOTHING, "--only", "WIRE-1", "--report", str(tmp_path / "r")]
    assert main([*argv, "--example-db", str(tmp_path / "db")]) == 1
    (target,) = (tmp_path / "db").iterdir()  # one folder per target
    assert [p.name for p in (target / "wire-1").iterdir()] == ["001.json"]
    assert not (target / "hypothesis").exists(), "a derandomized run needs no Hypothesis database"
    assert main([*argv, "--example-db", str(tmp_path / "db2"), "--profile", "thorough"]) == 1
    (target,) = (tmp_path / "db2").iterdir()
    assert any(path.is_file() for path in (target / "hypothesis").rglob("*"))
    assert main(argv) == 1
    assert list((tmp_path / "r" / "examples").glob("*/wire-1/001.json")), "the default: REPORT/examples"
    assert not (tmp_path / "r" / "hypothesis" / "examples").exists()
    capsys.readouterr()


def test_a_thorough_run_with_a_seed_draws_the_same_examples_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []

    def records(target: Target, case: Case, evidence: Evidence) -> None:
        drawn.append(case["n"])

    only_these(monkeypatch, toy("WIRE-1", records, cases=st.fixed_dictionaries({"n": st.integers()})))
    runs = []
    for _ in range(2):
        argv = ["run", "--target", NOTHING, "--only", "WIRE-1", "--report", str(tmp_path), "--profile", "thorough"]
        assert main([*argv, "--seed", "20261130"]) == 0
        runs.append(drawn.copy())
        drawn.clear()
    assert len(runs[0]) == 300
    assert runs[0] == runs[1]
    capsys.readouterr()


@pytest.mark.parametrize(("flags", "examples"), [([], 40), (["--profile", "thorough"], 300)])
def test_the_profile_sets_how_many_examples_a_property_gets(
    flags: list[str], examples: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES, cases=st.fixed_dictionaries({"n": st.integers()})))
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1", "--report", str(tmp_path), *flags]) == 0
    assert capsys.readouterr().out.startswith(f"WIRE-1   pass                  {examples:>3} ex ")


def test_an_interrupt_ends_the_progress_line_stops_the_run_and_reports_what_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(target: Target, case: Case, evidence: Evidence) -> None:
        raise KeyboardInterrupt

    ran: list[str] = []

    def counted(target: Target, case: Case, evidence: Evidence) -> None:
        ran.append("WIRE-3")

    only_these(monkeypatch, toy("WIRE-1", PASSES), toy("WIRE-2", interrupted), toy("WIRE-3", counted))
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 130
    captured = capsys.readouterr()
    assert timeless(captured.err) == (
        f"target: {NOTHING}\n[1/3] WIRE-1 ... pass (Ts)\n[2/3] WIRE-2 ...\n\n"
        "interrupted during WIRE-2: 1 of 3 finished\n"
    )
    assert [line.split()[:2] for line in captured.out.splitlines()[:2]] == [["WIRE-1", "pass"], ["1", "invariant(s):"]]
    assert "1 invariant(s): 1 pass" in captured.out
    assert ran == []
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "- **Stopped early**: interrupted during WIRE-2: 1 of 3 finished" in report
    table = report.split("| invariant |")[1].split("\n\n")[0]
    assert ("WIRE-1" in table, "WIRE-2" in table) == (True, False)


def test_the_progress_line_shows_while_its_property_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """stderr is line-buffered: a line without its end yet reaches the terminal only when flushed."""
    terminal = io.BytesIO()
    monkeypatch.setattr("sys.stderr", io.TextIOWrapper(terminal, encoding="utf-8", line_buffering=True))
    shown: list[bytes] = []

    def looks(target: Target, case: Case, evidence: Evidence) -> None:
        shown.append(terminal.getvalue())

    only_these(monkeypatch, toy("WIRE-1", looks), toy("WIRE-2", looks))
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1,WIRE-2", "--report", str(tmp_path)]) == 0
    assert shown[0] == f"target: {NOTHING}\n[1/2] WIRE-1 ...".encode()
    assert shown[-1].startswith(f"target: {NOTHING}\n[1/2] WIRE-1 ... pass (".encode())
    assert shown[-1].endswith(b"s)\n[2/2] WIRE-2 ...")


def test_warnings_raised_while_a_property_runs_go_to_the_report_not_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def warns(target: Target, case: Case, evidence: Evidence) -> None:
        warnings.warn("Generating overly large repr. This is an expensive operation", HypothesisWarning, stacklevel=1)
        warnings.warn("a target's own deprecation", DeprecationWarning, stacklevel=1)

    cases = st.integers(0, 5).map(lambda n: {"n": n})
    only_these(monkeypatch, toy("WIRE-1", warns, cases=cases), toy("WIRE-2", PASSES))
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "overly large" not in captured.err + captured.out
    assert "deprecation" not in captured.err + captured.out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = report.split("## Warnings while the properties ran\n\n")[1].split("\n\n")[0]
    assert section.splitlines() == [
        "- **WIRE-1**: HypothesisWarning: Generating overly large repr. This is an expensive operation",
        "- **WIRE-1**: DeprecationWarning: a target's own deprecation",
    ]


def _profile_line(report: Path) -> str:
    (line,) = [ln for ln in (report / "report.md").read_text(encoding="utf-8").splitlines() if "- Profile:" in ln]
    return line


@pytest.mark.parametrize(
    ("target", "flags", "shrinking"),
    [
        (NOTHING, [], "shrinking on"),
        (NOTHING, ["--shrink-budget", "2.5"], "shrinking on (budget 2.5 s)"),
        (NOTHING, ["--shrink-budget", "0"], "shrinking on (budget 0 s)"),
        (f"exec:{sys.executable} -m conformance.adapter {NOTHING}", [], "shrinking on (budget 60 s)"),
        (
            f"exec:{sys.executable} -m conformance.adapter {NOTHING}",
            ["--shrink-budget", "7"],
            "shrinking on (budget 7 s)",
        ),
        (f"exec:{sys.executable} -m conformance.adapter {NOTHING}", ["--no-shrink"], "shrinking off"),
    ],
    ids=["python", "python-given", "python-zero", "exec", "exec-given", "exec-no-shrink"],
)
def test_the_report_shows_the_shrink_budget_given_or_the_targets_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, flags: list[str], shrinking: str
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES))
    assert main(["run", "--target", target, *flags, "--report", str(tmp_path)]) == 0
    assert _profile_line(tmp_path) == f"- Profile: ci (derandomized), {shrinking}, the profile's examples per invariant"


def test_a_failure_whose_shrinking_was_cut_short_is_reported_with_the_smallest_case_found_so_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def sums_past_500(target: Target, case: Case, evidence: Evidence) -> None:
        time.sleep(0.001)
        if sum(case["xs"]) > 500:
            raise AssertionError("the numbers sum past 500")

    cases = st.lists(st.integers(0, 1000), min_size=5, max_size=30).map(lambda xs: {"xs": xs})
    only_these(monkeypatch, toy("WIRE-1", sums_past_500, cases=cases))
    assert main(["run", "--target", NOTHING, "--shrink-budget", "0", "--report", str(tmp_path)]) == 1
    message = "the numbers sum past 500 (shrinking cut short after 0 s: the smallest case found so far)"
    assert f"\nWIRE-1 fail: {message}\n" in capsys.readouterr().out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"\n```\n{message}\n```\n\nSmallest counterexample found before shrinking was cut short:\n" in report
    saved = json.loads((tmp_path / "cases" / "wire-1.json").read_text(encoding="utf-8"))
    assert saved["message"] == message
    assert sum(saved["case"]["xs"]) > 500


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_progress_line_counts_the_examples_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    cases = st.integers(0, 2).map(lambda n: {"n": n})
    only_these(monkeypatch, toy("WIRE-1", PASSES, cases=cases), toy("WIRE-2", PASSES))
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 0
    first, second = timeless(terminal.getvalue()).split("\n")[1:3]
    head = "\r[1/2] WIRE-1 ..."
    counted = [f"{head} example {n}\x1b[K" for n in range(1, 4)]
    assert first == "[1/2] WIRE-1 ..." + "".join(counted) + f"{head} pass (Ts)\x1b[K"
    assert second == "[2/2] WIRE-2 ...\r[2/2] WIRE-2 ... example 1\x1b[K\r[2/2] WIRE-2 ... pass (Ts)\x1b[K"

"""Unit tests of the run's reports (conformance/report.py) on hand-built results: the console's
summary lines, the replay command, the saved case files, the JUnit XML and the Markdown report,
checked field for field as a user (or a CI server) reads them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from conformance.cases import read_case
from conformance.catalogue import CATALOGUE
from conformance.report import (
    _clip,
    replay_command,
    save_failure_cases,
    summary_line,
    write_junit,
    write_markdown,
)
from conformance.runner import Failure, Result, Status
from tests.conformance.report.case_files_support import ascii_process_locale
from tests.conformance.report.report_support import TARGET, fail, failed

# --- summary lines -------------------------------------------------------------------------------


def test_a_summary_line_shows_id_verdict_figures_and_the_statement() -> None:
    result = Result(CATALOGUE["ATT-2"], Status.PASS, seconds=1.5, examples=12)
    assert summary_line(result) == (
        "ATT-2    pass                   12 ex   1.50s  Building a request never mutates history."
    )


def test_the_figures_column_right_aligns_examples_and_rounds_seconds() -> None:
    result = Result(CATALOGUE["ATT-2"], Status.PASS, seconds=123.456, examples=1234)
    assert summary_line(result) == (
        "ATT-2    pass                 1234 ex 123.46s  Building a request never mutates history."
    )


def test_a_result_without_examples_shows_blank_figures() -> None:
    result = Result(CATALOGUE["ATT-2"], Status.NOT_CHECKABLE, "not checkable: it lacks build", seconds=0.3)
    assert summary_line(result) == "ATT-2    not checkable" + " " * 25 + "Building a request never mutates history."


def test_the_statement_column_lines_up_with_and_without_figures() -> None:
    statement = CATALOGUE["ATT-2"].statement
    with_figures = summary_line(Result(CATALOGUE["ATT-2"], Status.PASS, seconds=0.25, examples=40))
    without = summary_line(Result(CATALOGUE["ATT-2"], Status.NOT_CHECKABLE, "it lacks build"))
    assert with_figures.index(statement) == without.index(statement) == 47


def test_a_long_verdict_pushes_the_figures_instead_of_being_cut() -> None:
    failures = [fail("no typed error", {"stream": True}), fail("a [DONE] after the error", {"stream": False})]
    line = summary_line(failed("SO-1", failures, seconds=2.0, examples=9))
    assert line.startswith("SO-1     fail (2 distinct failures)    9 ex   2.00s  A non-conforming answer")


@pytest.mark.parametrize(
    ("inv_id", "shown"),
    [
        # exactly 70 characters: shown whole
        ("ATT-7", "Exploration and compaction views show attachment counts, never base64."),
        # 71 characters: the word cut at the ellipsis goes
        ("SO-2", "A violating turn is neither cached nor committed to session…"),
        # a comma left before the ellipsis goes too
        ("IMG-7", "History images pass the same guards as current ones (SSRF, 5 MB…"),
        ("IMG-4", "Never silent: attached and dropped counters by reason (cap, bytes…"),
        ("OFF-4", "Over any sequence of turns, resumes, expiries and usage-less records…"),
    ],
)
def test_the_statement_is_clipped_at_a_word_to_70_characters(inv_id: str, shown: str) -> None:
    line = summary_line(Result(CATALOGUE[inv_id], Status.PASS, seconds=1.0, examples=3))
    assert line[47:] == shown
    assert len(shown) <= 70


@pytest.mark.parametrize(
    ("text", "clipped"),
    [
        ("x" * 69, "x" * 69),
        ("x" * 70, "x" * 70),
        ("x" * 71, "x" * 69 + "…"),  # one long token: cut hard, the ellipsis within the width
        ("ab " * 23 + "c", "ab " * 23 + "c"),  # 70 characters: whole
        ("ab " * 23 + "cd", "ab " * 22 + "ab…"),  # 71: cut at the last space before the ellipsis
        ("word; " * 12, "word; " * 10 + "word…"),  # ";" before the cut goes
        ("CASCADE_MAX " * 6, "CASCADE_MAX " * 4 + "CASCADE_MAX…"),  # only ",;:" are dropped from a word
    ],
)
def test_clipping_keeps_within_the_width_at_a_word_boundary(text: str, clipped: str) -> None:
    assert _clip(text, 70) == clipped
    assert len(clipped) <= 70


def test_clipping_never_exceeds_the_width_when_a_word_ends_at_it() -> None:
    assert _clip("abc defghi jkl", 10) == "abc…"  # "abc defghi…" would be 11
    assert _clip("alpha: beta gamma", 9) == "alpha…"


def test_clipping_keeps_a_whole_word_that_fits_with_the_ellipsis() -> None:
    assert _clip("abc defghi jkl", 11) == "abc defghi…"  # 11 characters: the word fits
    assert _clip("abc defghi jkl", 12) == "abc defghi…"


# --- replay commands -----------------------------------------------------------------------------


def test_the_replay_command_quotes_paths_and_omits_a_missing_target() -> None:
    path = Path("my reports/cases/img-3.json")
    assert replay_command(path, "python:engine") == (
        "cascade-conformance replay 'my reports/cases/img-3.json' --target python:engine"
    )
    assert replay_command(path, "") == "cascade-conformance replay 'my reports/cases/img-3.json'"
    assert replay_command(path, None, " --api-key k") == (
        "cascade-conformance replay 'my reports/cases/img-3.json' --api-key k"
    )


# --- saved failure cases -------------------------------------------------------------------------


def test_every_distinct_failure_with_a_case_is_saved_numbered_by_its_position(tmp_path: Path) -> None:
    failures = [
        fail("4 images attached, cap is 4; got 5", {"turns": 3}),
        fail("the target misbehaved: reset", None, Status.ERROR),
        fail("byte bound exceeded", {"turns": 1, "bytes": 1600001}),
    ]
    saved = save_failure_cases([failed("IMG-3", failures, Status.ERROR)], tmp_path, TARGET)
    assert saved == {"IMG-3": [tmp_path / "cases" / "img-3.json", tmp_path / "cases" / "img-3-3.json"]}
    assert sorted(p.name for p in (tmp_path / "cases").iterdir()) == ["img-3-3.json", "img-3.json"]
    first, third = (read_case(p) for p in saved["IMG-3"])
    assert (first.invariant, first.case, first.found_on, first.message) == (
        "IMG-3",
        {"turns": 3},
        TARGET,
        "4 images attached, cap is 4; got 5",
    )
    assert (third.invariant, third.case, third.message) == (
        "IMG-3",
        {"turns": 1, "bytes": 1600001},
        failures[2].message,
    )


def test_a_second_failure_is_saved_beside_the_first_not_over_it(tmp_path: Path) -> None:
    failures = [fail("no typed error", {"stream": True}), fail("a [DONE] after the error", {"stream": False})]
    saved = save_failure_cases([failed("SO-1", failures)], tmp_path, TARGET)
    assert saved == {"SO-1": [tmp_path / "cases" / "so-1.json", tmp_path / "cases" / "so-1-2.json"]}
    assert [read_case(p).case for p in saved["SO-1"]] == [{"stream": True}, {"stream": False}]


def test_a_result_without_a_failure_list_saves_its_own_case_and_message(tmp_path: Path) -> None:
    known = Result(CATALOGUE["SO-1"], Status.KNOWN_FAILURE, "issue 7: no typed error", {"stream": True})
    error = Result(CATALOGUE["WIRE-3"], Status.ERROR, "the target misbehaved: hung", {"frame": "00ff"})
    saved = save_failure_cases([known, error], tmp_path, TARGET)
    assert list(saved) == ["SO-1", "WIRE-3"]
    assert saved["SO-1"] == [tmp_path / "cases" / "so-1.json"]
    assert saved["WIRE-3"] == [tmp_path / "cases" / "wire-3.json"]
    case = read_case(saved["SO-1"][0])
    assert (case.case, case.message) == ({"stream": True}, "issue 7: no typed error")


@pytest.mark.parametrize("status", [Status.PASS, Status.PARTIAL, Status.NOT_CHECKABLE, Status.UNEXPECTED_PASS])
def test_a_passing_or_unchecked_result_saves_no_case_even_when_it_carries_one(tmp_path: Path, status: Status) -> None:
    result = Result(CATALOGUE["SO-1"], status, "replayed", {"stream": True}, examples=1)
    assert save_failure_cases([result], tmp_path, TARGET) == {}
    assert not (tmp_path / "cases").exists()


def test_a_failure_without_any_case_saves_nothing(tmp_path: Path) -> None:
    result = Result(CATALOGUE["WIRE-3"], Status.ERROR, "the target misbehaved: refused")
    assert save_failure_cases([result], tmp_path, TARGET) == {}


# --- JUnit XML -----------------------------------------------------------------------------------


def _junit(results: list[Result], path: Path) -> ET.Element:
    assert write_junit(results, path, TARGET) == path
    return ET.parse(path).getroot()


def _testcase(suite: ET.Element, inv_id: str) -> ET.Element:
    (case,) = [c for c in suite.iter("testcase") if c.get("name") == inv_id]
    return case


def _verdict(case: ET.Element) -> str | None:
    return _property(case, "verdict")


def _property(case: ET.Element, name: str) -> str | None:
    properties = {prop.get("name"): prop.get("value") for prop in case.findall("properties/property")}
    assert sorted(str(name) for name in properties) == ["status", "verdict"], properties
    return properties[name]


def _a_run() -> list[Result]:
    return [
        Result(CATALOGUE["WIRE-1"], Status.PASS, seconds=1.25, examples=40),
        Result(CATALOGUE["WIRE-2"], Status.PARTIAL, "partial: journal not exposed by the target", seconds=0.5),
        failed("SO-1", [fail("no typed error", {"stream": True})], seconds=0.0006, examples=3),
        Result(CATALOGUE["WIRE-3"], Status.ERROR, "the target misbehaved: hung\nafter 30 s", seconds=2.0),
        Result(CATALOGUE["SO-2"], Status.UNEXPECTED_PASS, "listed as a known failure (issue 7) but it passes"),
        Result(CATALOGUE["SO-3"], Status.KNOWN_FAILURE, "issue 9: frames reordered", {"n": 2}),
        Result(CATALOGUE["STORE-8"], Status.NOT_CHECKABLE, "not checkable on this target: it lacks store"),
    ]


def test_the_junit_suite_counts_each_verdict_where_ci_expects_it(tmp_path: Path) -> None:
    suite = _junit(_a_run(), tmp_path / "deep" / "dir" / "junit.xml")
    assert suite.tag == "testsuite"
    assert suite.attrib == {
        "name": "cascade-conformance",
        "tests": "7",
        "failures": "2",  # the failure and the known failure that passed
        "errors": "1",
        "skipped": "2",  # not checkable and the known failure
        "time": "3.751",
    }
    (target,) = suite.findall("properties/property")
    assert target.attrib == {"name": "target", "value": TARGET}
    assert [c.get("name") for c in suite.iter("testcase")] == [
        "WIRE-1",
        "WIRE-2",
        "SO-1",
        "WIRE-3",
        "SO-2",
        "SO-3",
        "STORE-8",
    ]


def test_each_junit_testcase_carries_one_status_word_beside_its_verdict_line(tmp_path: Path) -> None:
    """Programs read ``status`` (one word per kind of verdict); ``verdict`` is the line a person reads."""
    suite = _junit(_a_run(), tmp_path / "junit.xml")
    words = {case.get("name"): _property(case, "status") for case in suite.iter("testcase")}
    assert words == {
        "WIRE-1": "pass",
        "WIRE-2": "partial",
        "SO-1": "fail",
        "WIRE-3": "error",
        "SO-2": "unexpected-pass",
        "SO-3": "known-failure",
        "STORE-8": "not-checkable",
    }
    assert {status.word for status in Status} == set(words.values())


def test_each_junit_testcase_names_its_family_time_and_verdict(tmp_path: Path) -> None:
    suite = _junit(_a_run(), tmp_path / "junit.xml")
    wire1 = _testcase(suite, "WIRE-1")
    assert wire1.attrib == {"classname": "conformance.WIRE", "name": "WIRE-1", "time": "1.250"}
    assert [child.tag for child in wire1] == ["properties"]
    assert _verdict(wire1) == "pass"
    assert _testcase(suite, "SO-1").get("time") == "0.001"
    assert _testcase(suite, "STORE-8").get("classname") == "conformance.STORE"


def test_a_partial_pass_is_a_passing_testcase_whose_output_names_what_was_not_judged(tmp_path: Path) -> None:
    case = _testcase(_junit(_a_run(), tmp_path / "junit.xml"), "WIRE-2")
    assert [child.tag for child in case] == ["properties", "system-out"]
    assert _verdict(case) == "pass (partial: journal not exposed by the target)"
    assert case.findtext("system-out") == "partial: journal not exposed by the target"


@pytest.mark.parametrize(
    ("inv_id", "message"),
    [
        ("SO-3", "known failure: issue 9: frames reordered"),
        ("STORE-8", "not checkable: not checkable on this target: it lacks store"),
    ],
)
def test_known_and_not_checkable_results_are_skipped_with_their_reason(
    tmp_path: Path, inv_id: str, message: str
) -> None:
    case = _testcase(_junit(_a_run(), tmp_path / "junit.xml"), inv_id)
    assert [child.tag for child in case] == ["properties", "skipped"]
    assert case.find("skipped").attrib == {"message": message}  # type: ignore[union-attr]


def test_an_error_is_a_junit_error_titled_by_its_first_line(tmp_path: Path) -> None:
    case = _testcase(_junit(_a_run(), tmp_path / "junit.xml"), "WIRE-3")
    assert [child.tag for child in case] == ["properties", "error"]
    error = case.find("error")
    assert error is not None
    assert error.attrib == {"message": "error: the target misbehaved: hung"}
    assert error.text == "[error] the target misbehaved: hung\nafter 30 s"


def test_a_known_failure_that_passes_fails_with_its_message(tmp_path: Path) -> None:
    case = _testcase(_junit(_a_run(), tmp_path / "junit.xml"), "SO-2")
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib == {"message": "known failure passed: listed as a known failure (issue 7) but it passes"}
    assert failure.text == "listed as a known failure (issue 7) but it passes"


def test_every_distinct_failure_is_in_the_junit_text_with_its_case(tmp_path: Path) -> None:
    failures = [
        fail("4 images attached\ncap is 4", {"turns": 3, "caption": 'café <b> & "q"'}),
        fail("the kit's check raised KeyError: 'x'", None, Status.ERROR),
    ]
    case = _testcase(_junit([failed("IMG-3", failures)], tmp_path / "junit.xml"), "IMG-3")
    assert _verdict(case) == "fail (2 distinct failures)"
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib == {"message": "fail (2 distinct failures): 4 images attached"}
    assert failure.text == (
        "[fail] 4 images attached\ncap is 4\n\ncase:\n"
        '{\n  "turns": 3,\n  "caption": "café <b> & \\"q\\""\n}'
        "\n\n[error] the kit's check raised KeyError: 'x'"
    )


def test_a_failure_without_a_message_still_names_its_verdict(tmp_path: Path) -> None:
    case = _testcase(_junit([Result(CATALOGUE["SO-4"], Status.FAIL)], tmp_path / "junit.xml"), "SO-4")
    failure = case.find("failure")
    assert failure is not None
    assert failure.attrib == {"message": "fail: "}
    assert failure.text == "[fail] "


def test_the_junit_file_is_utf8_with_a_declaration(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    _junit([Result(CATALOGUE["IMG-1"], Status.KNOWN_FAILURE, "issue 3: «no field 6»")], path)
    raw = path.read_bytes()
    assert raw.startswith(b"<?xml version='1.0' encoding='utf-8'?>\n<testsuite ")
    assert "«no field 6»".encode() in raw


def test_writing_the_same_run_twice_gives_identical_reports(tmp_path: Path) -> None:
    outputs = []
    for run in ("a", "b"):
        results = _a_run()
        cases = save_failure_cases(results, tmp_path, TARGET)
        outputs.append(
            (
                write_markdown(results, tmp_path / run / "report.md", TARGET, "t", cases).read_bytes(),
                write_junit(results, tmp_path / run / "junit.xml", TARGET).read_bytes(),
            )
        )
    assert outputs[0] == outputs[1]


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    with ascii_process_locale():
        yield


@pytest.mark.usefixtures("ascii_locale")
def test_the_reports_are_utf8_whatever_the_locale(tmp_path: Path) -> None:
    result = failed("IMG-1", [Failure(Status.FAIL, "caption «café…» lost", {"caption": "é"}, {})])
    markdown = write_markdown([result], tmp_path / "report.md", TARGET, None, {})
    junit = write_junit([result], tmp_path / "junit.xml", TARGET)
    assert "```\ncaption «café…» lost\n```" in markdown.read_bytes().decode("utf-8")
    assert ET.parse(junit).getroot().findtext("testcase/failure", "").startswith("[fail] caption «café…» lost")

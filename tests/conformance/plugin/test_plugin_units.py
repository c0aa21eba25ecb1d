"""The pytest plugin's failure texts and verdict mapping, unit by unit: hand-built runner results
(``conformance.runner.Result``/``Failure``) judged by a real collected ``InvariantItem``, and the texts
a user reads when an invariant fails (every distinct failure, its minimal case, what the check saw,
long values clipped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from conformance.catalogue import CATALOGUE
from conformance.known_failures import KnownFailure
from conformance.pytest_plugin import (
    SECTION,
    CascadeFailure,
    InvariantItem,
    _failures_text,
    _one_failure,
    _one_line,
    _shown,
    verdict_rows,
)
from conformance.result_json import result_from_json, result_to_json
from conformance.runner import Failure, Result, Status
from tests.conformance.plugin.plugin_support import IMPLEMENTS_NOTHING, INNER_RUN_OPTIONS

pytest_plugins = ["pytester"]

LIMIT = 8000  # characters of one counterexample or evidence a failure shows (documented in the plugin)
WIRE_1 = CATALOGUE["WIRE-1"]
KNOWN = KnownFailure("WIRE-1", "broken on purpose")
CASE: dict[str, Any] = {"method": "StartCascade", "raw_hex": "0a00"}
CASE_SHOWN = '{\n  "method": "StartCascade",\n  "raw_hex": "0a00"\n}'
EVIDENCE: dict[str, Any] = {"decoded": {"fields": {}}}
EVIDENCE_SHOWN = '{\n  "decoded": {\n    "fields": {}\n  }\n}'


@pytest.fixture
def item(pytester: pytest.Pytester) -> InvariantItem:
    """A real item of the suite, as the plugin collects it (judging needs no target)."""
    items, _ = pytester.inline_genitems(
        *INNER_RUN_OPTIONS, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", "WIRE-1"
    )
    assert len(items) == 1
    assert isinstance(items[0], InvariantItem)
    return items[0]


def _failed(status: Status, *failures: Failure) -> Result:
    """A result shaped as the runner builds it: the first failure's message, case and evidence on top."""
    first = failures[0]
    return Result(WIRE_1, status, first.message, first.case, first.evidence, failures=list(failures))


# ---------------------------------------------------------------------------- _shown / _one_line


@pytest.mark.parametrize(
    ("length", "shown"),
    [
        (LIMIT - 1, None),
        (LIMIT, None),
        (LIMIT + 1, "\n... (1 more characters)"),
        (LIMIT + 5, "\n... (5 more characters)"),
    ],
)
def test_a_value_longer_than_the_limit_is_clipped_saying_how_much_is_left_out(length: int, shown: str | None) -> None:
    value = "x" * (length - 2)  # its JSON text is the string in quotes: `length` characters
    text = _shown(value)
    if shown is None:
        assert text == f'"{value}"'
    else:
        assert text == f'"{value}'[:LIMIT] + shown


def test_a_shown_value_is_indented_json_keeping_non_ascii_and_stringifying_the_rest() -> None:
    value = {"text": "café ☕", "path": Path("/tmp/x"), "n": [1]}
    assert _shown(value) == '{\n  "text": "café ☕",\n  "path": "/tmp/x",\n  "n": [\n    1\n  ]\n}'


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (
            KeyError("unknown invariant ID 'X-1'; the catalogue has: A-1"),
            "unknown invariant ID 'X-1'; the catalogue has: A-1",
        ),
        (KeyError(), ""),
        (ValueError("first line\n   second\tline  "), "first line second line"),
        (ValueError("a", "b"), "('a', 'b')"),
    ],
)
def test_an_error_becomes_one_line_without_the_quotes_a_key_error_adds(exc: BaseException, line: str) -> None:
    assert _one_line(exc) == line


# ---------------------------------------------------------------------------- failure texts


def test_one_failure_shows_its_message_its_minimal_case_and_what_the_check_saw() -> None:
    assert _one_failure("decoded fields differ", CASE, EVIDENCE) == (
        f"decoded fields differ\n\nminimal counterexample:\n{CASE_SHOWN}\n\nwhat the check saw:\n{EVIDENCE_SHOWN}"
    )


def test_a_failure_without_a_case_or_evidence_says_none_was_recorded() -> None:
    assert _one_failure("boom", None, {}) == "boom\n\nminimal counterexample:\n(none recorded)"
    assert _one_failure("boom", None, None) == "boom\n\nminimal counterexample:\n(none recorded)"
    assert _one_failure("boom", {}, None) == "boom\n\nminimal counterexample:\n{}"


def test_a_result_with_one_failure_shows_it_without_a_count() -> None:
    result = _failed(Status.FAIL, Failure(Status.FAIL, "decoded fields differ", CASE, EVIDENCE))
    assert _failures_text(result) == (
        f"decoded fields differ\n\nminimal counterexample:\n{CASE_SHOWN}\n\nwhat the check saw:\n{EVIDENCE_SHOWN}"
    )


def test_a_result_without_failures_shows_its_own_message_and_case() -> None:
    result = Result(WIRE_1, Status.FAIL, "decoded fields differ", CASE, EVIDENCE)
    assert _failures_text(result) == (
        f"decoded fields differ\n\nminimal counterexample:\n{CASE_SHOWN}\n\nwhat the check saw:\n{EVIDENCE_SHOWN}"
    )


def test_every_distinct_failure_is_shown_numbered_with_its_own_case() -> None:
    other_case = {"method": "SendUserCascadeMessage", "raw_hex": ""}
    result = _failed(
        Status.FAIL,
        Failure(Status.FAIL, "decoded fields differ", CASE, EVIDENCE),
        Failure(Status.FAIL, "a valid client encoding was rejected", other_case, {}),
    )
    assert _failures_text(result) == (
        "2 distinct failures:\n\n"
        "--- failure 1 of 2 ---\ndecoded fields differ\n\nminimal counterexample:\n"
        f"{CASE_SHOWN}\n\nwhat the check saw:\n{EVIDENCE_SHOWN}\n\n"
        "--- failure 2 of 2 ---\na valid client encoding was rejected\n\nminimal counterexample:\n"
        '{\n  "method": "SendUserCascadeMessage",\n  "raw_hex": ""\n}'
    )


@pytest.mark.parametrize(
    ("shrunk", "cut_short", "heading"),
    [
        (True, False, "minimal counterexample"),
        (False, False, "counterexample (as found, not shrunk)"),
        (False, True, "smallest counterexample found before shrinking was cut short"),
    ],
)
def test_a_failure_says_whether_its_case_was_shrunk_or_cut_short_also_from_an_xdist_worker(
    shrunk: bool, cut_short: bool, heading: str
) -> None:
    failure = Failure(Status.FAIL, "decoded fields differ", CASE, {}, shrunk=shrunk, cut_short=cut_short)
    result = _failed(Status.FAIL, failure)
    expected = f"decoded fields differ\n\n{heading}:\n{CASE_SHOWN}"
    assert _failures_text(result) == expected
    handed_over = result_from_json(result_to_json(result))  # what an xdist worker hands the controller
    assert handed_over.failures == [failure]
    assert _failures_text(handed_over) == expected


def test_the_waits_for_the_gateway_are_handed_over_from_an_xdist_worker() -> None:
    result = Result(WIRE_1, Status.PASS, seconds=9.0, examples=3, waits=2, waited_s=4.5)
    handed_over = result_from_json(result_to_json(result))
    assert (handed_over.waits, handed_over.waited_s, handed_over.seconds) == (2, 4.5, 9.0)


# ---------------------------------------------------------------------------- verdicts


def test_a_pass_passes_recording_the_invariant_and_verdict_after_other_plugins_properties(
    item: InvariantItem,
) -> None:
    item.user_properties.append(("build", "42"))  # e.g. from another plugin's setup hook: kept
    item._judge(Result(WIRE_1, Status.PASS), None)
    assert item.user_properties == [("build", "42"), ("cascade_invariant", "WIRE-1"), ("cascade_verdict", "pass")]
    assert item._report_sections == []


def test_a_partial_pass_passes_with_a_report_section_and_the_message(item: InvariantItem) -> None:
    message = "partial: drop counters not exposed by the target"
    item._judge(Result(WIRE_1, Status.PARTIAL, message), None)
    assert item.user_properties == [
        ("cascade_invariant", "WIRE-1"),
        ("cascade_verdict", "partial"),
        ("cascade_message", message),
    ]
    assert item._report_sections == [("call", SECTION, f"WIRE-1 pass ({message})")]


def test_a_verdict_records_its_counts_and_why_examples_were_not_judged(item: InvariantItem) -> None:
    result = Result(WIRE_1, Status.PASS, examples=40, refused=3, unjudged=2)
    result.reasons = {"the target refused the input: 400 seed": 3, "no resume": 2}
    item._judge(result, None)
    assert item.user_properties == [
        ("cascade_invariant", "WIRE-1"),
        ("cascade_verdict", "pass"),
        ("cascade_examples", "40 judged, 3 refused, 2 not judged"),
        ("cascade_not_judged", "the target refused the input: 400 seed (3 examples); no resume (2 examples)"),
    ]


def _call_report(inv_id: str, when: Literal["setup", "call"] = "call", **props: str) -> pytest.TestReport:
    user_properties = [("cascade_invariant", inv_id), *((f"cascade_{k}", v) for k, v in props.items())]
    return pytest.TestReport(
        f"cascade-conformance::{inv_id}", ("x", None, inv_id), {}, "passed", None, when, user_properties=user_properties
    )


def test_the_summary_rows_show_each_invariants_verdict_and_counts_in_catalogue_order() -> None:
    stats: dict[str, list[Any]] = {
        "skipped": [
            _call_report("STORE-1", verdict="not checkable", examples="0 judged, 6 not judged", not_judged="r")
        ],
        "passed": [
            _call_report("WIRE-2", verdict="pass", examples="40 judged"),
            _call_report("WIRE-1", when="setup"),  # not a verdict
            _call_report("WIRE-1", verdict="partial"),
        ],
        "": [pytest.TestReport("tests/test_x.py::t", ("x", 1, "t"), {}, "passed", None, "call")],  # the user's own
    }
    assert verdict_rows(stats) == [
        ("WIRE-1", "partial"),
        ("WIRE-2", "pass (40 judged)"),
        ("STORE-1", "not checkable (0 judged, 6 not judged); not judged: r"),
    ]
    assert verdict_rows({"passed": []}) == []


@pytest.mark.parametrize("status", [Status.PASS, Status.PARTIAL])
def test_a_listed_known_failure_that_passes_fails_asking_to_remove_it(item: InvariantItem, status: Status) -> None:
    message = "partial: x not exposed by the target" if status == Status.PARTIAL else ""
    with pytest.raises(CascadeFailure) as raised:
        item._judge(Result(WIRE_1, status, message), KNOWN)
    assert str(raised.value) == (
        "WIRE-1 is listed as a known failure (broken on purpose) but passes: remove it from the list"
    )
    assert ("cascade_verdict", status.value) in item.user_properties


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            "not checkable on this target: it lacks ls.decode_request",
            "not checkable on this target: it lacks ls.decode_request",
        ),
        ("", "not checkable on this target"),
    ],
)
def test_not_checkable_is_a_skip_with_the_reason(item: InvariantItem, message: str, reason: str) -> None:
    with pytest.raises(pytest.skip.Exception) as raised:
        item._judge(Result(WIRE_1, Status.NOT_CHECKABLE, message), KNOWN)  # listed or not: not a verdict
    assert raised.value.msg == reason
    assert item.user_properties[:2] == [("cascade_invariant", "WIRE-1"), ("cascade_verdict", "not checkable")]
    assert item._report_sections == []


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("StartCascade: decoded fields differ\n  expected: {}\n  decoded: {}", "StartCascade: decoded fields differ"),
        ("", ""),
    ],
)
def test_a_listed_known_failure_that_fails_is_xfail_with_the_first_line(
    item: InvariantItem, message: str, reason: str
) -> None:
    with pytest.raises(pytest.xfail.Exception) as raised:
        item._judge(Result(WIRE_1, Status.FAIL, message), KNOWN)
    assert raised.value.msg == f"known failure (broken on purpose): {reason}"


def test_a_failure_fails_with_the_statement_and_every_distinct_failure(item: InvariantItem) -> None:
    result = _failed(
        Status.FAIL,
        Failure(Status.FAIL, "decoded fields differ", CASE, EVIDENCE),
        Failure(Status.FAIL, "rejected", None, {}),
    )
    with pytest.raises(CascadeFailure) as raised:
        item._judge(result, None)
    assert str(raised.value) == f"WIRE-1: {WIRE_1.statement}\n\n{_failures_text(result)}"
    assert "2 distinct failures:" in str(raised.value)
    assert item.user_properties == [
        ("cascade_invariant", "WIRE-1"),
        ("cascade_verdict", "fail"),
        ("cascade_message", "decoded fields differ"),
    ]


ERRORED = (
    "WIRE-1: the target errored (it crashed, hung or broke the protocol), so the invariant could not be judged\n\n"
    "the target misbehaved: ls.decode_request raised RuntimeError\n\nminimal counterexample:\n(none recorded)"
)


@pytest.mark.parametrize(
    ("known", "text"),
    [
        (None, ERRORED),
        (
            KNOWN,
            ERRORED
            + "\n\n(listed as a known failure (broken on purpose), but an error is not a verdict on the invariant)",
        ),
    ],
)
def test_an_error_fails_saying_the_target_errored_listed_or_not(
    item: InvariantItem, known: KnownFailure | None, text: str
) -> None:
    result = _failed(
        Status.ERROR, Failure(Status.ERROR, "the target misbehaved: ls.decode_request raised RuntimeError", None, {})
    )
    with pytest.raises(CascadeFailure) as raised:
        item._judge(result, known)
    assert str(raised.value) == text


@pytest.mark.parametrize("status", [Status.KNOWN_FAILURE, Status.UNEXPECTED_PASS])
def test_a_verdict_the_runner_never_gives_an_item_fails_naming_it(item: InvariantItem, status: Status) -> None:
    with pytest.raises(CascadeFailure) as raised:
        item._judge(Result(WIRE_1, status, "odd"), None)
    assert str(raised.value) == f"WIRE-1: unexpected verdict {status.value!r}: odd"


def test_the_item_is_marked_with_its_invariant_and_located_in_the_suite(item: InvariantItem) -> None:
    marker = item.get_closest_marker("invariant")
    assert marker is not None
    assert marker.args == ("WIRE-1",)
    assert item.reportinfo()[1:] == (None, "cascade-conformance::WIRE-1")
    assert item.nodeid == "cascade-conformance::WIRE-1"

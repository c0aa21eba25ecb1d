"""The pytest plugin's verdicts end to end, in an inner in-process pytest run where each verdict comes
quickly: a target lacking every operation (not checkable at once), a known failure pinned to a case
file (the plugin replays that ONE case instead of running Hypothesis), and a target that rejects every
request (Hypothesis fails on the first example)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.catalogue import CATALOGUE
from tests.conformance.plugin.plugin_support import (
    FORGETS_FIELDS,
    IMPLEMENTS_NOTHING,
    METADATA_CASE,
    RAISES,
    call_reports,
    case_file,
    known_file,
    run,
)

pytest_plugins = ["pytester"]

REJECTS_EVERYTHING = "python:tests.support.broken_targets:rejects_everything"
# An empty StartCascade decodes to no fields, so even ForgetsFields gets this case right.
EMPTY_CASE: dict[str, Any] = {"method": "StartCascade", "raw_hex": "", "expected": {}}


def _pinned(pytester: pytest.Pytester, target: str, case: dict[str, Any]) -> pytest.RunResult:
    """WIRE-1 against ``target``, listed as a known failure pinned to ``case``."""
    case_file(pytester, "wire-1.json", case)
    known = known_file(pytester, ("WIRE-1", "wire-1.json"))
    return run(pytester, "--cascade-target", target, "--cascade-only", "WIRE-1", "--cascade-known-failures", str(known))


def test_not_checkable_is_a_skip_with_the_reason_and_the_verdict_in_the_report(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", "WIRE-1", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *: not checkable on this target: it lacks ls.decode_request"])
    (report,) = call_reports(result)
    assert report.user_properties == [
        ("cascade_invariant", "WIRE-1"),
        ("cascade_verdict", "not checkable"),
        ("cascade_message", "not checkable on this target: it lacks ls.decode_request"),
    ]
    assert report.location[1:] == (None, "cascade-conformance::WIRE-1")


def test_a_known_failure_pinned_to_a_failing_case_is_xfail(pytester: pytest.Pytester) -> None:
    result = _pinned(pytester, FORGETS_FIELDS, METADATA_CASE)
    result.assert_outcomes(xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    (report,) = call_reports(result)
    assert (
        report.wasxfail
        == "known failure (broken on purpose): StartCascade: decoded fields differ from wire.md's tables"
    )


def test_a_known_failure_replays_only_its_pinned_case(pytester: pytest.Pytester) -> None:
    # Hypothesis would find WIRE-1 failing on ForgetsFields; the one pinned case passes on it.
    result = _pinned(pytester, FORGETS_FIELDS, EMPTY_CASE)
    result.assert_outcomes(failed=1)
    (report,) = call_reports(result)
    assert str(report.longrepr) == (
        "WIRE-1 is listed as a known failure (broken on purpose) but passes: remove it from the list"
    )
    assert ("cascade_verdict", "pass") in report.user_properties


def test_a_listed_invariant_whose_target_errors_fails_saying_an_error_is_no_verdict(pytester: pytest.Pytester) -> None:
    result = _pinned(pytester, RAISES, METADATA_CASE)
    result.assert_outcomes(failed=1)
    (report,) = call_reports(result)
    text = str(report.longrepr)
    assert text.startswith(
        "WIRE-1: the target errored (it crashed, hung or broke the protocol), so the invariant could not be judged\n\n"
        f"the target misbehaved: {RAISES}: ls.decode_request raised RuntimeError: this target crashes on every call\n"
    )
    assert f"\n\nminimal counterexample:\n{json.dumps(METADATA_CASE, indent=2)}\n\n" in text
    assert text.endswith(
        "\n\n(listed as a known failure (broken on purpose), but an error is not a verdict on the invariant)"
    )
    assert isinstance(report.longrepr, str)  # the verdict's text alone, no pytest traceback


@pytest.mark.parametrize(
    ("extra", "heading"),
    [
        ((), "minimal counterexample"),
        (("--cascade-no-shrink",), "counterexample (as found, not shrunk)"),
        (("--cascade-shrink-budget", "0"), "smallest counterexample found before shrinking was cut short"),
    ],
)
def test_a_failing_invariant_fails_with_its_statement_and_minimal_case(
    pytester: pytest.Pytester, extra: tuple[str, ...], heading: str
) -> None:
    result = run(pytester, "--cascade-target", REJECTS_EVERYTHING, "--cascade-only", "WIRE-2", *extra)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED cascade-conformance::WIRE-2 - WIRE-2: Unknown fields survive decoding *"])
    (report,) = call_reports(result)
    text = str(report.longrepr)
    assert text.startswith(f"WIRE-2: {CATALOGUE['WIRE-2'].statement}\n\n")
    assert ": a request with an unknown field was rejected: {'rejected': 'proto: cannot parse" in text
    assert f"\n\n{heading}:\n{{\n" in text
    assert '\n\nwhat the check saw:\n{\n  "decoded": {\n    "rejected": ' in text
    assert isinstance(report.longrepr, str)
    assert "Traceback" not in result.stdout.str()
    assert not list(
        pytester.path.glob("reports/conformance/examples/*/hypothesis")
    )  # derandomized: Hypothesis keeps none


@pytest.mark.parametrize(
    ("args", "where"),
    [((), "reports/conformance/examples"), (("--cascade-example-db", "elsewhere"), "elsewhere")],
)
def test_a_thorough_run_keeps_its_examples_in_the_example_db(
    pytester: pytest.Pytester, args: tuple[str, ...], where: str
) -> None:
    result = run(
        pytester,
        "--cascade-target",
        REJECTS_EVERYTHING,
        "--cascade-only",
        "WIRE-2",
        "--cascade-profile",
        "thorough",
        *args,
    )
    result.assert_outcomes(failed=1)
    assert any(path.is_file() for path in (pytester.path / where).glob("*/hypothesis/**/*"))
    assert list((pytester.path / where).glob("*/wire-2/001.json"))
    assert not (pytester.path / ".hypothesis").exists()


def test_a_relative_example_db_is_under_the_invocation_folder_even_after_a_chdir(pytester: pytest.Pytester) -> None:
    pytester.mkdir("sub")
    pytester.makeconftest("import os\n\nos.chdir('sub')\n")  # a project's conftest moving elsewhere
    result = run(
        pytester,
        "--cascade-target",
        REJECTS_EVERYTHING,
        "--cascade-only",
        "WIRE-2",
        "--cascade-profile",
        "thorough",
        "--cascade-example-db",
        "db",
    )
    result.assert_outcomes(failed=1)
    assert list((pytester.path / "db").glob("*/wire-2/001.json"))
    assert not (pytester.path / "sub" / "db").exists()


def test_the_terminal_summary_lists_each_verdict_with_its_counts(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--cascade-target", REJECTS_EVERYTHING, "--cascade-only", "WIRE-2,WIRE-1")
    result.stdout.fnmatch_lines(
        ["*= cascade-conformance =*", "WIRE-1  fail (* judged)", "WIRE-2  fail (* judged)"], consecutive=True
    )
    assert "not judged" not in result.stdout.str()


def test_a_run_without_a_target_prints_no_summary_section(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_own="def test_users_own() -> None:\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "= cascade-conformance =" not in result.stdout.str()

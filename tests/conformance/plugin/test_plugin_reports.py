"""The pytest plugin leaves what ``cascade-conformance run`` leaves: a case file per failure, a
replay line in the failure that runs the case again, and report.md, junit.xml and results.json in the report
folder (under xdist, written once by the controller from every worker's verdicts:
test_pytest_plugin.py::test_the_suite_under_xdist_gives_the_serial_verdicts)."""

from __future__ import annotations

import json
import shlex
import subprocess

import jsonschema
import pytest

from conformance.results_document import RESULTS_SCHEMA
from tests.conformance.plugin.plugin_support import FORGETS_FIELDS
from tests.conformance.plugin.plugin_support import run as _run

pytest_plugins = ["pytester"]

ARGS = ("--cascade-target", FORGETS_FIELDS, "--cascade-only", "WIRE-1,WIRE-2", "--cascade-no-shrink")


def test_a_failure_saves_its_case_and_prints_a_replay_line_that_runs_it(pytester: pytest.Pytester) -> None:
    result = _run(pytester, *ARGS, "--cascade-report", "out")
    result.assert_outcomes(passed=1, failed=1)
    case = pytester.path / "out" / "cases" / "wire-1.json"
    assert case.is_file()
    replay = next(line.split("replay: ", 1)[1] for line in result.outlines if "replay: " in line)
    assert replay.endswith(f" replay {case} --target {FORGETS_FIELDS}"), replay
    again = subprocess.run(shlex.split(replay), cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert again.stdout.startswith("WIRE-1   fail"), again.stdout
    report = (pytester.path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| WIRE-1 | fail |" in report
    assert "| WIRE-2 | pass |" in report
    assert (pytester.path / "out" / "junit.xml").is_file()
    result.stdout.fnmatch_lines([f"reports: {pytester.path / 'out' / 'report.md'} *junit.xml *results.json"])
    results = json.loads((pytester.path / "out" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert (results["target"], results["profile"]) == (FORGETS_FIELDS, "ci")
    by_id = {entry["id"]: entry for entry in results["invariants"]}
    assert (by_id["WIRE-1"]["status"], by_id["WIRE-2"]["status"]) == ("fail", "pass")
    (failure,) = by_id["WIRE-1"]["failures"]
    assert failure["case_file"] == str(case)
    assert failure["replay"] == replay

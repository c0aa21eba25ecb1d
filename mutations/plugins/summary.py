"""pytest plugin for mutation runs: writes a JSON summary of every test's outcome to the path in
``CASCADE_MUTATION_SUMMARY`` (outside the tree), so the runner never parses pytest's output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

_outcomes: dict[str, str] = {}
_collect_errors: list[str] = []
_errors: list[str] = []


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _collect_errors.append(report.nodeid or "<collection>")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and report.failed:
        # Kept apart from the outcome: a failed call followed by a broken teardown is still an error.
        _errors.append(report.nodeid)
    if report.when == "call" or report.outcome != "passed":
        # A failure in setup or teardown is an error, not a caught mutation.
        outcome = report.outcome if report.when == "call" else f"error-in-{report.when}"
        if report.outcome == "skipped":
            outcome = "skipped"
        if hasattr(report, "wasxfail"):
            # Expected failures are documented gaps, not evidence either way.
            outcome = "xfailed" if report.skipped else "xpassed"
        previous = _outcomes.get(report.nodeid)
        if previous is None or previous == "passed":
            _outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("CASCADE_MUTATION_SUMMARY")
    if not target:
        return
    modules = {
        name: getattr(sys.modules[name], "__file__", None)
        for name in ("fakels", "conformance", "engine")
        if name in sys.modules
    }
    summary: dict[str, Any] = {
        "exitstatus": int(exitstatus),
        "collected": session.testscollected,
        "outcomes": _outcomes,
        "collect_errors": _collect_errors,
        "errors": sorted(set(_errors)),
        "modules": modules,
    }
    Path(target).write_text(json.dumps(summary), encoding="utf-8")

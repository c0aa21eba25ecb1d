"""pytest plugin for the baseline guard: at the end of collection, writes each selected test's
node ID and whether a skip or xfail mark applies to it (conditions evaluated as pytest evaluates
them when the test runs) to the path in ``CASCADE_MUTATION_COLLECT``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# pytest's own evaluation of skip/skipif/xfail marks (conditions, parametrized marks included): the
# guard must count exactly what the run will do, so it asks the function the run itself uses.
from _pytest.skipping import evaluate_skip_marks, evaluate_xfail_marks

_collect_errors: list[str] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _collect_errors.clear()  # one process may run several sessions (mutations._collect_many)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _collect_errors.append(report.nodeid or "<collection>")


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("CASCADE_MUTATION_COLLECT")
    if not target:
        return
    items: dict[str, str] = {}
    for item in session.items:
        if evaluate_skip_marks(item) is not None:
            items[item.nodeid] = "skip"
        elif evaluate_xfail_marks(item) is not None:
            items[item.nodeid] = "xfail"
        else:
            items[item.nodeid] = "run"
    Path(target).write_text(json.dumps({"items": items, "collect_errors": _collect_errors}), encoding="utf-8")

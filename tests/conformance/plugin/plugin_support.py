"""Shared helpers of the pytest plugin's fast tests: in-process inner runs (``pytester``) against tiny
targets, known-failure files and pinned case files built by hand."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.properties import properties

# The inner runs are in process (fast); pytester drops the modules a run imported when it ends, and
# a property module imported twice would register its properties twice: import them here, once.
for _module in (
    "conformance.known_failures",
    "conformance.runner",
    "conformance.targets._http",
    "tests.support.broken_targets",
    "tests.support.plugin_targets",
):
    importlib.import_module(_module)
properties()

FORGETS_FIELDS = "python:tests.support.broken_targets:forgets_fields"
IMPLEMENTS_NOTHING = "python:tests.support.broken_targets:implements_nothing"
RAISES = "python:tests.support.broken_targets:raises_on_every_call"
CLOSES_LOUDLY = "python:tests.support.plugin_targets:closes_loudly"
FAILS_TO_START = "python:tests.support.plugin_targets:fails_to_start"

# A StartCascade carrying an empty metadata message (field 1, length 0): the reference decodes it as
# {"metadata": {}}; ForgetsFields forgets the field, so this one case fails WIRE-1 on it.
METADATA_CASE: dict[str, Any] = {"method": "StartCascade", "raw_hex": "0a00", "expected": {"metadata": {}}}


# -p no:cacheprovider: an inner run writes nothing of pytest's own, so what appears is ours.
INNER_RUN_OPTIONS = ("-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An inner pytest run in this process."""
    return pytester.runpytest_inprocess(*INNER_RUN_OPTIONS, *args)


def run_in_subprocess(pytester: pytest.Pytester, *args: str, timeout: float) -> pytest.RunResult:
    """An inner pytest run in a fresh process (what a process caches in memory is not there)."""
    return pytester.runpytest_subprocess(*INNER_RUN_OPTIONS, *args, timeout=timeout)


def case_file(pytester: pytest.Pytester, name: str, case: dict[str, Any], invariant: str = "WIRE-1") -> Path:
    document = {"format": "cascade-conformance-case", "version": 1, "invariant": invariant, "case": case}
    path = pytester.path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def known_file(pytester: pytest.Pytester, *entries: tuple[str, str | None]) -> Path:
    """A known-failures file listing (invariant ID, pinned case file name or None), reason "broken on purpose"."""
    lines = ["known_failures:"]
    for inv_id, case in entries:
        lines += [f"  - id: {inv_id}", "    reason: broken on purpose"]
        if case is not None:
            lines.append(f"    case: {case}")
    return pytester.makefile(".yaml", known="\n".join(lines) + "\n")


def _reports(result: pytest.RunResult, hook: str) -> list[Any]:
    return list(result.reprec.getreports(hook))  # type: ignore[attr-defined]


def call_reports(result: pytest.RunResult) -> list[pytest.TestReport]:
    """The call-phase reports of the inner run, in order."""
    return [r for r in _reports(result, "pytest_runtest_logreport") if r.when == "call"]


def collected(result: pytest.RunResult) -> list[str]:
    """The node IDs of the items the inner run collected, in order."""
    reports = _reports(result, "pytest_collectreport")
    return [item.nodeid for report in reports for item in report.result if isinstance(item, pytest.Item)]

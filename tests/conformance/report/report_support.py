"""Hand-built results for the report tests (test_report_units.py, test_report_markdown.py)."""

from __future__ import annotations

from conformance.catalogue import CATALOGUE
from conformance.runner import Failure, Result, Status

TARGET = "python:engine.reference (embedded fakels)"


def fail(message: str, case: dict[str, object] | None = None, kind: Status = Status.FAIL) -> Failure:
    return Failure(kind, message, case, {"journal": [{"rpc": "SendUserCascadeMessage"}]} if case else {})


def failed(
    inv_id: str, failures: list[Failure], status: Status = Status.FAIL, seconds: float = 0.0, examples: int = 0
) -> Result:
    first = failures[0]
    return Result(CATALOGUE[inv_id], status, first.message, first.case, first.evidence, seconds, examples, failures)

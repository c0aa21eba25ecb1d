"""SCOPE-1's verdicts through the real command on targets built to meet one of its paths: a gateway whose
pooling gives out (it resumes a conversation once, then never again) is not judged on the pooled cascades,
never failed for "another caller took the cascade away"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main

RESUMES_ONCE = "python:tests.support.broken_targets:resumes_once"


def test_a_pool_that_gives_out_is_not_judged_as_taken_by_another_caller(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--target", RESUMES_ONCE, "--only", "SCOPE-1", "--report", str(tmp_path), "--max-examples", "3"]
    assert main(argv) == 1, capsys.readouterr().out  # nothing judged is no pass
    (verdict,) = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["invariants"]
    assert verdict["status"] == "not-checkable", verdict
    assert verdict["failures"] == []
    reasons = verdict["message"]
    assert "no longer resumed the first caller's own control conversation" in reasons, verdict
    capsys.readouterr()

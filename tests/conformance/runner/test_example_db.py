"""The example database (``--example-db``, conformance/example_db.py) through the real command: a failure
kept by one run is found again by the next from the database alone, in its target's folder only; a case that
passes again is dropped with the pass; a file that is not a case is dropped, never replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from conformance.cli import main
from conformance.properties import Case, Evidence
from conformance.targets import Target
from tests.conformance.cli.cli_support import FAILS, NOTHING, PASSES, REFERENCE, only_these, toy

AT_LEAST_5 = st.fixed_dictionaries({"n": st.integers(min_value=5)})  # FAILS shrinks it to {"n": 5}
OVER_5 = st.fixed_dictionaries({"n": st.integers(min_value=6)})  # never draws the kept {"n": 5}


def _fails_at_5(target: Target, case: Case, evidence: Evidence) -> None:
    if case["n"] == 5:
        raise AssertionError("n is 5 again")


def _run(tmp_path: Path, target: str, db: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    report = tmp_path / "report"
    code = main(
        ["run", "--target", target, "--only", "WIRE-1", "--report", str(report), "--example-db", str(db), *extra]
    )
    (verdict,) = json.loads((report / "results.json").read_text(encoding="utf-8"))["invariants"]
    return code, verdict


def _kept_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example database after a run on NOTHING whose WIRE-1 failed: it keeps ``{"n": 5}``."""
    db = tmp_path / "db"
    only_these(monkeypatch, toy("WIRE-1", FAILS, cases=AT_LEAST_5))
    assert _run(tmp_path, NOTHING, db)[0] == 1
    return db


def _kept(db: Path) -> list[Path]:
    return sorted(db.glob("*/wire-1/*.json"))


def test_a_second_run_finds_a_kept_failure_from_the_database_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _kept_failure(tmp_path, monkeypatch)
    (kept,) = _kept(db)
    assert json.loads(kept.read_text(encoding="utf-8"))["case"] == {"n": 5}
    assert (kept.parents[1] / "target.txt").read_text(encoding="utf-8") == f"--target {NOTHING}"
    # Now only the kept case can fail: the property never draws it.
    only_these(monkeypatch, toy("WIRE-1", _fails_at_5, cases=OVER_5))
    code, verdict = _run(tmp_path, NOTHING, db)
    assert code == 1
    assert verdict["status"] == "fail"
    assert verdict["examples"]["judged"] == 1  # the kept case, and no search
    assert verdict["message"] == (
        "n is 5 again (from the example database: 1 of 1 kept failing example(s) failed again; the property was "
        "not searched afresh)"
    )
    assert json.loads((tmp_path / "report" / "cases" / "wire-1.json").read_text(encoding="utf-8"))["case"] == {"n": 5}
    assert _kept(db) == [kept]
    # Without the database the same property passes: the failure came from it alone.
    assert _run(tmp_path, NOTHING, tmp_path / "empty")[0] == 0
    capsys.readouterr()


def test_another_targets_kept_failures_are_never_replayed_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _kept_failure(tmp_path, monkeypatch)
    only_these(monkeypatch, toy("WIRE-1", _fails_at_5, cases=OVER_5))
    code, verdict = _run(tmp_path, REFERENCE, db)
    assert (code, verdict["status"]) == (0, "pass")
    assert verdict["examples"]["judged"] > 1
    assert len(_kept(db)) == 1, "the other target's entry is left as it was"
    assert len(list(db.iterdir())) == 1, "a pass keeps nothing for its own target"
    capsys.readouterr()


def test_a_kept_case_that_passes_again_is_dropped_when_the_property_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _kept_failure(tmp_path, monkeypatch)
    only_these(monkeypatch, toy("WIRE-1", PASSES, cases=AT_LEAST_5))  # fixed
    code, verdict = _run(tmp_path, NOTHING, db)
    assert (code, verdict["status"]) == (0, "pass")
    assert verdict["examples"]["judged"] > 1, "the property ran afresh"
    assert _kept(db) == []
    capsys.readouterr()


def test_a_file_in_the_database_that_is_not_a_case_is_dropped_never_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _kept_failure(tmp_path, monkeypatch)
    (kept,) = _kept(db)
    kept.write_text("not json", encoding="utf-8")
    (kept.parent / "002.json").write_text(json.dumps({"format": "cascade-conformance-case"}), encoding="utf-8")
    only_these(monkeypatch, toy("WIRE-1", _fails_at_5, cases=OVER_5))
    code, verdict = _run(tmp_path, NOTHING, db)
    assert (code, verdict["status"]) == (0, "pass")
    assert _kept(db) == []
    capsys.readouterr()

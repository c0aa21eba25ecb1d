"""A known-failures file in a ``cascade-conformance run``: a listed invariant that fails is expected
(exit 0) and keeps the listed reason; one that passes is stale (exit 1); an error or a property that
could not be checked is never the listed failure; a pinned case is replayed instead of a search.
The properties are toys (cli_support.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.properties import Case, Check, Evidence
from conformance.targets import Target
from tests.conformance.cli.cli_support import (
    FAILS,
    NOTHING,
    PARTIAL,
    PASSES,
    TARGET_ERROR,
    UNMET,
    only_these,
    timeless,
    toy,
)

STALE = "listed as a known failure (ISSUE-12) but it passes: remove it from the list"


def _run(tmp_path: Path, known: str, only: str = "WIRE-1") -> int:
    path = tmp_path / "known.yaml"
    path.write_text(known, encoding="utf-8")
    argv = ["run", "--target", NOTHING, "--only", only, "--known-failures", str(path), "--report", str(tmp_path / "r")]
    return main(argv)


@pytest.mark.parametrize(
    ("check", "code", "verdict", "message"),
    [
        (FAILS, 0, "known failure", "ISSUE-12: n is 1"),
        (PASSES, 1, "known failure passed", STALE),
        (PARTIAL, 1, "known failure passed", STALE),
        (TARGET_ERROR, 1, "error", "the target misbehaved: it hung up"),
        # Listed or not, a run that judged nothing is not a pass.
        (UNMET, 1, "not checkable", "not checkable on this target: in all 1 examples the target never resumed"),
    ],
)
def test_a_listed_invariant_is_expected_only_when_it_fails(
    check: Check,
    code: int,
    verdict: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    only_these(monkeypatch, toy("WIRE-1", check))
    assert _run(tmp_path, "known_failures:\n  - {id: WIRE-1, reason: ISSUE-12}\n") == code
    captured = capsys.readouterr()
    assert f"[1/1] WIRE-1 ... {verdict} (" in captured.err
    assert captured.out.splitlines()[0].startswith(f"WIRE-1   {verdict:<20} ")
    assert f"\n1 invariant(s): 1 {verdict}\n" in captured.out
    if verdict == "not checkable":  # the reason under its line, then why the run is not a pass
        assert f"\n         {message}\n" in captured.out
        assert "\nnothing was judged: all 1 invariant(s) were not checkable" in captured.out
    elif code:  # unexpected: the message is printed
        assert f"\n\nWIRE-1 {verdict}: {message}\n" in captured.out
    else:
        assert "\nWIRE-1 " not in captured.out
    assert message in (tmp_path / "r" / "junit.xml").read_text(encoding="utf-8")


def test_only_the_listed_invariant_is_expected_to_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", FAILS), toy("WIRE-2", FAILS))
    assert _run(tmp_path, "known_failures:\n  - {id: WIRE-2, reason: ISSUE-12}\n", "WIRE-1,WIRE-2") == 1
    lines = timeless(capsys.readouterr().out).splitlines()
    assert [line[:30] for line in lines[:3]] == [
        "WIRE-1   fail                 ",
        "WIRE-2   known failure        ",
        "2 invariant(s): 1 fail, 1 know",
    ]
    assert lines[2] == "2 invariant(s): 1 fail, 1 known failure"
    assert lines[4:6] == ["", "WIRE-1 fail: n is 1"]
    assert len(lines) == 7  # WIRE-1's replay line; nothing about WIRE-2


@pytest.mark.parametrize(("n", "code", "verdict"), [(7, 0, "known failure"), (None, 1, "known failure passed")])
def test_a_pinned_case_is_replayed_instead_of_searched(
    n: int | None,
    code: int,
    verdict: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fails_on_a_number(target: Target, case: Case, evidence: Evidence) -> None:
        if case["n"] is not None:
            raise AssertionError(f"n is {case['n']}")

    only_these(monkeypatch, toy("WIRE-1", fails_on_a_number))  # the search draws n=1
    case = {"format": "cascade-conformance-case", "version": 1, "invariant": "WIRE-1", "case": {"n": n}}
    (tmp_path / "pinned.json").write_text(json.dumps(case), encoding="utf-8")
    known = f"known_failures:\n  - {{id: WIRE-1, reason: ISSUE-12, case: {tmp_path / 'pinned.json'}}}\n"
    assert _run(tmp_path, known) == code
    out = timeless(capsys.readouterr().out)
    assert out.splitlines()[0].startswith(f"WIRE-1   {verdict:<20}    1 ex   Ts  ")
    junit = (tmp_path / "r" / "junit.xml").read_text(encoding="utf-8")
    assert ('message="known failure: ISSUE-12: n is 7"' in junit) == (n == 7)

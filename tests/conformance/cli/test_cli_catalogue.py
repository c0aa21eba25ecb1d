"""`cascade-conformance list` and `run --only` over the whole catalogue, and Hypothesis's storage
kept out of the user's working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE
from conformance.cli import main
from conformance.operations import HTTP_TARGET_OPERATIONS
from conformance.properties import properties
from tests.support.registry import without_family

NOTHING = "python:tests.support.broken_targets:implements_nothing"  # every invariant: not checkable, at once


def _blocks(listing: str) -> dict[str, list[str]]:
    """The lines of each invariant in ``list``'s output, by ID."""
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in listing.splitlines():
        head = line.split(maxsplit=1)
        if line.startswith("  ") and not line.startswith("   ") and head and head[0] in CATALOGUE:
            current = head[0]
            blocks[current] = [head[1]]
        elif line.startswith("           ") and current:
            blocks[current].append(line.strip())
        else:
            current = ""
    return blocks


def test_list_shows_all_invariants_wrapped_between_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    blocks = _blocks(out)
    assert list(blocks) == list(CATALOGUE)
    registered = properties()
    for inv_id, lines in blocks.items():
        status = lines[-1]
        if inv_id in registered:
            status_lines = [i for i, line in enumerate(lines) if line.startswith("needs: ")]
            assert len(status_lines) == 1, inv_id
            kinds_at = [i for i, line in enumerate(lines) if line.startswith("checkable on: ")]
            assert len(kinds_at) == 1, inv_id
            kinds = " ".join(lines[kinds_at[0] :])
            assert kinds.startswith("checkable on: python, exec, "), inv_id
            prop = registered[inv_id]
            over_http = not prop.missing(HTTP_TARGET_OPERATIONS) and prop.over_http.hidden is None
            assert kinds.startswith("checkable on: python, exec, http") == over_http, (inv_id, kinds)
            statement_lines = lines[: status_lines[0]]
        else:
            assert status == "not yet implemented", inv_id
            statement_lines = lines[:-1]
        # Joined at the line breaks with single spaces, the lines give back the statement: no word was cut.
        assert " ".join(statement_lines) == CATALOGUE[inv_id].statement
    assert out.splitlines()[-1] == (
        f"{len(CATALOGUE)} invariants: {len(registered)} implemented, "
        f"{len(CATALOGUE) - len(registered)} not yet implemented"
    )


# Over HTTP, what a run must be given for these, or why a black box can never show what they judge; every
# other invariant an HTTP target's operations meet is checkable over HTTP as it is.
HTTP_CONDITIONS = {
    "IMG-4": "not over http (history-image counters not observable)",
    "OFF-5": "http (with --native-bridge)",
    "ACC-1": "http (with --ledger-path)",
    "ACC-3": "http (with --ledger-path)",
    "TURN-5": "http (with --wait-limit or --heartbeat-interval)",
    **{f"STORE-{n}": "http (with small --store-limits)" for n in range(1, 9)},
}


def test_list_says_with_what_an_http_target_can_check_each_invariant_or_why_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    blocks = _blocks(capsys.readouterr().out)
    kinds: dict[str, str] = {}
    for inv_id, lines in blocks.items():
        at = next(i for i, line in enumerate(lines) if line.startswith("checkable on: "))
        kinds[inv_id] = " ".join(lines[at:]).removeprefix("checkable on: python, exec, ")
    for inv_id, http in HTTP_CONDITIONS.items():
        assert kinds[inv_id] == http, inv_id
    assert kinds["WIRE-1"] == "not over http (needs ls.decode_request)"
    plain = {inv_id for inv_id, http in kinds.items() if http == "http"}
    over_http = {i for i, prop in properties().items() if not prop.missing(HTTP_TARGET_OPERATIONS)}
    assert plain == over_http - set(HTTP_CONDITIONS)
    assert len(plain) == 25


def test_only_takes_ids_and_families_in_any_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "--target", NOTHING, "--only", "wire-1,Img-3,off", "--report", str(tmp_path)]) == 1
    )  # nothing judged
    out = capsys.readouterr().out
    shown = [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0] in CATALOGUE]
    assert shown == ["WIRE-1", "IMG-3", "OFF-1", "OFF-2", "OFF-3", "OFF-4", "OFF-5"]
    assert "not yet implemented" not in out


def test_a_complete_kit_says_every_invariant_is_implemented(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert set(properties()) == set(CATALOGUE)
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 1  # nothing judged
    out = capsys.readouterr().out
    assert f"the kit has a property for every one of the {len(CATALOGUE)} catalogue invariants" in out.splitlines()
    assert "not yet implemented" not in out


def test_a_default_run_says_how_many_invariants_are_not_yet_implemented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    without_family(monkeypatch, "ATT")
    assert main(["run", "--target", NOTHING, "--report", str(tmp_path)]) == 1  # nothing judged
    out = capsys.readouterr().out
    missing = len(CATALOGUE) - len(properties())
    assert missing == 7
    lines = [line for line in out.splitlines() if "not yet implemented" in line]
    assert lines == [
        f"{missing} of {len(CATALOGUE)} catalogue invariants are not yet implemented "
        "(ATT): `cascade-conformance list` shows them"
    ]


@pytest.mark.parametrize(
    ("only", "message"),
    [
        (
            "att",
            "ATT has no property yet: not yet implemented in this kit; "
            "implemented: WIRE, IMG, OFF, SO, ACC, STORE, TURN, SCOPE, REQ",
        ),
        (
            "WIRE-1,att-2",
            "ATT-2 has no property yet: not yet implemented in this kit; "
            "implemented: WIRE, IMG, OFF, SO, ACC, STORE, TURN, SCOPE, REQ",
        ),
        (
            "nope",
            "'nope' is neither an invariant ID nor a family (families: WIRE, IMG, OFF, SO, ACC, STORE, ATT, TURN, "
            "SCOPE, REQ)",
        ),
    ],
)
def test_a_name_without_a_property_is_one_usage_line(
    only: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    without_family(monkeypatch, "ATT")
    assert main(["run", "--only", only]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"cascade-conformance: {message}"]


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def test_the_cli_keeps_hypothesis_storage_out_of_the_working_directory(tmp_path: Path) -> None:
    done = _cli(tmp_path, "run", "--only", "WIRE-1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / ".hypothesis").exists()
    # Hypothesis did write storage (so the check above means something): under the report folder.
    assert (tmp_path / "reports" / "conformance" / "hypothesis" / "unicode_data").is_dir()
    chosen = _cli(tmp_path, "run", "--only", "WIRE-1", "--report", "r", "--cache-dir", "cache")
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    assert (tmp_path / "cache" / "unicode_data").is_dir()
    assert not (tmp_path / "r" / "hypothesis").exists()
    assert not (tmp_path / ".hypothesis").exists()
    case = tmp_path / "r" / "case.json"
    case.write_text(
        '{"format": "cascade-conformance-case", "version": 1, "invariant": "WIRE-1", "case": {"method": '
        '"AddTrackedWorkspace", "raw_hex": "0a0178", "expected": {"workspace": "x"}}}',
        encoding="utf-8",
    )
    replayed = _cli(tmp_path, "replay", str(case))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert not (tmp_path / ".hypothesis").exists()

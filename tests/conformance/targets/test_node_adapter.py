"""The Node example adapter (conformance/adapters/gateway-adapter.mjs) through the real CLI and runner.

The adapter is a gateway in another language as docs/adapters.md describes it: plain Node, three
operations over its own small implementations. It must pass what it implements, be `not checkable`
(never a pass) on what it lacks, and each of its defect flags, which re-introduce a seed defect,
must make the kit fail the invariant that defect breaks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.cases import read_case
from conformance.cli import main

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js (`node`) is not on PATH")

ADAPTER = Path(__file__).resolve().parents[3] / "conformance" / "adapters" / "gateway-adapter.mjs"
GOOD = f"exec:node {ADAPTER}"
OFF3_PARTIAL = "pass (partial: the end-to-end abstention (an engine.play_turns check) not exposed by the target)"


def _exec(*flags: str) -> str:
    return " ".join([GOOD, *flags])


def _lines(out: str) -> dict[str, str]:
    """The result lines of a run, by invariant ID: ``{"OFF-1": "pass", "OFF-3": "not checkable"}``
    (``OFF-1    pass      60 ex ...``; the messages printed after them have one space)."""
    return {m[1]: m[2] for m in re.finditer(r"^([A-Z]+-\d+) {2,}(\S.*?)(?: {2,}|$)", out, re.MULTILINE)}


def test_it_passes_what_it_implements_and_is_not_checkable_on_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--target", GOOD, "--report", str(tmp_path)]) == 0
    lines = _lines(capsys.readouterr().out)
    assert {lines[i] for i in ("WIRE-1", "WIRE-2", "OFF-1")} == {"pass"}
    # OFF-3 judges the pool round trip; its end-to-end half needs engine.play_turns.
    assert lines["OFF-3"] == OFF3_PARTIAL
    # Everything else needs an operation the adapter does not have (ls.serve, engine.play_turns, ...).
    checked = ("WIRE-1", "WIRE-2", "OFF-1", "OFF-3")
    assert {v for k, v in lines.items() if k not in checked} == {"not checkable"}
    junit = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert "it lacks engine.play_turns" in junit
    assert 'failures="0"' in junit
    assert 'errors="0"' in junit


def test_off3_is_a_partial_pass_without_play_turns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", GOOD, "--only", "OFF-1,OFF-3", "--report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert _lines(out) == {"OFF-1": "pass", "OFF-3": OFF3_PARTIAL}
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"| OFF-3 | {OFF3_PARTIAL} |" in report


def test_the_hello_declares_three_operations_and_no_observes() -> None:
    done = subprocess.run(
        ["node", str(ADAPTER)],
        input=json.dumps({"id": 0, "op": "hello", "params": {"protocol": 1}}) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    hello = json.loads(done.stdout)["result"]
    assert hello["operations"] == ["ls.decode_request", "engine.parse_generator_metadata", "engine.store_offsets"]
    assert list(hello["capabilities"]) == ["ls.decode_request"]
    assert "gateway-adapter: ready" in done.stderr, "logs go to stderr, stdout is the protocol's"


def test_an_unknown_flag_is_refused_on_stderr() -> None:
    done = subprocess.run(
        ["node", str(ADAPTER), "--no-such-flag"], input="", capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "unknown flag --no-such-flag" in done.stderr


# ---------------------------------------------------------------------------- the defect flags


def test_drop_unknown_fails_wire2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", _exec("--drop-unknown"), "--only", "WIRE-2", "--report", str(tmp_path)]) == 1
    assert _lines(capsys.readouterr().out) == {"WIRE-2": "fail"}


def test_null_without_usage_fails_off1_with_a_case_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = _exec("--null-without-usage")
    assert main(["run", "--target", broken, "--only", "OFF-1,OFF-3", "--report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert _lines(out) == {"OFF-1": "fail", "OFF-3": OFF3_PARTIAL}
    assert "parsed as null: the record count that advances the window is lost" in out
    saved = read_case(tmp_path / "cases" / "off-1.json")
    # The minimal case: one record, no non-zero figure in it.
    (record,) = saved.case["records"]
    assert not any(record.get("usage", {}).values())
    replay = ["replay", str(tmp_path / "cases" / "off-1.json"), "--report", str(tmp_path / "replayed")]
    assert main([*replay, "--target", broken]) == 1
    assert main([*replay, "--target", GOOD]) == 0


def test_null_without_usage_listed_as_a_known_failure_passes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - id: OFF-1\n    reason: usage-less windows parse as null\n", encoding="utf-8")
    args = ["run", "--only", "OFF-1", "--known-failures", str(known)]
    assert main([*args, "--target", _exec("--null-without-usage"), "--report", str(tmp_path / "a")]) == 0
    assert _lines(capsys.readouterr().out) == {"OFF-1": "known failure"}
    # Once fixed, the stale entry fails the run.
    assert main([*args, "--target", GOOD, "--report", str(tmp_path / "b")]) == 1
    assert _lines(capsys.readouterr().out) == {"OFF-1": "known failure passed"}


# ---------------------------------------------------------------------------- OFF-3 on the adapter's pool


def test_zero_unknown_offset_fails_off3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = _exec("--zero-unknown-offset")
    assert main(["run", "--target", broken, "--only", "OFF-3", "--report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert _lines(out) == {"OFF-3": "fail"}
    assert "an unknown (null) generator offset came back as 0" in out
    saved = read_case(tmp_path / "cases" / "off-3.json")
    assert any(pair["generator_offset"] is None for pair in saved.case["stored"])

"""A plugin session stopped by a signal still writes the command line's report, in every mode (one process,
xdist): the verdicts that finished, a "Stopped early" line naming what was running, results.json saying so;
and nothing of an earlier session's report (another target's) is left beside it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import alive, start_in_session
from tests.support.stalling_targets import MARKER_ENV

ROOT = Path(__file__).resolve().parents[3]
STALLS = "python:tests.support.stalling_targets:stalls_on_serve"
_WAIT_S = 60.0


def _earlier_report(report: Path) -> None:
    """What an earlier session against another target left in the folder."""
    (report / "cases").mkdir(parents=True)
    (report / "report.md").write_text("# Conformance report\n\n- Target: `http://elsewhere`\n", encoding="utf-8")
    (report / "cases" / "so-1.json").write_text("{}", encoding="utf-8")
    (report / "notes.txt").write_text("the user's own", encoding="utf-8")


@pytest.mark.parametrize("mode", [(), ("-n", "2", "--dist", "loadfile")], ids=["one-process", "xdist"])
def test_an_interrupted_session_writes_the_report_of_what_finished(tmp_path: Path, mode: tuple[str, ...]) -> None:
    report = tmp_path / "report"
    _earlier_report(report)
    marker = tmp_path / "stalled"
    env = dict(os.environ) | {MARKER_ENV: str(marker), "PYTHONPATH": str(ROOT)}
    argv = ["-p", "no:cacheprovider", "-q", *mode, "--cascade-target", STALLS, "--cascade-only", "WIRE-2,WIRE-3"]
    command = [sys.executable, "-m", "pytest", *argv, "--cascade-report", str(report)]
    proc = start_in_session(command, tmp_path, cwd=tmp_path, env=env, stderr_to_stdout=True)
    deadline = time.monotonic() + _WAIT_S
    while not (marker.exists() and marker.read_text()):
        assert proc.poll() is None, (tmp_path / "stdout").read_text(encoding="utf-8", errors="replace")
        assert time.monotonic() < deadline, "the target never stalled in WIRE-3"
        time.sleep(0.05)
    stalled = int(marker.read_text())
    os.kill(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(timeout=_WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the session did not stop within a minute of the signal")
    output = (tmp_path / "stdout").read_text(encoding="utf-8", errors="replace")
    assert code == pytest.ExitCode.INTERRUPTED, output
    markdown = (report / "report.md").read_text(encoding="utf-8")
    assert f"- Target: `{STALLS}`" in markdown, markdown
    assert "- **Stopped early**: interrupted during WIRE-3: 1 of 2 finished;" in markdown, markdown
    assert "| WIRE-2 | pass |" in markdown
    assert "WIRE-3 |" not in markdown
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))
    assert [entry["id"] for entry in results["invariants"]] == ["WIRE-2"]
    assert results["interrupted"] == "interrupted during WIRE-3: 1 of 2 finished"
    assert results["exit_code"] == 130
    assert not (report / "cases" / "so-1.json").exists()
    assert (report / "notes.txt").read_text(encoding="utf-8") == "the user's own"
    if mode:  # the xdist worker the target stalled in is ended with the session
        gone_by = time.monotonic() + 10
        while alive(stalled) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert not alive(stalled), "the stalled worker outlived the session"

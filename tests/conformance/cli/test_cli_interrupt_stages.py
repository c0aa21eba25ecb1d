"""SIGINT and SIGTERM at every stage of a run of the real command: while the target starts, mid-example,
while Hypothesis shrinks a failure, while the target is closed, while the report is written. Each time what
the kit launched is reaped, the report says where the run stopped, and the exit code is the signal's."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import alive, start_in_session
from tests.support.stalling_targets import MARKER_ENV

ROOT = Path(__file__).resolve().parents[3]
HOOKS = ROOT / "tests" / "support" / "stall_hooks"
STALLING = "python:tests.support.stalling_targets"
ADAPTER = f"exec:{sys.executable} -m conformance.adapter"
_WAIT_S = 60.0
_STARTS_SLOWLY = (
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)  # never listens"
)

# stage: (the command's options, where the report says the run stopped, the verdicts that finished)
STAGES: dict[str, tuple[list[str], str, list[str]]] = {
    "target-start": (
        ["--target", "http://127.0.0.1:0", "--ls-wiring", "none", "--ready-timeout", "120", "--only", "WIRE-2"],
        "interrupted while the target started: 0 of 1 finished",
        [],
    ),
    "mid-example": (
        ["--target", f"{ADAPTER} {STALLING}:stalls_on_serve", "--only", "WIRE-2,WIRE-3"],
        "interrupted during WIRE-3: 1 of 2 finished",
        ["WIRE-2"],
    ),
    "shrinking": (
        ["--target", f"{ADAPTER} {STALLING}:stalls_while_shrinking", "--only", "WIRE-1"],
        "interrupted during WIRE-1: 0 of 1 finished",
        [],
    ),
    "target-close": (
        ["--target", f"{ADAPTER} {STALLING}:stalls_on_close", "--only", "WIRE-2"],
        "interrupted while the target was closed: every invariant had finished",
        ["WIRE-2"],
    ),
    "report": (
        ["--target", f"{STALLING}:stalls_on_serve", "--only", "WIRE-2"],
        "interrupted while the report was written: every invariant had finished",
        ["WIRE-2"],
    ),
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("stage", list(STAGES))
def test_a_signal_at_any_stage_reaps_reports_where_and_exits_with_its_code(
    tmp_path: Path, stage: str, signum: signal.Signals
) -> None:
    options, stopped, finished = STAGES[stage]
    marker, report = tmp_path / "stalled", tmp_path / "report"
    if stage == "target-start":
        launch = shlex.join([sys.executable, "-c", _STARTS_SLOWLY, str(marker)]) + " --port {port}"
        options = [*options, "--launch", launch]
    env = dict(os.environ) | {MARKER_ENV: str(marker), "PYTHONPATH": str(ROOT)}
    if stage == "report":
        env |= {"CASCADE_TEST_STALL_IN_REPORT": "1", "PYTHONPATH": f"{HOOKS}{os.pathsep}{ROOT}"}
    # -X faulthandler: a kit that hangs is made to show where (SIGABRT dumps every thread's stack).
    argv = [sys.executable, "-X", "faulthandler", "-m", "conformance.cli", "run", "--report", str(report), *options]
    proc = start_in_session(argv, tmp_path, cwd=ROOT, env=env)
    deadline = time.monotonic() + _WAIT_S
    while not (marker.exists() and marker.read_text()):
        assert proc.poll() is None, f"the kit exited before the stall: {_text(tmp_path / 'stderr')}"
        assert time.monotonic() < deadline, f"no stall within {_WAIT_S} s: {_text(tmp_path / 'stderr')}"
        time.sleep(0.05)
    stalled = int(marker.read_text())
    os.kill(proc.pid, signum)  # the kit alone, as `timeout` and CI runners signal it
    try:
        code = proc.wait(timeout=_WAIT_S)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        os.killpg(proc.pid, signal.SIGKILL)
        stacks = _text(tmp_path / "stderr")[-6000:]
        pytest.fail(f"the kit did not stop within {_WAIT_S} s of the signal; where it was:\n{stacks}")
    err = _text(tmp_path / "stderr")
    assert code == 128 + signum, f"exit {code}:\n{err}"
    assert err.rstrip().endswith(stopped), err
    assert "Traceback" not in err + _text(tmp_path / "stdout"), err
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))
    assert (results["interrupted"], results["exit_code"]) == (stopped, 128 + signum)
    assert [entry["id"] for entry in results["invariants"]] == finished
    assert f"- **Stopped early**: {stopped};" in (report / "report.md").read_text(encoding="utf-8")
    assert not (report / "cases").exists(), "a case file from an invariant the signal cut short"
    if stalled != proc.pid:  # a launched gateway or an adapter: reaped, not left running
        gone_by = time.monotonic() + 10
        while alive(stalled) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert not alive(stalled), f"what the kit launched (pid {stalled}) outlived it"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")

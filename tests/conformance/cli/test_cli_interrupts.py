"""Ctrl-C and SIGTERM stop a run cleanly: one line, the report of what finished, exit 128+signal, no
verdict or case file from the interrupted invariant, and every process the kit launched reaped.

Each test starts the real command in a session of its own and signals it as a terminal (SIGINT to
the process group) or ``timeout`` (SIGTERM to the process) does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import alive, descendants, start_in_session
from tests.support.stalling_targets import MARKER_ENV

ROOT = Path(__file__).resolve().parents[3]
STALLS = "python:tests.support.stalling_targets:stalls_on_serve"
_WAIT_S = 60.0


def _start(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ) | {MARKER_ENV: str(tmp_path / "stalled"), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "conformance.cli", "run", "--report", str(tmp_path / "report"), *args]
    return start_in_session(argv, tmp_path, cwd=ROOT, env=env)


def _wait_for(condition: str, check: object, proc: subprocess.Popen[bytes], tmp_path: Path) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not check():  # type: ignore[operator]
        if proc.poll() is not None:
            pytest.fail(f"the kit exited ({proc.returncode}) before {condition}: {_err(tmp_path)}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {condition} within {_WAIT_S} s: {_err(tmp_path)}")
        time.sleep(0.05)


def _err(tmp_path: Path) -> str:
    return (tmp_path / "stderr").read_text(encoding="utf-8", errors="replace")


def _out(tmp_path: Path) -> str:
    return (tmp_path / "stdout").read_text(encoding="utf-8", errors="replace")


def _ended(proc: subprocess.Popen[bytes]) -> int:
    try:
        return proc.wait(timeout=_WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("the kit did not stop within a minute of the signal")


def _assert_stopped_cleanly(code: int, expected_code: int, line: str, tmp_path: Path) -> None:
    err = _err(tmp_path)
    assert code == expected_code, f"exit {code}, expected {expected_code}; stderr:\n{err}"
    assert line in err, f"expected {line!r} in stderr:\n{err}"
    assert "Traceback" not in err + _out(tmp_path), err


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(STALLS, id="python"),
        pytest.param(f"exec:{sys.executable} -m conformance.adapter {STALLS}", id="exec"),
    ],
)
def test_ctrl_c_reports_what_finished_and_drops_the_interrupted_invariant(tmp_path: Path, target: str) -> None:
    proc = _start(tmp_path, "--target", target, "--only", "WIRE-2,WIRE-3,WIRE-4")
    marker = tmp_path / "stalled"
    _wait_for("the stall in WIRE-3", lambda: marker.exists() and marker.read_text(), proc, tmp_path)
    stalled_pid = int(marker.read_text())
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    if target.startswith("exec:"):  # an impatient second Ctrl-C must not cut the clean-up short
        os.killpg(proc.pid, signal.SIGINT)

    _assert_stopped_cleanly(_ended(proc), 130, "interrupted during WIRE-3: 1 of 3 finished", tmp_path)
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "Stopped early**: interrupted during WIRE-3: 1 of 3 finished" in report
    assert "WIRE-2" in report
    assert "WIRE-3 " not in _out(tmp_path)
    assert "1 invariant(s): 1 pass" in _out(tmp_path)
    assert not (tmp_path / "report" / "cases").exists(), "a case file from the interrupted invariant"
    if stalled_pid != proc.pid:  # the exec adapter: reaped, not left running
        assert not alive(stalled_pid), f"the adapter (pid {stalled_pid}) outlived the kit"


def test_sigterm_during_a_launched_gateway_run_reaps_the_gateway_and_its_ls(tmp_path: Path) -> None:
    launch = f"{sys.executable} -m engine.cli serve --port {{port}} --ls-binary {{ls_binary}} --poll-interval-s 0.005"
    proc = _start(
        tmp_path,
        "--target",
        "http://127.0.0.1:0",
        "--launch",
        launch,
        "--ls-wiring",
        "spawn",
        "--model",
        "cascade-base",
        "--only",
        "IMG-1,SO-1",
    )
    _wait_for("the first invariant", lambda: "[1/2] IMG-1" in _err(tmp_path), proc, tmp_path)
    launched = descendants(proc.pid)
    assert len(launched) >= 2, f"expected the gateway and its stand-in LS under the kit, found {launched}"
    os.kill(proc.pid, signal.SIGTERM)  # what `timeout` and CI runners send: the kit alone

    _assert_stopped_cleanly(_ended(proc), 143, "interrupted during IMG-1: 0 of 2 finished", tmp_path)
    left = {pid for pid in launched if alive(pid)}
    assert not left, f"the kit left what it launched running: {left}"


def test_sigterm_ends_a_plugin_session_as_interrupted_and_reaps_the_adapter(tmp_path: Path) -> None:
    """pytest's own convention for an interrupted session (exit 2, the report of what ran), with the
    target closed first: the adapter stalled in WIRE-3 does not outlive the session."""
    env = dict(os.environ) | {MARKER_ENV: str(tmp_path / "stalled"), "PYTHONPATH": str(ROOT)}
    target = f"exec:{sys.executable} -m conformance.adapter {STALLS}"
    junit = tmp_path / "junit.xml"
    argv = ["-p", "no:cacheprovider", "-q", "--cascade-target", target, "--cascade-only", "WIRE-2,WIRE-3"]
    command = [sys.executable, "-m", "pytest", *argv, f"--junitxml={junit}"]
    proc = start_in_session(command, tmp_path, cwd=tmp_path, env=env)
    marker = tmp_path / "stalled"
    _wait_for("the stall in WIRE-3", lambda: marker.exists() and marker.read_text(), proc, tmp_path)
    adapter = int(marker.read_text())
    os.kill(proc.pid, signal.SIGTERM)

    code = _ended(proc)
    output = _out(tmp_path) + _err(tmp_path)
    assert code == 2, output  # pytest.ExitCode.INTERRUPTED
    assert "Interrupted: SIGTERM" in output, output
    assert not alive(adapter), f"the adapter (pid {adapter}) outlived the session"
    report = junit.read_text(encoding="utf-8")
    assert 'name="WIRE-2"' in report, report

"""``cascade-mutations verify`` stopped by SIGINT or SIGTERM: one line, no verdict, exit 128+signal,
and the test run it had started (a pytest in a process group of its own) ended with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import alive
from tests.support.toy_project import ADD_SUBTRACTS, toy_mutation, toy_repo

ROOT = Path(__file__).resolve().parents[2]
_WAIT_S = 60.0


def _stalling_tests(marker: Path) -> str:
    """A test that says where it runs, then waits far longer than the test gives the runner."""
    return (
        "import os, time\nfrom fakels.toy import add\n\n\ndef test_adds():\n"
        f"    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(300)\n    assert add(2, 3) == 5\n"
    )


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_ends_verify_without_a_verdict_and_ends_its_test_run(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    marker = tmp_path / "running"
    root = toy_repo(tmp_path / "toy", [toy_mutation("swap", *ADD_SUBTRACTS)], baseline=1, tests=_stalling_tests(marker))
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mutations.cli", "--root", str(root), "verify", "spec.json", "--jobs", "1"],
            cwd=root,
            env=dict(os.environ) | {"PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=sink,
            start_new_session=True,
        )
        deadline = time.monotonic() + _WAIT_S
        while not (marker.exists() and marker.read_text()):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the toy test never started (exit {proc.poll()}): {err.read_text()}")
            time.sleep(0.05)
        test_run = int(marker.read_text())
        os.kill(proc.pid, sig)  # the command alone: its test run is in a group of its own
        try:
            returncode = proc.wait(timeout=_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("cascade-mutations did not stop within a minute of the signal")
    stderr = err.read_text(encoding="utf-8")
    assert returncode == code, stderr
    assert f"cascade-mutations: interrupted ({sig.name}): no verdict" in stderr
    assert "Traceback" not in stderr
    assert not alive(test_run), f"the test run (pid {test_run}) outlived cascade-mutations"

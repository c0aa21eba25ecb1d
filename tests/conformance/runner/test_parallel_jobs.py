"""``run --jobs N`` through the real command: the verdicts, the output, report.md, junit.xml, results.json and
the case files are a serial run's; a stop signal ends every worker and what each launched."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.jobs import JOBS_ENV, jobs_for
from tests.support.procs import alive, descendants, start_in_session
from tests.support.stalling_targets import MARKER_ENV

ROOT = Path(__file__).resolve().parents[3]
CPUS = os.cpu_count() or 1
FORGETS_FIELDS = "python:tests.support.broken_targets:forgets_fields"
ONLY = "WIRE-1,WIRE-2,OFF-1,WIRE-3"
JOBS_2 = ("--jobs", "2", "--report")  # a failure, a pass, two not checkable: ForgetsFields only decodes


def _same(text: str, folder: Path) -> str:
    """``text`` without what differs between any two runs: the folder, the times, when it started, the command."""
    text = text.replace(str(folder), "REPORT")
    text = re.sub(r"\d+\.\d+s\b|\| [0-9.]+ \|$|time=\"[0-9.]+\"", "T", text, flags=re.M)
    return re.sub(r'^- (Command|Started): .*$|"(command|started)": "[^"]*"|"seconds": [0-9.]+', "", text, flags=re.M)


def _run(tmp_path: Path, jobs: str) -> tuple[int, dict[str, str]]:
    """The real command in a process of its own (in this one pytest would rewrite the kit's assertions, and
    their messages with them, in the serial run only)."""
    folder = tmp_path / jobs
    argv = ["run", "--target", FORGETS_FIELDS, "--only", ONLY, "--jobs", jobs, "--report", str(folder)]
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", *argv],
        cwd=ROOT,
        env=dict(os.environ) | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "hypothesis" not in p.parts)
    seen = {str(p.relative_to(folder)): _same(p.read_text(encoding="utf-8"), folder) for p in files}
    return done.returncode, seen | {"stdout": _same(done.stdout, folder), "stderr": _same(done.stderr, folder)}


def test_two_workers_give_what_one_gives(tmp_path: Path) -> None:
    serial_code, serial = _run(tmp_path, "1")
    parallel_code, parallel = _run(tmp_path, "2")
    assert serial_code == parallel_code == 1
    assert sorted(parallel) == sorted(serial)
    assert "cases/wire-1.json" in serial
    for name in serial:
        assert parallel[name] == serial[name], name
    verdicts = {e["id"]: e["status"] for e in json.loads((tmp_path / "2" / "results.json").read_text())["invariants"]}
    assert verdicts == {"WIRE-1": "fail", "WIRE-2": "pass", "WIRE-3": "not-checkable", "OFF-1": "not-checkable"}


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5"])
def test_jobs_is_a_whole_number_from_1_or_auto(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--jobs", text])
    assert exited.value.code == 2
    assert (
        f"argument --jobs: expected a whole number of workers from 1, or auto; got {text!r}" in capsys.readouterr().err
    )


def test_a_signal_ends_every_worker_and_what_it_launched(tmp_path: Path) -> None:
    marker, report = tmp_path / "stalled", tmp_path / "report"
    target = f"exec:{sys.executable} -m conformance.adapter python:tests.support.stalling_targets:stalls_on_serve"
    argv = [sys.executable, "-m", "conformance.cli", "run", "--target", target, "--only", "WIRE-2,WIRE-3", *JOBS_2]
    env = dict(os.environ) | {MARKER_ENV: str(marker), "PYTHONPATH": str(ROOT)}
    proc = start_in_session([*argv, str(report)], tmp_path, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text() and "[1/2] WIRE-2 ... pass" in _err(tmp_path)):
        assert proc.poll() is None, _err(tmp_path)
        assert time.monotonic() < deadline, f"WIRE-2 never passed and WIRE-3 never stalled: {_err(tmp_path)}"
        time.sleep(0.05)
    launched = descendants(proc.pid)  # the workers and their adapters
    assert int(marker.read_text()) in launched
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the kit did not stop within a minute of the signal")
    assert code == 130, _err(tmp_path)
    assert _err(tmp_path).rstrip().endswith("interrupted during WIRE-3: 1 of 2 finished"), _err(tmp_path)
    assert "Traceback" not in _err(tmp_path)
    gone_by = time.monotonic() + 10
    while any(alive(pid) for pid in launched) and time.monotonic() < gone_by:
        time.sleep(0.05)
    assert not [pid for pid in launched if alive(pid)], "a worker or an adapter outlived the kit"
    assert "| WIRE-2 | pass |" in (report / "report.md").read_text(encoding="utf-8")


def _err(tmp_path: Path) -> str:
    return (tmp_path / "stderr").read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize(
    ("given", "kind", "workers"),
    [
        (None, "python", 2 * CPUS),
        (None, "http", 1),
        (None, "exec", 1),
        ("auto", "http", 2 * CPUS),
        ("1", "python", 1),
        ("3", "exec", 3),
    ],
)
def test_auto_is_two_workers_per_cpu_in_process_and_one_over_a_foreign_gateway(
    given: str | None, kind: str, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JOBS_ENV, raising=False)
    assert jobs_for(given, kind) == workers


def test_the_environment_sets_the_default_and_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JOBS_ENV, "3")
    assert (jobs_for(None, "http"), jobs_for("2", "http")) == (3, 2)
    monkeypatch.setenv(JOBS_ENV, "auto")
    assert jobs_for(None, "exec") == 2 * CPUS
    monkeypatch.setenv(JOBS_ENV, "0")
    with pytest.raises(ValueError, match=f"^{JOBS_ENV}: expected a whole number of workers from 1, or auto; got '0'$"):
        jobs_for(None, "python")

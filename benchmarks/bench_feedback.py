"""The everyday loop's three figures (issue 45): start-up, the README's main job at one worker and at
``--jobs auto`` side by side, and (with ``--tests``) the README's test command.

    python benchmarks/bench_feedback.py [--only IDS] [--tests]

- start-up: the median wall time of ``cascade-conformance --help`` and ``cascade-mutations --help`` (five
  runs each, as a user starts them: the console scripts of this environment);
- the main job: ``cascade-conformance run`` on the embedded reference (``--only`` narrows it), once with
  ``--jobs 1`` and once with ``--jobs auto``, each into a report folder of its own; the ratio of the two
  wall times, and whether their results.json agree (every verdict and count; times aside);
- ``--tests``: ``python -m pytest -n auto -q`` in this checkout, its wall time and its last line.

The aims on 2 cores: start-up under 0.7 s, the main job under 30 s, ``--jobs auto`` at least 1.7 times
faster than ``--jobs 1``, the tests under 5 minutes. The script reports; it does not judge.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _seconds(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done


def _start_up() -> None:
    for script in ("cascade-conformance", "cascade-mutations"):
        times = [_seconds([str(BIN / script), "--help"])[0] for _ in range(5)]
        print(f"start-up  {script} --help: median {statistics.median(times):.2f} s (min {min(times):.2f})")


def _verdicts(results: Path) -> list[dict[str, Any]]:
    document = json.loads(results.read_text(encoding="utf-8"))
    for entry in document["invariants"]:
        entry.pop("seconds")
        entry["waits"].pop("seconds")
    return list(document["invariants"])


def _main_job(only: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        runs: dict[str, tuple[float, int, list[dict[str, Any]]]] = {}
        for jobs in ("1", "auto"):
            report = Path(folder) / jobs
            argv = [str(BIN / "cascade-conformance"), "run", "--jobs", jobs, "--report", str(report)]
            seconds, done = _seconds([*argv, *(["--only", only] if only else [])])
            runs[jobs] = (seconds, done.returncode, _verdicts(report / "results.json"))
            print(
                f"main job  --jobs {jobs:<4}: {seconds:6.1f} s, exit {done.returncode}, {len(runs[jobs][2])} invariants"
            )
    ratio = runs["1"][0] / runs["auto"][0]
    same = "the same verdicts" if runs["1"][2] == runs["auto"][2] else "DIFFERENT verdicts"
    print(f"main job  --jobs auto is {ratio:.2f} times as fast as --jobs 1, with {same}")


def _tests() -> None:
    seconds, done = _seconds([sys.executable, "-m", "pytest", "-n", "auto", "-q", "-p", "no:randomly"])
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"tests     pytest -n auto: {seconds:.1f} s, exit {done.returncode}: {last}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", help="the invariants of the main job (default: all)")
    parser.add_argument("--tests", action="store_true", help="also time the README's test command")
    args = parser.parse_args()
    _start_up()
    _main_job(args.only)
    if args.tests:
        _tests()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Wall time of the whole catalogue against a gateway the kit launches and judges as a black box.

    python benchmarks/bench_blackbox.py [--gateway foreign|busy|polling|scoped|engine|all]

Runs ``cascade-conformance run`` (a subprocess, as a user runs it) against:

- ``foreign``: ``tests/support/foreigngw``, the foreign-style gateway (its own settings only, the
  small store limits the docs' worked example uses);
- ``busy``: the same gateway with one upstream account, polling as well (``FGW_BUSY_EVERY=12``, 1 s
  cool-downs, ``FGW_POLLING=1``): after every twelve turns it answers, in turn, a 200 holding one error
  frame whose wait is only in its text and a 429 with ``retry_after_ms``; the kit waits them out;
- ``polling``: the same gateway streaming what each window of polls found, reasoning and content
  interleaved differently from turn to turn (``FGW_POLLING=1``);
- ``scoped``: foreigngw's ``scoped`` personality as a public gateway is left at its defaults: one API
  key, the usual store caps (400 messages, 100 KB), cache, store reads and cascade reuse only for a
  caller with a per-user signal; the kit sends ``user`` and reads with ``X-Response-User``;
- ``engine``: ``cascade-engine serve`` dialling the kit's fake, with two keys, the ledger, a 5 ms
  poll interval and small store limits, reads scoped by ``X-Response-User``.

Prints each run's wall time, its exit code, its verdict summary line and the time it spent waiting for
the gateway (rate limits and pace) apart from the kit's own. The aims on 2 cores: ``foreign`` under 2
minutes, ``busy`` under 5, the others under 3; the script only reports, it does not judge the time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_COMMON = ["run", "--target", "http://127.0.0.1:0"]
_SMALL_STORE = ["--store-limits", "max_messages=12,max_entry_bytes=64k"]
_FOREIGN_ENV = (
    "FGW_PORT={port}",
    "FGW_LS_ADDRESS={ls_address}",
    "FGW_CSRF_TOKEN={csrf_token}",
    "FGW_API_KEYS=fk-1,fk-2",
    "CASCADE_POLL_INTERVAL_MS=2",
    "FGW_STORE_MAX_MESSAGES=12",
    "FGW_STORE_MAX_ENTRY_BYTES=65536",
    "CASCADE_MAX_WAIT_MS=1500",
)
_ENGINE = (
    f"{sys.executable} -m engine.cli serve --port {{port}} --ls-address {{ls_address}} --csrf-token {{csrf_token}} "
    "--api-key bk-1 --api-key bk-2 --poll-interval-s 0.005 --store-max-messages 12 --store-max-entry-bytes 65536 "
    "--max-wait-s 2.5 --heartbeat-s 0.25"
)


_SCOPED_ENV = (
    "FGW_PORT={port}",
    "FGW_LS_ADDRESS={ls_address}",
    "FGW_CSRF_TOKEN={csrf_token}",
    "FGW_API_KEYS=fk-1",
    "CASCADE_POLL_INTERVAL_MS=2",
    "FGW_PERSONALITY=scoped",
)
_READS = ["--read-scope", "header:x-response-user"]
_BUSY_ENV = ("FGW_BUSY_EVERY=12", "FGW_COOLDOWN_S=1", "FGW_POLLING=1")
_POLLING_ENV = ("FGW_POLLING=1",)
GATEWAYS = ("foreign", "busy", "polling", "scoped", "engine")


def _argv(gateway: str, report: Path) -> list[str]:
    argv = [sys.executable, "-m", "conformance.cli", *_COMMON, "--report", str(report)]
    if gateway != "engine":
        argv += ["--launch", f"{sys.executable} -m tests.support.foreigngw", "--launch-cwd", str(REPO)]
        extra = {"busy": _BUSY_ENV, "polling": _POLLING_ENV}.get(gateway, ())
        for pair in (*(_SCOPED_ENV if gateway == "scoped" else _FOREIGN_ENV), *extra):
            argv += ["--launch-env", pair]
        if gateway != "scoped":
            declared = ["--cache-writes", "apart", "--wait-limit", "1.5", "--other-model", "gpt-5"]
            return [*argv, *_SMALL_STORE, "--api-key", "fk-1", "--api-key", "fk-2", *declared]
        scoped = ["--store-limits", "max_messages=400,max_entry_bytes=100k", "--api-key", "fk-1", *_READS]
        return [*argv, *scoped, "--cache-writes", "apart", "--other-model", "gpt-5"]
    argv += [*_SMALL_STORE, "--launch", _ENGINE, "--api-key", "bk-1", "--api-key", "bk-2", "--cache-writes", "prompt"]
    argv += ["--wait-limit", "2.5", "--heartbeat-interval", "0.25", "--other-model", "gpt-5"]
    return [*argv, "--ledger-path", "/v1/ledger", *_READS]


def _run(gateway: str) -> int:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        done = subprocess.run(_argv(gateway, Path(folder)), cwd=REPO, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        summary = _summary(Path(folder) / "results.json")
    lines = done.stdout.splitlines()
    waiting = next((line for line in lines if line.startswith("time: ")), "time: no waiting for the gateway")
    print(f"{gateway:<8} {seconds:7.1f} s  exit {done.returncode}  {summary}")
    print(f"{'':<8} {waiting}")
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode


def _summary(results: Path) -> str:
    """``51 invariant(s): 17 pass, 15 partial, 19 not-checkable``, counted from results.json's status words."""
    if not results.is_file():
        return "(no results.json)"
    statuses = [entry["status"] for entry in json.loads(results.read_text(encoding="utf-8"))["invariants"]]
    counts = Counter(statuses)
    return f"{len(statuses)} invariant(s): " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway", choices=(*GATEWAYS, "all"), default="all")
    args = parser.parse_args()
    chosen = GATEWAYS if args.gateway == "all" else (args.gateway,)
    codes = [_run(gateway) for gateway in chosen]
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    raise SystemExit(main())

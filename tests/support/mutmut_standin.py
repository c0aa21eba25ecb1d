"""A stand-in for the ``mutmut`` command, for tests of ``python -m mutations.explore``.

It keeps the parts of mutmut 3.8.1's contract the script relies on, on disk as mutmut keeps them:
``run`` writes each mutant's exit code to ``mutants/<module path>.meta`` as soon as it has one; without
mutant names it tests only mutants whose result is null, with names (fnmatch globs) it tests every
matching mutant again; ``export-cicd-stats`` sums the results; ``show NAME`` prints a diff. Which
mutants exist and the exit code each gets come from ``mutmut-plan.json`` in the working directory::

    {"modules": {"fakels/decoder.py": {"fakels.decoder.x_f__mutmut_1": 1}}, "die_after": 2}

``die_after`` makes ``run`` SIGKILL itself after that many results (a machine going down mid-run);
``exit_code`` is what ``run`` exits with; ``stall_s`` makes it sleep before testing; ``leave_behind``
makes it leave a sleeping child in its process group (its pid in ``mutmut-left-behind.pid``), as
mutmut leaves its fork server when it stops early.
Every call's arguments are appended to ``mutmut-calls.jsonl``; the last run's PYTHONHASHSEED is in
``mutmut-hash-seed.txt``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PLAN = Path("mutmut-plan.json")
CALLS = Path("mutmut-calls.jsonl")
MUTANTS = Path("mutants")


def _meta(module_path: str) -> Path:
    return MUTANTS / f"{module_path}.meta"


def _load(module_path: str, names: dict[str, int]) -> dict[str, Any]:
    meta = _meta(module_path)
    old = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"] if meta.exists() else {}
    return {"exit_code_by_key": {name: old.get(name) for name in names}}


def _run(plan: dict[str, Any], names: list[str]) -> int:
    results = {}
    for module_path, codes in plan["modules"].items():  # mutmut makes every module's mutants first
        results[module_path] = data = _load(module_path, codes)
        _meta(module_path).parent.mkdir(parents=True, exist_ok=True)
        _meta(module_path).write_text(json.dumps(data), encoding="utf-8")
    time.sleep(plan.get("stall_s", 0))
    tested = 0
    for module_path, codes in plan["modules"].items():
        data = results[module_path]
        for name, code in codes.items():
            wanted = (
                any(fnmatch.fnmatch(name, glob) for glob in names) if names else data["exit_code_by_key"][name] is None
            )
            if not wanted:
                continue
            if plan.get("die_after") is not None and tested == plan["die_after"]:
                os.kill(os.getpid(), signal.SIGKILL)
            data["exit_code_by_key"][name] = code
            _meta(module_path).write_text(json.dumps(data), encoding="utf-8")
            tested += 1
    print(f"tested {tested}")
    if plan.get("leave_behind"):
        _leave_behind()
    return int(plan.get("exit_code", 0))


def _leave_behind() -> None:
    """A child that outlives this process, as mutmut's fork server does when mutmut stops early."""
    child = os.fork()
    if child == 0:
        time.sleep(120)
        os._exit(0)
    Path("mutmut-left-behind.pid").write_text(str(child), encoding="utf-8")


def _export() -> int:
    fields = {1: "killed", 0: "survived", 33: "no_tests", 36: "timeout"}
    stats = dict.fromkeys(
        [
            "killed",
            "survived",
            "no_tests",
            "skipped",
            "suspicious",
            "timeout",
            "check_was_interrupted_by_user",
            "segfault",
        ],
        0,
    )
    stats["total"] = 0
    for meta in MUTANTS.rglob("*.py.meta"):
        for code in json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"].values():
            stats["total"] += 1
            if code in fields:
                stats[fields[code]] += 1
            elif code == -9:
                stats["segfault"] += 1
    (MUTANTS / "mutmut-cicd-stats.json").write_text(json.dumps(stats), encoding="utf-8")
    return 0


def main(argv: list[str]) -> int:
    with CALLS.open("a", encoding="utf-8") as calls:
        calls.write(json.dumps(argv) + "\n")
    plan = json.loads(PLAN.read_text(encoding="utf-8"))
    if argv[0] == "run":
        Path("mutmut-hash-seed.txt").write_text(os.environ.get("PYTHONHASHSEED", "unset"), encoding="utf-8")
        rest = argv[1:]
        if rest[:1] == ["--max-children"]:
            rest = rest[2:]
        return _run(plan, rest)
    if argv[0] == "export-cicd-stats":
        return _export()
    if argv[0] == "show":
        print(f"# {argv[1]}\n--- a\n+++ b\n@@ -1 +1 @@\n-    return x\n+    return None")
        return 0
    print(f"mutmut stand-in: unknown command {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

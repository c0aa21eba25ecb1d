"""Child process of :func:`mutations.baseline.collect_selections`: several specs' selections collected
in one interpreter, one pytest session each. The test modules are imported once, by the first
session; each later session collects from them again, as its own child process would.

    python -m mutations._collect_many JOBS.json

JOBS.json is a list of ``{"args": [pytest arguments], "out": path}``; each session writes its
collection to ``out`` (``mutations.plugins.collect``) and its exit status to ``out + ".exit"``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


def main(argv: list[str]) -> int:
    jobs = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    for job in jobs:
        os.environ["CASCADE_MUTATION_COLLECT"] = job["out"]
        status = pytest.main(job["args"])
        Path(job["out"] + ".exit").write_text(str(int(status)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

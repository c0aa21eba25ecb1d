"""The ``cascade-mutations`` console script: checks the ``test`` extra (specs run the project's
tests) before importing the runner."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fakels.distribution import guarded_main


def main(argv: Sequence[str] | None = None) -> int:
    return guarded_main("test", "cascade-mutations", "mutations.cli", argv)


if __name__ == "__main__":
    sys.exit(main())

"""The ``cascade-engine`` console script: checks the ``engine`` extra before importing the engine."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fakels.distribution import guarded_main


def main(argv: Sequence[str] | None = None) -> int:
    return guarded_main("engine", "cascade-engine", "engine.cli", argv)


if __name__ == "__main__":
    sys.exit(main())

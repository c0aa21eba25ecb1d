"""The ``cascade-engine`` console script: checks the ``engine`` extra before importing the engine."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fakels.distribution import extra_problem


def main(argv: Sequence[str] | None = None) -> int:
    problem = extra_problem("engine", "cascade-engine")
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    from engine.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())

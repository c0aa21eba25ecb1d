"""The ``cascade-mutations`` console script: checks the ``test`` extra (specs run the project's
tests) before importing the runner."""

from __future__ import annotations

import sys

from fakels.distribution import extra_problem


def main(argv: list[str] | None = None) -> int:
    problem = extra_problem("test", "cascade-mutations")
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    from mutations.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())

"""The ``cascade-conformance`` console script: checks the ``conformance`` extra before importing the suite."""

from __future__ import annotations

import sys

from fakels.distribution import extra_problem


def main(argv: list[str] | None = None) -> int:
    problem = extra_problem("conformance", "cascade-conformance")
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    from conformance.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())

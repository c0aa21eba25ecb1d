"""The ``cascade-conformance`` console script: checks the ``conformance`` extra before importing the suite."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fakels.distribution import guarded_main


def main(argv: Sequence[str] | None = None) -> int:
    return guarded_main("conformance", "cascade-conformance", "conformance.cli", argv)


if __name__ == "__main__":
    sys.exit(main())

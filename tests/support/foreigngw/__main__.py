"""``python -m tests.support.foreigngw``: run the gateway until SIGTERM or SIGINT."""

from __future__ import annotations

import sys

from tests.support.foreigngw.server import main

if __name__ == "__main__":
    sys.exit(main())

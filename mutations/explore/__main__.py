"""``python -m mutations.explore``: an exploratory mutmut run with a real score (see :mod:`mutations.explore.score`)."""

from __future__ import annotations

from mutations.explore.score import main

raise SystemExit(main())

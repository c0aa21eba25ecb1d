"""The Hypothesis profiles the suite takes (``--profile``, ``--cascade-profile``): ``ci`` is
derandomized and bounded, ``thorough`` runs more examples; and the value of the shrink budget
(``--shrink-budget``, ``--cascade-shrink-budget``). Their settings live in :mod:`conformance.runner`;
the names and the parsing live here so option parsers need no Hypothesis."""

from __future__ import annotations

import argparse
import math

PROFILES = ("ci", "thorough")


def shrink_budget(text: str) -> float:
    """The seconds of ``--shrink-budget S``: a non-negative finite number (argparse's type: a bad value
    is one usage line)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, a number such as 60 or 2.5, got {text!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative finite number of seconds, got {text!r}")
    return seconds

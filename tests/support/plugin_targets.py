"""Tiny targets for the pytest plugin's fast tests (``python:tests.support.plugin_targets:...``)."""

from __future__ import annotations

from conformance.errors import TargetError
from tests.support.broken_targets import ForgetsFields

CLOSED: list[str] = []  # one entry per target the plugin closed


class ClosesLoudly(ForgetsFields):
    """ForgetsFields that records its close: the plugin must close the target when the run ends."""

    def close(self) -> None:
        CLOSED.append("closed")


def closes_loudly() -> ClosesLoudly:
    return ClosesLoudly()


def fails_to_start() -> ClosesLoudly:
    raise TargetError("the gateway did not answer on 127.0.0.1:9")

"""Tiny targets for the pytest plugin's fast tests (``python:tests.support.plugin_targets:...``)."""

from __future__ import annotations

from typing import Any

from conformance.errors import GatewayGone, TargetError
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


class EndsMidRun(ForgetsFields):
    """A target whose gateway ends at its first call, as a launched HTTP target's does when it dies."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        raise GatewayGone("the gateway (gw --port 1) exited with code 5 during the run; its last words: 'bye'")


def ends_mid_run() -> EndsMidRun:
    return EndsMidRun()

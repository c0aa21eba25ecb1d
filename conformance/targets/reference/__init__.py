"""The reference target: the kit's own implementations behind the operation protocol.

``ls.*`` operations are served by fakels, ``engine.*``, ``gateway.*``, ``store.*`` and ``session.*``
operations by the reference engine, one module per group of operations beside this one. This
package is the only part of the kit that imports the engine.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from conformance.operations import OPERATIONS
from conformance.targets.reference.engine_ops import EngineOperations
from conformance.targets.reference.gateway_ops import GatewayOperations
from conformance.targets.reference.session_ops import SessionOperations
from conformance.targets.reference.store_ops import StoreOperations
from fakels.clock import ManualClock, SystemClock
from fakels.decoder import RequestDecodeError, decode
from fakels.rpcs import RPCS
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread

REFERENCE_CSRF_TOKEN = "conformance-reference-token"


class ReferenceTarget(EngineOperations, GatewayOperations, StoreOperations, SessionOperations):
    def __init__(self) -> None:
        self._fake: FakeLSThread | None = None
        self._clock: ManualClock | None = None

    def capabilities(self, op: str) -> Mapping[str, Any]:
        if op == "ls.decode_request":
            return {"methods": sorted(RPCS)}
        if op == "session.commit":
            return {"fail_log_write": True}
        if op == "gateway.chat":
            return {"hang_up": True}
        optional = OPERATIONS[op].optional
        return {"observes": list(optional)} if optional else {}

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        rpc = RPCS.get(method)
        if rpc is None:
            return {"rejected": f"unknown method {method!r}"}
        try:
            decoded = decode(rpc.request_type, base64.b64decode(raw_b64))
        except RequestDecodeError as exc:
            return {"rejected": str(exc)}
        return {"fields": decoded.fields, "unknown": [u.to_json() for u in decoded.unknown]}

    def ls_serve(self, scenario: dict[str, Any], manual_clock: bool) -> dict[str, Any]:
        self.ls_stop()
        self._clock = ManualClock() if manual_clock else None
        self._fake = FakeLSThread(
            csrf_token=REFERENCE_CSRF_TOKEN,
            scenario=parse_scenario(scenario, source="ls.serve scenario"),
            clock=self._clock or SystemClock(),
        ).start()
        return {"address": self._fake.address, "csrf_token": REFERENCE_CSRF_TOKEN}

    def ls_journal(self, since: int) -> dict[str, Any]:
        return {"entries": [entry.to_json() for entry in self._served().journal.entries(since=since)]}

    def ls_advance_clock(self, seconds: float) -> dict[str, Any]:
        if self._clock is None:
            raise RuntimeError("ls.advance_clock needs a server started with manual_clock=true")
        self._clock.advance(seconds)
        return {}

    def ls_stop(self) -> dict[str, Any]:
        if self._fake is not None:
            self._fake.stop()
            self._fake = None
        return {}

    def close(self) -> None:
        self.gateway_stop()
        self._finish_stopping()
        self.store_close()
        self.session_close()
        self.ls_stop()

    def _served(self) -> FakeLSThread:
        if self._fake is None:
            raise RuntimeError("no language server is being served: call ls.serve first")
        return self._fake


def make_target() -> ReferenceTarget:
    return ReferenceTarget()

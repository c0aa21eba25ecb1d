"""Encoded requests straight into the transport-independent core (:class:`FakeLanguageServer`),
on a ManualClock, with every reply payload and the journal at hand. Shared by the contract tests
of overrides, journal, cascade counters and service details."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType

from google.protobuf.message import Message

from fakels.clock import ManualClock
from fakels.journal import Journal
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import SERVICE_NAME
from fakels.scenario import Scenario
from fakels.service import FakeLanguageServer, IncomingCall, Reply, ServerConfig

SESSION = "session-1"


class CoreCalls:
    """One in-process fake LS core; a context manager that closes its event loop."""

    def __init__(
        self, scenario: Scenario | None = None, *, journal: Journal | None = None, csrf_token: str | None = None
    ) -> None:
        self.clock = ManualClock()
        config = ServerConfig(scenario=scenario or Scenario(), cascade_id_prefix="test", csrf_token=csrf_token)
        self.core = FakeLanguageServer(config, journal, clock=self.clock)
        self.journal = self.core.journal
        self._loop = asyncio.new_event_loop()

    def __enter__(self) -> CoreCalls:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._loop.close()

    def raw(
        self,
        path: str,
        messages: Sequence[bytes],
        *,
        headers: Mapping[str, str] | None = None,
        cancelled: bool = False,
    ) -> Reply:
        incoming = IncomingCall("grpc", path, dict(headers or {}), list(messages), cancelled=cancelled)
        return self._loop.run_until_complete(self.core.handle(incoming))

    def call(self, method: str, request: Message) -> Reply:
        return self.raw(f"/{SERVICE_NAME}/{method}", [request.SerializeToString()])

    def start(self) -> str:
        reply = self.call("StartCascade", ls.StartCascadeRequest(metadata=common.Metadata(session_id=SESSION)))
        assert reply.ok, reply
        return ls.StartCascadeResponse.FromString(reply.payloads[0]).cascade_id

    def send(self, cascade_id: str, *texts: str) -> Reply:
        request = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id,
            items=[common.TextOrScopeItem(text=t) for t in texts],
            metadata=common.Metadata(session_id=SESSION),
        )
        return self.call("SendUserCascadeMessage", request)

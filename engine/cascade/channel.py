"""One gRPC connection to one language server, with the CSRF header and client-side timers.

Like the reference client, every call carries ``x-codeium-csrf-token`` and its timeout is a
client-side timer: no ``grpc-timeout`` header is sent, and on expiry the call is cancelled
(RST_STREAM CANCEL). Failures become :class:`engine.cascade.errors.LsCallError` carrying the LS's own
message text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from engine.cascade.errors import LsCallError
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc

CSRF_HEADER = "x-codeium-csrf-token"
M = TypeVar("M", bound=Message)
log = logging.getLogger("engine.cascade")


@dataclass(frozen=True)
class CallTimeouts:
    """Per-call timers in seconds (wire.md section 1.5)."""

    default_s: float = 30.0  # StartCascade, SendUserCascadeMessage, GetCascadeTrajectory(Steps)
    warmup_s: float = 5.0  # InitializeCascadePanelState, AddTrackedWorkspace, UpdateWorkspaceTrust, Heartbeat
    generator_metadata_s: float = 5.0
    interaction_s: float = 10.0  # HandleCascadeUserInteraction


class LsChannel:
    """A pooled HTTP/2 (h2c) channel to ``address`` ("host:port"); thread-safe, close when done."""

    def __init__(self, address: str, csrf_token: str) -> None:
        self.address = address
        self._metadata = ((CSRF_HEADER, csrf_token),)
        self._channel = grpc.insecure_channel(address)
        self._stub = ls_grpc.LanguageServerServiceStub(self._channel)

    def call(self, method: str, request: Message, response_type: type[M], timeout_s: float) -> M:
        """Call ``method`` and wait at most ``timeout_s``; raise :class:`LsCallError` on any failure."""
        future = getattr(self._stub, method).future(request, metadata=self._metadata)
        try:
            response = future.result(timeout=max(timeout_s, 0.001))
        except grpc.FutureTimeoutError:
            future.cancel()
            raise LsCallError(method, "DEADLINE_EXCEEDED", f"no answer within {timeout_s:g} s (cancelled)") from None
        except grpc.RpcError as exc:
            code = exc.code()
            raise LsCallError(method, code.name if code is not None else "UNKNOWN", exc.details() or "") from None
        if not isinstance(response, response_type):
            raise LsCallError(method, "INTERNAL", f"unexpected response type {type(response).__name__}")
        return response

    def close(self) -> None:
        self._channel.close()

"""gRPC over h2c with grpcio: raw bytes in, raw bytes out, every method, one generic handler.

Methods are registered as client-streaming handlers without deserializers so the pipeline sees
exactly the messages grpcio framed, including none at all (a truncated frame or an empty body)
or several; decoding happens in :mod:`fakels.service` where unknown fields survive.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc
from grpc import aio

from fakels.rpcs import rpc_for_path
from fakels.service import FakeLanguageServer, IncomingCall, Reply

_SERVER_OPTIONS = [
    # Size limits are the pipeline's, so oversized requests are journaled with a clear message.
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.so_reuseport", 0),
]


class _Handler(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, core: FakeLanguageServer) -> None:
        self._core = core

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        path: str = handler_call_details.method
        headers = _joined((key, _header_text(value)) for key, value in handler_call_details.invocation_metadata)
        rpc = rpc_for_path(path)
        if rpc is not None and rpc.server_streaming:
            return grpc.stream_stream_rpc_method_handler(self._streaming(path, headers))
        return grpc.stream_unary_rpc_method_handler(self._unary(path, headers))

    async def _collect(self, path: str, headers: dict[str, str], requests: AsyncIterator[bytes]) -> Reply:
        messages: list[bytes] = []
        framing_error = None
        try:
            async for message in requests:
                messages.append(message)
        except asyncio.CancelledError:
            # The client reset the stream or closed the connection mid-request: journal the call
            # (handle() does not suspend for a rejected call), then let grpcio finish cancelling.
            await self._core.handle(IncomingCall("grpc", path, headers, messages, cancelled=True))
            raise
        except Exception as exc:  # grpcio surfaces transport-level read failures here
            framing_error = f"{type(exc).__name__}: {exc}"
        call = IncomingCall("grpc", path, headers, messages, framing_error)
        return await self._core.handle(call)

    def _unary(self, path: str, headers: dict[str, str]) -> Any:
        async def handler(requests: AsyncIterator[bytes], context: aio.ServicerContext[bytes, bytes]) -> bytes:
            reply = await self._collect(path, headers, requests)
            if not reply.ok:
                await context.abort(reply.code, reply.message)
            return reply.payloads[0] if reply.payloads else b""

        return handler

    def _streaming(self, path: str, headers: dict[str, str]) -> Any:
        async def handler(
            requests: AsyncIterator[bytes], context: aio.ServicerContext[bytes, bytes]
        ) -> AsyncIterator[bytes]:
            reply = await self._collect(path, headers, requests)
            if not reply.ok:
                await context.abort(reply.code, reply.message)
            for payload in reply.payloads:
                yield payload

        return handler


def _header_text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Repeated metadata joined with ", " (RFC 9110 section 5.3), so a header sent twice is not read as
    just one of its values: a CSRF token sent once wrong and once right does not match."""
    headers: dict[str, str] = {}
    for key, value in pairs:
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


async def start_grpc_server(core: FakeLanguageServer, host: str, port: int) -> tuple[aio.Server, int]:
    """Start a grpc.aio server for ``core`` on ``host:port`` (0 = any free port)."""
    server = aio.server(options=_SERVER_OPTIONS)
    server.add_generic_rpc_handlers([_Handler(core)])
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:  # grpc.aio raises where the sync server returns 0
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port} (port in use?)")
    await server.start()
    return server, bound

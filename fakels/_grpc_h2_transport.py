"""gRPC over h2c written by hand, on fakels' own HTTP/2 server: the port a gateway dials when the kit must
fail a call at the HTTP level, which grpcio's server never does on purpose.

A request is ``POST application/grpc`` whose body is length-prefixed messages (a flag byte, 4-byte
big-endian length, the message); every finished request reaches :meth:`FakeLanguageServer.handle` like
the grpcio port's. An answer is ``:status 200`` with each payload framed the same way, then trailers
``grpc-status`` and ``grpc-message`` (percent-encoded); an error is trailers-only. A reply carrying a
:class:`~fakels.cascade.TransportFault` is sent as scripted instead: an HTTP error status with a text body
and no gRPC status, or the answer's frame cut mid-message and the stream ended without trailers.
"""

from __future__ import annotations

import urllib.parse

import grpc

from fakels._envelopes import HEADER_BYTES, FramingError, envelope, split_envelopes
from fakels._h2_server import H2Answer, H2Server, H2Stream, start_h2_server
from fakels.service import FakeLanguageServer, IncomingCall, Reply

CONTENT_TYPE = "application/grpc"
_COMPRESSED = 0x01


class GrpcH2Protocol:
    """gRPC's answers to finished requests (see the module docstring)."""

    transport = "grpc-h2"

    async def answer(self, core: FakeLanguageServer, stream: H2Stream) -> H2Answer:
        content_type = stream.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if stream.method != "POST" or not content_type.startswith(CONTENT_TYPE):
            why = f"fakels' gRPC port takes POST {CONTENT_TYPE}, not {stream.method} {content_type or '(none)'}"
            return H2Answer([(":status", "415"), ("content-type", "text/plain")], why.encode())
        messages, framing_error = _unframe(bytes(stream.body))
        call = IncomingCall(self.transport, stream.path, stream.headers, messages, framing_error)
        try:
            reply = await core.handle(call)
        except Exception as exc:  # the core promises not to raise; if it does, the client still gets an answer
            reply = Reply(grpc.StatusCode.INTERNAL, f"fakels: internal error in the gRPC h2 transport: {exc!r}")
        return _answer(reply)


async def start_grpc_h2_server(core: FakeLanguageServer, host: str, port: int) -> H2Server:
    """Serve ``core`` over hand-written gRPC on ``host:port`` (0 = any free port)."""
    return await start_h2_server(core, host, port, GrpcH2Protocol())


def _answer(reply: Reply) -> H2Answer:
    headers = [(":status", "200"), ("content-type", CONTENT_TYPE)]
    fault = reply.transport_fault
    if fault is not None and fault.http_status is not None:
        body = f"upstream answered HTTP {fault.http_status} (scripted by fakels)\n".encode()
        return H2Answer([(":status", str(fault.http_status)), ("content-type", "text/plain")], body)
    if fault is not None:  # the frame declares the whole message, half of it follows, and the stream ends
        payload = reply.payloads[0] if reply.payloads else b""
        return H2Answer(headers, envelope(0, payload)[: HEADER_BYTES + len(payload) // 2])
    trailers = [("grpc-status", str(reply.code.value[0])), ("grpc-message", _percent_encoded(reply.message))]
    if not reply.ok:
        return H2Answer([*headers, *trailers])
    return H2Answer(headers, b"".join(envelope(0, p) for p in reply.payloads), trailers)


def _unframe(body: bytes) -> tuple[list[bytes], str | None]:
    """The request's messages, or the whole body and what is wrong with its framing."""
    messages: list[bytes] = []
    try:
        for offset, flags, payload in split_envelopes(body, "frame"):
            if flags & _COMPRESSED:
                return [body], f"the frame at byte {offset} is compressed; fakels' gRPC port takes none"
            messages.append(payload)
    except FramingError as exc:
        return [body], str(exc)
    return messages, None


def _percent_encoded(message: str) -> str:
    """``grpc-message`` as gRPC sends it: UTF-8, with ``%`` and bytes outside printable ASCII percent-encoded."""
    return urllib.parse.quote(message, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")

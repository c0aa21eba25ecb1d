"""Connect protocol (streaming envelopes) over cleartext HTTP/2 with prior knowledge, on asyncio + h2.

Real clients in ``GRPC_PROTOCOL=connect`` mode POST ``application/connect+proto`` with every call,
unary or not, framed as envelopes (flag byte, 4-byte big-endian length, payload); flag 0x01 means a
gzip payload even though no ``connect-content-encoding`` header is sent, so the flag alone decides.
The answer is ``:status 200`` with one uncompressed data envelope per message and an end-of-stream
envelope (flag 0x02) holding ``{}`` or ``{"error": {"code", "message"}}``; clients read the error
from there and ignore the HTTP status.

Only ``application/connect+proto`` is served. ``application/proto`` is Connect's unenveloped unary
protocol, which no real client of the LS sends; it is refused like any other content type, with
HTTP 415 and a Connect JSON error body (a non-POST gets 405 the same way). Unknown methods get HTTP
404, as from a Connect router, but still the end-stream error, so a client that ignores the status
fails the call. Every request reaches :meth:`FakeLanguageServer.handle`, so the journal records
rejections too, including requests the client abandoned; on a framing problem the entry's ``raw``
holds the whole HTTP body.
"""

from __future__ import annotations

import json
import zlib

import grpc

from fakels._envelopes import FramingError, envelope, split_envelopes
from fakels._h2_server import H2Answer, H2Server, H2Stream, start_h2_server
from fakels.rpcs import rpc_for_path
from fakels.service import FakeLanguageServer, IncomingCall, Reply

CONTENT_TYPE = "application/connect+proto"

_GZIP = 0x01
_END_STREAM = 0x02
# Connect spells the gRPC code names in snake case, and CANCELLED with one L.
_CONNECT_CODES = {code: code.name.lower() for code in grpc.StatusCode} | {grpc.StatusCode.CANCELLED: "canceled"}


class ConnectProtocol:
    """Connect's answers to finished requests (see the module docstring)."""

    transport = "connect"

    async def answer(self, core: FakeLanguageServer, stream: H2Stream) -> H2Answer:
        body = bytes(stream.body)
        http_status, framing_error = _request_problem(stream)
        messages = [body]  # on any framing problem the journal keeps the whole body
        if framing_error is None:
            try:
                messages = _unframe(body, core.config.max_request_bytes)
            except FramingError as exc:
                framing_error = str(exc)
        call = IncomingCall("connect", stream.path, stream.headers, messages, framing_error)
        try:
            reply = await core.handle(call)
        except Exception as exc:  # the core promises not to raise; if it does, the client still gets an answer
            reply = Reply(grpc.StatusCode.INTERNAL, f"fakels: internal error in the Connect transport: {exc!r}")
        if http_status == 200 and rpc_for_path(stream.path) is None:
            http_status = 404
        if http_status in (200, 404):
            headers = [
                (":status", str(http_status)),
                ("content-type", CONTENT_TYPE),
                ("connect-accept-encoding", "gzip"),
            ]
            return H2Answer(headers, _envelopes(reply))
        headers = [
            (":status", str(http_status)),
            ("content-type", "application/json"),
            ("accept-post", CONTENT_TYPE),
        ]
        return H2Answer(headers, json.dumps(_error_json(reply)["error"]).encode())  # Connect's unenveloped error


async def start_connect_server(core: FakeLanguageServer, host: str, port: int) -> H2Server:
    """Serve ``core`` over Connect on ``host:port`` (0 = any free port)."""
    return await start_h2_server(core, host, port, ConnectProtocol())


def _request_problem(stream: H2Stream) -> tuple[int, str | None]:
    """The HTTP status to answer with, and what is wrong with the request line, if anything."""
    if stream.method != "POST":
        return 405, f"unsupported HTTP method {stream.method!r}; fakels' Connect port takes POST"
    content_type = stream.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != CONTENT_TYPE:
        return 415, f"unsupported content-type {content_type!r}; fakels' Connect port takes {CONTENT_TYPE}"
    return 200, None


def _unframe(body: bytes, limit: int) -> list[bytes]:
    """Split a request body into envelope payloads, gunzipped per flag; :class:`FramingError` says why not."""
    messages: list[bytes] = []
    for offset, flags, payload in split_envelopes(body, "envelope"):
        if flags & ~_GZIP:
            raise FramingError(
                f"envelope at byte {offset} has flags 0x{flags:02x}; a request envelope may only set 0x01 (gzip)"
            )
        if flags & _GZIP:
            try:
                payload = _gunzip(payload, limit)
            except (OSError, EOFError, zlib.error) as exc:
                raise FramingError(
                    f"envelope at byte {offset} is flagged gzip (0x01) but does not gunzip: {exc}"
                ) from exc
        messages.append(payload)
    return messages


def _gunzip(payload: bytes, limit: int) -> bytes:
    """Inflate at most ``limit + 1`` bytes: enough for the size check to reject a gzip bomb
    without ever holding it in memory."""
    inflater = zlib.decompressobj(wbits=31)
    out = inflater.decompress(payload, limit + 1)
    if len(out) <= limit and not inflater.eof:
        raise zlib.error("incomplete gzip stream")
    return out


def _envelopes(reply: Reply) -> bytes:
    end = json.dumps(_error_json(reply) if not reply.ok else {}).encode()
    frames = [envelope(0, payload) for payload in reply.payloads]
    frames.append(envelope(_END_STREAM, end))
    return b"".join(frames)


def _error_json(reply: Reply) -> dict[str, dict[str, str]]:
    return {"error": {"code": _CONNECT_CODES[reply.code], "message": reply.message}}

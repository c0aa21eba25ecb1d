"""Just enough HTTP/1.1 on asyncio streams for the control endpoint (stdlib only).

One request per connection: :func:`read_head` and :func:`read_body` parse it strictly,
:func:`write_response` answers with ``Connection: close`` and :func:`close_connection` half-closes,
drains what the client still sends (so an early error answer is not lost to a TCP reset) and
closes. Every framing problem raises :class:`HttpError` carrying the status and a readable text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON_TYPE = "application/json"
MAX_LINE_BYTES = 8 * 1024  # also the StreamReader limit the server must be started with
_MAX_HEADER_LINES = 100
_LINGER_S = 1.0
_WRITE_TIMEOUT_S = 30.0

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(r"HTTP/1\.[01]")
_DIGITS = re.compile(r"[0-9]+")


class HttpError(Exception):
    """A request the server answers with an error status and ``{"error": message}``."""

    def __init__(self, status: HTTPStatus, message: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers

    def response(self) -> Response:
        return json_response(self.status, {"error": self.message}, headers=self.headers)


@dataclass(frozen=True)
class RequestHead:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "


@dataclass(frozen=True)
class Request:
    head: RequestHead
    body: bytes


@dataclass(frozen=True)
class Response:
    status: HTTPStatus
    body: bytes
    content_type: str = JSON_TYPE
    headers: tuple[tuple[str, str], ...] = ()


def json_response(status: HTTPStatus, value: Any, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8")
    return Response(status, body, JSON_TYPE, headers)


# ------------------------------------------------------------------ reading


async def read_head(reader: asyncio.StreamReader) -> RequestHead | None:
    """The request line and headers, or None when the client closed before sending anything."""
    line = await _read_line(reader, HTTPStatus.BAD_REQUEST, "request line")
    if line in (b"\r\n", b"\n"):  # RFC 9112 section 2.2: ignore an empty line before the request line
        line = await _read_line(reader, HTTPStatus.BAD_REQUEST, "request line")
    if not line:
        return None
    method, path, query = _parse_request_line(line)
    return RequestHead(method, path, query, await _read_headers(reader))


async def read_body(reader: asyncio.StreamReader, head: RequestHead, max_bytes: int) -> bytes:
    """The body announced by Content-Length (POST must announce one; chunked is refused)."""
    if "transfer-encoding" in head.headers:
        raise HttpError(
            HTTPStatus.LENGTH_REQUIRED,
            "transfer-encoding is not supported: send the body with a Content-Length header",
        )
    value = head.headers.get("content-length")
    if value is None:
        if head.method == "POST":
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "POST needs a Content-Length header")
        return b""
    if not _DIGITS.fullmatch(value):
        raise HttpError(HTTPStatus.BAD_REQUEST, f"invalid Content-Length {value[:40]!r}: expected a byte count")
    if len(value) > 12 or int(value) > max_bytes:
        raise HttpError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"request body of {value[:40]} bytes exceeds the limit of {max_bytes} bytes",
        )
    try:
        return await reader.readexactly(int(value))
    except asyncio.IncompleteReadError as exc:
        raise HttpError(
            HTTPStatus.BAD_REQUEST, f"request body ended after {len(exc.partial)} of {value} bytes"
        ) from None


async def _read_line(reader: asyncio.StreamReader, too_long: HTTPStatus, what: str) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # the line is longer than the reader's limit
        raise HttpError(too_long, f"{what} longer than {MAX_LINE_BYTES} bytes") from None


def _parse_request_line(line: bytes) -> tuple[str, str, dict[str, list[str]]]:
    expected = "expected 'METHOD /path HTTP/1.1'"
    shown = repr(line[:80])
    if not line.endswith(b"\n"):
        raise HttpError(HTTPStatus.BAD_REQUEST, f"incomplete request line {shown}: {expected}")
    try:
        text = line.rstrip(b"\r\n").decode("ascii")
    except UnicodeDecodeError:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"malformed request line {shown}: not ASCII; {expected}") from None
    parts = text.split(" ")
    if (
        len(parts) != 3
        or not _TOKEN.fullmatch(parts[0])
        or not parts[1].startswith("/")
        or not _VERSION.fullmatch(parts[2])
    ):
        raise HttpError(HTTPStatus.BAD_REQUEST, f"malformed request line {shown}: {expected}")
    target = urlsplit(parts[1])
    return parts[0], target.path, parse_qs(target.query)


async def _read_headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADER_LINES + 1):  # the header lines and the blank line ending them
        line = await _read_line(reader, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "header line")
        if not line.endswith(b"\n"):
            raise HttpError(HTTPStatus.BAD_REQUEST, "connection closed inside the header section")
        if line in (b"\r\n", b"\n"):
            return headers
        _add_header(headers, line.rstrip(b"\r\n").decode("latin-1"))
    raise HttpError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, f"more than {_MAX_HEADER_LINES} header lines")


def _add_header(headers: dict[str, str], line: str) -> None:
    name, colon, value = line.partition(":")
    if not colon or not _TOKEN.fullmatch(name):
        raise HttpError(HTTPStatus.BAD_REQUEST, f"malformed header line {line[:80]!r}: expected 'Name: value'")
    name, value = name.lower(), value.strip(" \t")
    if name in headers:
        if name == "content-length" and headers[name] != value:
            raise HttpError(HTTPStatus.BAD_REQUEST, "conflicting Content-Length headers")
        value = value if name == "content-length" else f"{headers[name]}, {value}"
    headers[name] = value


# ------------------------------------------------------------------ writing


async def write_response(writer: asyncio.StreamWriter, response: Response, *, head_only: bool = False) -> None:
    lines = [
        f"HTTP/1.1 {response.status.value} {response.status.phrase}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Cache-Control: no-store",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    if not head_only:
        writer.write(response.body)
    await asyncio.wait_for(writer.drain(), _WRITE_TIMEOUT_S)


async def close_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close, discard what the client still sends for a moment, then close."""
    try:
        with contextlib.suppress(Exception):
            if writer.can_write_eof() and not writer.is_closing():
                writer.write_eof()
            async with asyncio.timeout(_LINGER_S):
                while await reader.read(64 * 1024):
                    pass
    finally:
        writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()

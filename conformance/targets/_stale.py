"""Stale keep-alive connections: a gateway that closes an idle connection just as the kit reuses it.

Node servers close idle keep-alive connections after about 5 s; a kit that waited out a cool-down and
then sends on its pooled connection meets "Server disconnected without sending a response". Nothing of
an answer arrived, so the request is sent once more, on a fresh connection (the pool drops the closed
one); that is no verdict about the gateway. A second such close is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

from conformance.errors import TargetError, TargetHung

try:
    import httpx2 as _transport
except ImportError:  # openai before 3.x drives httpx
    import httpx as _transport  # type: ignore[no-redef]

_T = TypeVar("_T")


class StaleConnection(Exception):
    """The gateway closed a kept-alive connection before it sent a byte of the answer."""


# What h11 says when a server closes the connection before its answer's first byte: Node servers close
# idle keep-alive connections after about 5 s, and a request sent on one just then meets this.
_NOT_ANSWERED = "without sending a response"


def stale(exc: BaseException) -> bool:
    """``exc`` (or what caused it) is a connection closed before any byte of an answer arrived."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _transport.RemoteProtocolError) and _NOT_ANSWERED in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def once_more_if_stale(attempt: Callable[[], _T], failed: Callable[[str], str], what: str) -> _T:
    """``attempt()``, and once more on a fresh connection when the first met a stale one (the pool drops
    a connection the server closed); a second stale connection is the target's failure."""
    try:
        return attempt()
    except StaleConnection:
        pass
    try:
        return attempt()
    except StaleConnection as exc:
        raise TargetError(
            failed(f"{what} failed: the gateway closed the connection without answering, twice ({exc.__cause__})")
        ) from None


@contextlib.contextmanager
def transport_failures(what: str, failed: Callable[[str], str], timeout_s: float) -> Iterator[None]:
    """The transport's failures as the kit's: a timeout is :class:`TargetHung`, a stale connection
    :class:`StaleConnection` (to be tried once more), any other a :class:`TargetError` saying ``what`` failed."""
    try:
        yield
    except _transport.TimeoutException:
        raise TargetHung(failed(f"no answer to {what} within {timeout_s:g} s")) from None
    except _transport.HTTPError as exc:
        if stale(exc):
            raise StaleConnection from exc
        raise TargetError(failed(f"{what} failed: {exc}")) from None

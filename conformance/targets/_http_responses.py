"""``gateway.respond`` and ``gateway.retrieve`` over HTTP: ``POST /v1/responses`` (its JSON body, or the data
of its event stream's events) and ``GET /v1/responses/{id}``.

The body goes as given (the caller's per-user signal is already in it, as for ``gateway.chat``); a read
carries the signal of the example's caller with that key (--read-scope). A rate limit is waited out as
for chat; a timeout, a broken connection or a stream that breaks off is the target's failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from conformance.errors import TargetError
from conformance.targets._sse import sse_events, sse_lines
from conformance.targets._stale import once_more_if_stale, transport_failures

if TYPE_CHECKING:
    from conformance.targets._pace import Patience

try:
    import httpx2 as _transport
except ImportError:  # openai before 3.x drives httpx
    import httpx as _transport  # type: ignore[no-redef]

RESPONSES_PATH = "/v1/responses"
_Answer = tuple[dict[str, Any], Mapping[str, str]]


class HttpResponses:
    """``url``: the gateway's base URL, read when a request is made (a launched gateway's port is known late);
    ``read``: a bodyless GET as a caller (an API key, and a signal or the example caller's) (status, JSON or text
    body);
    ``lines``: a stream's lines within the request timeout; ``failed``: a failure described for the report."""

    def __init__(
        self,
        *,
        client: _transport.Client,
        url: Callable[[], str],
        timeout_s: Callable[[], float],
        patience: Patience,
        read: Callable[[str, str, object], tuple[int, Any]],
        lines: Callable[[Iterator[str], str], Iterator[str]],
        failed: Callable[[str], str],
    ) -> None:
        self._client = client
        self._url = url
        self._timeout_s = timeout_s
        self._patience = patience
        self._read = read
        self._lines = lines
        self._failed = failed

    def respond(self, request: Mapping[str, Any], api_key: str) -> dict[str, Any]:
        """One Responses request; a rate limit is waited out, the last answer returned."""
        answer, _ = self._patience.run(
            lambda: once_more_if_stale(lambda: self._attempt(request, api_key), self._failed, f"POST {RESPONSES_PATH}"),
            what_it_said,
            "the gateway",
        )
        return answer

    def retrieve(self, response_id: str, api_key: str, signal: object) -> dict[str, Any]:
        """``signal``: the reader's per-user signal (None: none), or the example caller's with that key."""
        status, body = self._read(f"{RESPONSES_PATH}/{response_id}", api_key, signal)
        return {"status": status, "body": body}

    def _attempt(self, request: Mapping[str, Any], api_key: str) -> _Answer:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        what = f"POST {RESPONSES_PATH}"
        try:
            with transport_failures(what, self._failed, self._timeout_s()):
                return self._post(request, headers, what)
        except _transport.StreamError as exc:
            raise TargetError(self._failed(f"the event stream of {what} broke off: {exc}")) from None

    def _post(self, request: Mapping[str, Any], headers: Mapping[str, str], what: str) -> _Answer:
        url, timeout = self._url() + RESPONSES_PATH, self._timeout_s()
        if request.get("stream") is not True:
            answer = self._client.post(url, json=dict(request), headers=headers, timeout=timeout)
            return {"status": answer.status_code, "body": body_of(answer.content)}, answer.headers
        with self._client.stream("POST", url, json=dict(request), headers=headers, timeout=timeout) as streamed:
            if not streamed.headers.get("content-type", "").lower().startswith("text/event-stream"):
                return {"status": streamed.status_code, "body": body_of(streamed.read())}, streamed.headers
            events = list(sse_events(self._lines(sse_lines(streamed.iter_text()), what)))
            return {"status": streamed.status_code, "events": events}, streamed.headers


def what_it_said(answer: _Answer) -> tuple[int, Mapping[str, str], Any]:
    """An answer as the rate-limit wait reads it: its status, its headers, and its body or events."""
    result, headers = answer
    return result["status"], headers, result.get("body", result.get("events"))


def body_of(content: bytes) -> Any:
    """A response body: its JSON, or its text when it is not JSON."""
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", errors="replace")

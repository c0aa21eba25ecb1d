"""The ``store.*`` operations of a black-box gateway, through its OpenAI Responses API.

* ``store.put``: the wired fake LS is loaded with one turn playing the answer (a text, or one tool
  call), then ``POST /v1/responses`` with the conversation as ``input`` and ``store: true``; what
  the gateway appended is the ``output`` it answered (reasoning items left out: never stored);
* ``store.get``: ``GET /v1/responses/{id}/input_items`` (every page) is the stored conversation,
  ``GET /v1/responses/{id}`` the answer served back (its last message's text);
* ``store.delete``: ``DELETE /v1/responses/{id}``.

A gateway's store limits are fixed at launch: the kit draws examples for the limits declared with
``--store-limits`` (default: the reference's, :data:`DEFAULT_STORE_LIMITS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.ls_handle import LsHandle
from conformance.targets._base import PreconditionNotMet, TargetError, TargetSpecError

try:
    import httpx2 as _transport
except ImportError:  # openai before 3.x drives httpx
    import httpx as _transport  # type: ignore[no-redef]

# The reference's defaults: 400 messages; an entry budget of a quarter of 128 MiB.
DEFAULT_STORE_LIMITS = {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}
# Requests (and answers the fake plays) beyond this are not sent: an example that needs one is not
# checkable on this gateway (the fake's control endpoint takes scenarios up to 16 MiB).
MAX_BODY_BYTES = 15 * 1024 * 1024
_SIZE = re.compile(r"^(\d+)\s*(b|k|kb|m|mb|g|gb)?$", re.IGNORECASE)
_SCALE = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
_PAGE = 100


def parse_store_limits(text: str, flag: str = "--store-limits") -> dict[str, int]:
    """``max_messages=N,max_entry_bytes=SIZE`` (SIZE like 102400, 100k or 1m; 1024-based)."""
    limits = dict(DEFAULT_STORE_LIMITS)
    for pair in text.split(","):
        name, sep, value = pair.strip().partition("=")
        if not sep or name not in limits:
            raise TargetSpecError(
                f"{flag} {text!r}: expected max_messages=N,max_entry_bytes=SIZE (e.g. max_messages=40,"
                "max_entry_bytes=100k)"
            )
        found = _SIZE.match(value.strip())
        number = int(found.group(1)) * _SCALE[(found.group(2) or "").lower()] if found else 0
        if number < 1:
            raise TargetSpecError(f"{flag}: {name} must be a positive integer or size, got {value!r}")
        limits[name] = number
    return limits


class HttpStore:
    """The store operations over one gateway's HTTP API (``request``: the target's client call)."""

    def __init__(
        self,
        request: Callable[..., _transport.Response],
        *,
        api_keys: Sequence[str],
        model: str,
        limits: Mapping[str, int],
        ls: Callable[[], LsHandle | None],
        describe: Callable[[str], str],
    ) -> None:
        self._request = request
        self._keys = list(api_keys)
        self._model = model
        self._limits = dict(limits)
        self._ls = ls
        self._describe = describe

    def open(self, limits: Mapping[str, int]) -> dict[str, Any]:
        if dict(limits) != self._limits:
            raise PreconditionNotMet(
                f"the example's store limits {dict(limits)} are not the gateway's {self._limits} (--store-limits)"
            )
        return {}

    def put(self, messages: list[dict[str, Any]], caller: int, answer: Mapping[str, Any]) -> dict[str, Any]:
        handle = self._ls()
        if handle is None:
            raise PreconditionNotMet("the gateway's language server is not wired to the kit (--launch)")
        body = {"model": self._model, "input": messages, "store": True}
        size = len(json.dumps(body, ensure_ascii=False).encode()) + len(json.dumps(answer, ensure_ascii=False).encode())
        if size > MAX_BODY_BYTES:
            raise PreconditionNotMet(
                f"the example needs {size} bytes of request and answer for the gateway's store limits; launch it "
                "with smaller limits and declare them with --store-limits"
            )
        handle.reset()
        handle.load_scenario({"turns": [{"chunks": [_chunk(answer)]}]})
        answer_http = self._request("POST", "/v1/responses", self._key(caller), json=body)
        if answer_http.status_code == 413:
            raise PreconditionNotMet(f"the gateway refused a {size} byte request body (413)")
        reply = _json(answer_http)
        if answer_http.status_code != 200 or not isinstance(reply, dict) or not isinstance(reply.get("id"), str):
            raise TargetError(
                self._describe(f"POST /v1/responses answered {answer_http.status_code}: {answer_http.text[:500]}")
            )
        output = [item for item in reply.get("output") or () if isinstance(item, dict)]
        return {"id": reply["id"], "appended": [item for item in output if item.get("type") != "reasoning"]}

    def get(self, id: str, caller: int) -> dict[str, Any]:
        key = self._key(caller)
        items: list[Any] = []
        after: str | None = None
        while True:
            params = {"limit": str(_PAGE), "order": "asc", **({"after": after} if after else {})}
            page = self._request("GET", f"/v1/responses/{id}/input_items", key, params=params)
            if page.status_code == 404:
                return {"not_found": True}
            listing = self._ok(page, f"GET /v1/responses/{id}/input_items")
            data = listing.get("data")
            if not isinstance(data, list):
                raise TargetError(self._describe(f"input_items of {id} carry no data list: {page.text[:300]}"))
            items += data
            if not listing.get("has_more") or not data:
                break
            after = str(listing.get("last_id") or data[-1].get("id"))
        response = self._request("GET", f"/v1/responses/{id}", key)
        if response.status_code == 404:
            return {"not_found": True}
        return {
            "messages": items,
            "answer": answer_text(self._ok(response, f"GET /v1/responses/{id}").get("output") or ()),
        }

    def delete(self, id: str, caller: int) -> dict[str, Any]:
        answer = self._request("DELETE", f"/v1/responses/{id}", self._key(caller))
        if answer.status_code == 404:
            return {"deleted": False}
        self._ok(answer, f"DELETE /v1/responses/{id}")
        return {"deleted": True}

    def _key(self, caller: int) -> str:
        if caller >= len(self._keys):
            raise PreconditionNotMet(f"the example needs {caller + 1} callers: give as many --api-key options")
        return self._keys[caller]

    def _ok(self, answer: _transport.Response, what: str) -> dict[str, Any]:
        body = _json(answer)
        if answer.status_code != 200 or not isinstance(body, dict):
            raise TargetError(self._describe(f"{what} answered {answer.status_code}: {answer.text[:500]}"))
        return body


def _chunk(answer: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in answer:
        return {"text": answer["text"]}
    call = answer["tool_call"]
    return {"tool_call": {"id": "call_store_answer", "name": call["name"], "arguments_json": call["arguments"]}}


def answer_text(output: Sequence[Any]) -> str | None:
    """The answer served back as model output: the text of the last ``message`` among output items."""
    texts = [
        "".join(part.get("text", "") for part in item.get("content") or () if isinstance(part, dict))
        for item in output
        if isinstance(item, dict) and item.get("type") == "message"
    ]
    return texts[-1] if texts else None


def _json(answer: _transport.Response) -> Any:
    try:
        return answer.json()
    except ValueError:
        return None

"""The ``store.*`` operations of a black-box gateway, through its OpenAI Responses API.

* ``store.put``: the wired fake LS is loaded with one turn playing the answer (a text, or one tool
  call), then ``POST /v1/responses`` with the conversation as ``input`` and ``store: true``; what
  the gateway appended is the ``output`` it answered (reasoning items left out: never stored); an
  answer carrying ``store_error`` (a gateway telling the client it refused to store the turn, as the
  reference does, docs/responses-api.md) is a rejected write, judged as the store's rejection;
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
from dataclasses import replace
from typing import Any

from conformance.errors import PreconditionNotMet, TargetError, TargetSpecError
from conformance.example_tags import new_tag, untagged
from conformance.ls_handle import NOT_WIRED, LsHandle
from conformance.models.img import DEFAULT_HISTORY_BYTES
from conformance.models.js_text import utf16_units
from conformance.refusals import excerpt_body, refusal
from conformance.targets._scope import Caller, CallerScope

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
# The user turn that continues a stored entry to see what the gateway replays of it.
CONTINUATION = "Please go on."


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
        callers: Sequence[Caller],
        model: str,
        limits: Mapping[str, int],
        ls: Callable[[], LsHandle | None],
        describe: Callable[[str], str],
        scope: CallerScope,
        history_budget: int = DEFAULT_HISTORY_BYTES,
    ) -> None:
        """``history_budget``: the UTF-16 units of history the gateway puts in a prompt (its
        CASCADE_MAX_HISTORY_BYTES): what it replays of a bigger entry is cut by that budget too."""
        self._request = request
        self._callers = list(callers)
        # Caller 1 is the other one of the entry caller 0 stored last: they alternate (_scope.py). Until the
        # first entry shows the store tells a key's end users apart, the first key's other signals are
        # candidates too; a store that scopes by key alone leaves only the other keys (_find_store).
        self._others = self._callers[1:]
        self._other = self._others[0] if self._others else None
        self._puts = 0
        self._key_alone = False
        self._model = model
        self._limits = dict(limits)
        self._ls = ls
        self._describe = describe
        self._scope = scope
        self._history_budget = history_budget
        self._sizes: dict[str, int] = {}  # an upper bound of each stored conversation's UTF-16 units
        # Found on the first entry: None until then; a reason when the gateway keeps no entries at all.
        self._no_store: str | None = None
        self._store_seen = False

    def open(self, limits: Mapping[str, int]) -> dict[str, Any]:
        if self._no_store is not None:
            raise PreconditionNotMet(self._no_store)
        if dict(limits) != self._limits:
            raise PreconditionNotMet(
                f"the example's store limits {dict(limits)} are not the gateway's {self._limits} (--store-limits)"
            )
        return {}

    def put(self, messages: list[dict[str, Any]], caller: int, answer: Mapping[str, Any]) -> dict[str, Any]:
        handle = self._ls()
        if handle is None:
            raise PreconditionNotMet(NOT_WIRED)
        body = {"model": self._model, "input": messages, "store": True}
        size = len(json.dumps(body, ensure_ascii=False).encode()) + len(json.dumps(answer, ensure_ascii=False).encode())
        if size > MAX_BODY_BYTES:
            raise PreconditionNotMet(
                f"the example needs {size} bytes of request and answer for the gateway's store limits; launch it "
                "with smaller limits and declare them with --store-limits"
            )
        owner = self._caller(caller)
        if caller == 0 and self._others:
            self._other = self._others[self._puts % len(self._others)]
        self._puts += 1
        handle.reset()
        handle.load_scenario({"turns": [{"chunks": [_chunk(answer)]}]})
        answer_http = self._request("POST", "/v1/responses", owner, json=body)
        reply = _json(answer_http)
        shown = reply if reply is not None else answer_http.text
        refused = refusal(f"POST /v1/responses ({size} bytes)", answer_http.status_code, shown)
        if refused is not None:
            raise refused
        if answer_http.status_code == 200 and isinstance(reply, dict) and reply.get("store_error"):
            return {"rejected": _store_error(reply["store_error"])}
        if answer_http.status_code != 200 or not isinstance(reply, dict) or not isinstance(reply.get("id"), str):
            raise TargetError(
                self._describe(f"POST /v1/responses answered {answer_http.status_code}: {answer_http.text[:500]}")
            )
        if not self._store_seen:
            self._find_store(reply["id"], owner)
        output = [item for item in reply.get("output") or () if isinstance(item, dict)]
        self._sizes[reply["id"]] = _text_units([messages, answer])
        return {"id": reply["id"], "appended": [item for item in output if item.get("type") != "reasoning"]}

    def _find_store(self, entry: str, owner: Caller) -> None:
        """The first entry must be readable by its owner at once; if not, the gateway keeps none (it
        answers the Responses API without a store), or keeps it where the kit's reads do not reach
        (scoped by a per-user signal the reads do not carry), and no STORE example is checkable on it."""
        answer = self._request("GET", f"/v1/responses/{entry}", owner)
        if answer.status_code == 404:
            self._no_store = (
                f"the gateway keeps no response store: GET /v1/responses/{entry} answered 404 to its owner right "
                f"after POST /v1/responses stored it ({excerpt_body(_json(answer) or answer.text)}); "
                + self._scope_hint()
            )
            raise PreconditionNotMet(self._no_store)
        if not_served(answer):
            self._no_store = (
                f"the gateway serves no stored responses: GET /v1/responses/{entry} answered {_served_as(answer)} "
                "to its owner right after POST /v1/responses stored it, and the STORE properties read what a store "
                "kept and served back there"
            )
            raise PreconditionNotMet(self._no_store)
        self._store_seen = True
        if (
            owner.signal is not None
            and self._request("GET", f"/v1/responses/{entry}", replace(owner, signal=None)).status_code == 200
        ):
            # Read back without the owner's signal: the store scopes by key alone, so another signal of the
            # same key is the same caller to it (gateway-fixes P5: scoping by user is a gateway's choice).
            self._key_alone = True
            self._others = [c for c in self._others if c.api_key != owner.api_key]
            self._other = self._others[0] if self._others else None

    def _scope_hint(self) -> str:
        if self._scope.reads:
            shown = ", ".join(str(read) for read in self._scope.reads)
            return (
                f"the store may be scoped by a per-user signal the gateway reads elsewhere than {shown} "
                "(--read-scope header:NAME or query:NAME) or by another body field (--caller-scope)"
            )
        if not self._scope.sends_signal:
            return (
                "the store may keep entries only for callers with a per-user signal, and --caller-scope none "
                "sends none (try --caller-scope user and --read-scope header:NAME or query:NAME)"
            )
        return (
            f"the store may be scoped by the caller's per-user signal ({self._scope.scope}), which a GET carries "
            "only where the gateway reads it: give --read-scope header:NAME or --read-scope query:NAME"
        )

    def get(self, id: str, caller: int) -> dict[str, Any]:
        """The stored conversation from ``input_items``; from a gateway that does not serve them, the
        conversation as it replays it to the LS when a turn continues the entry (what it replays is
        what it stored)."""
        key = self._caller(caller)
        items = self._input_items(id, key)
        response = self._request("GET", f"/v1/responses/{id}", key)
        if response.status_code == 404:
            return {"not_found": True}
        answer = answer_text(self._ok(response, f"GET /v1/responses/{id}").get("output") or ())
        if items is None:  # not served, while the entry itself answers
            replayed = self._replayed(id, key)
            size, shown = self._sizes.get(id, 0), utf16_units(replayed)
            if size > self._history_budget and 2 * shown > self._history_budget:
                # A prompt its history budget cut is filled near to the budget; one under half of it was not cut.
                raise PreconditionNotMet(
                    f"the gateway serves no input_items, and what it replays of the entry ({shown} UTF-16 units) may "
                    f"be cut by its history budget too ({self._history_budget}, CASCADE_MAX_HISTORY_BYTES): the "
                    f"conversation had {size}, so what its store kept is not observable"
                )
            return {"replayed": replayed, "answer": answer}
        return {"messages": items, "answer": answer}

    def _input_items(self, id: str, key: Caller) -> list[Any] | None:
        """Every page of the entry's input items; None when the gateway does not serve them (its first page
        answered as :func:`not_served` says, while the entry itself answers)."""
        items: list[Any] = []
        after: str | None = None
        while True:
            params = {"limit": str(_PAGE), "order": "asc", **({"after": after} if after else {})}
            page = self._request("GET", f"/v1/responses/{id}/input_items", key, params=params)
            if not items and not_served(page):
                return None
            listing = self._ok(page, f"GET /v1/responses/{id}/input_items")
            data = listing.get("data")
            if not isinstance(data, list):
                raise TargetError(self._describe(f"input_items of {id} carry no data list: {page.text[:300]}"))
            items += data
            if not listing.get("has_more") or not data:
                break
            after = str(listing.get("last_id") or data[-1].get("id"))
        return items

    def _replayed(self, id: str, key: Caller) -> str:
        """The prompt of the Send the gateway puts on the wire for a turn continuing entry ``id``."""
        handle = self._ls()
        if handle is None:
            raise PreconditionNotMet(
                "the gateway does not serve GET /v1/responses/{id}/input_items and its LS is not wired to the kit, "
                "so what it stored is observable nowhere"
            )
        handle.reset()
        handle.load_scenario({"turns": [{"chunks": [{"text": "ok"}]}]})
        # Tagged: a gateway's response cache must not answer a continuation an earlier example made.
        body = {"model": self._model, "previous_response_id": id, "input": new_tag() + CONTINUATION, "store": False}
        answer = self._request("POST", "/v1/responses", key, json=body)
        reply = _json(answer)
        refused = refusal("POST /v1/responses (continuing the entry)", answer.status_code, reply or answer.text)
        if refused is not None:
            raise refused
        sends = [e for e in handle.journal() if e.get("method") == "SendUserCascadeMessage"]
        if answer.status_code != 200 or not sends:
            raise TargetError(
                self._describe(
                    f"a turn continuing {id} (previous_response_id) answered {answer.status_code} and put "
                    f"{len(sends)} Send(s) on the wire: {answer.text[:300]}"
                )
            )
        items = (sends[-1].get("request") or {}).get("items") or [{}]
        return untagged(str(items[0].get("text", "")))

    def delete(self, id: str, caller: int) -> dict[str, Any]:
        answer = self._request("DELETE", f"/v1/responses/{id}", self._caller(caller))
        if answer.status_code == 404:
            return {"deleted": False}
        self._ok(answer, f"DELETE /v1/responses/{id}")
        return {"deleted": True}

    def _caller(self, caller: int) -> Caller:
        if caller == 0:
            return self._callers[0]
        if self._other is None and self._key_alone:
            raise PreconditionNotMet(
                "the example needs two callers, and the gateway's response store tells callers apart by API key "
                "alone (an entry stored with a per-user signal is read without it): give two --api-key options"
            )
        if self._other is None:
            raise PreconditionNotMet(
                "the example needs two callers: give two --api-key options, or send a per-user signal "
                "(--caller-scope other than none)"
            )
        return self._other

    def _ok(self, answer: _transport.Response, what: str) -> dict[str, Any]:
        body = _json(answer)
        if answer.status_code != 200 or not isinstance(body, dict):
            raise TargetError(self._describe(f"{what} answered {answer.status_code}: {answer.text[:500]}"))
        return body


#: How a gateway declines a read it does not offer: not found, a method it does not allow, not implemented.
NOT_SERVED_STATUSES = (404, 405, 501)


def not_served(answer: _transport.Response) -> bool:
    """Whether ``answer`` says the gateway does not serve the read it answers: one of
    :data:`NOT_SERVED_STATUSES`, or a 200 whose body is no JSON and does not claim to be (a catch-all
    route's page). A 200 that claims JSON and does not parse is a broken answer, not a missing route."""
    if answer.status_code in NOT_SERVED_STATUSES:
        return True
    declared = answer.headers.get("content-type", "").partition(";")[0].strip().lower()
    return answer.status_code == 200 and not declared.endswith("json") and not _parses(answer)


def _served_as(answer: _transport.Response) -> str:
    if answer.status_code != 200:
        return f"{answer.status_code} ({excerpt_body(_json(answer) or answer.text)})"
    kind = answer.headers.get("content-type") or "no content type"
    return f"200 with a body that is not JSON ({kind}: {answer.text[:80]!r})"


def _parses(answer: _transport.Response) -> bool:
    try:
        answer.json()
    except ValueError:
        return False
    return True


def _text_units(value: Any) -> int:
    """The UTF-16 units of every string in ``value``: what a prompt replaying it holds, besides framing."""
    if isinstance(value, str):
        return utf16_units(value)
    if isinstance(value, Mapping):
        return sum(_text_units(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(_text_units(item) for item in value)
    return 0


def _chunk(answer: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in answer:
        return {"text": answer["text"]}
    call = answer["tool_call"]
    return {"tool_call": {"id": "call_store_answer", "name": call["name"], "arguments_json": call["arguments"]}}


def _store_error(said: Any) -> str:
    """Why the gateway says it did not store the turn (its ``store_error``), for the rejection."""
    message = said.get("message") if isinstance(said, Mapping) else said
    text = message if isinstance(message, str) and message else json.dumps(said, ensure_ascii=False)
    return f"store_error: {text[:500]}"


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

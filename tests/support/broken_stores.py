"""Deliberately broken response stores for the STORE verdict meta-tests
(``python:tests.support.broken_stores:...``). Each has one known defect, written the way a gateway
would get it wrong, not by editing what the kit reads."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

from conformance.strategies.store import TIGHT_BELOW
from conformance.targets.reference import ReferenceTarget
from conformance.targets.reference.store_ops import answer_items

_MARKER = "\n\n[... truncated by the response store to stay within RESPONSE_STORE_MAX_BYTES ...]"


class NaiveStore(ReferenceTarget):
    """The seed's baseline: the count cap keeps the head and the newest turns with no notice, and the
    byte budget halves the biggest string, JSON arguments included (a spliced document)."""

    def store_open(self, limits: dict[str, int]) -> dict[str, Any]:
        self._limits = dict(limits)
        self._entries: dict[str, tuple[int, list[Any]]] = {}
        return {}

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        appended = answer_items(answer)
        kept = copy.deepcopy([*messages, *appended])
        cap = self._limits["max_messages"]
        if len(kept) > cap:
            kept = kept[-cap:]
        while len(repr(kept)) > self._limits["max_entry_bytes"]:
            holder, key, value = max(_strings(kept), key=lambda slot: len(slot[2]))
            if len(value) // 2 + len(_MARKER) >= len(value):  # halving would not shrink it: give up
                break
            holder[key] = value[: len(value) // 2] + _MARKER
        entry = "resp_" + uuid.uuid4().hex
        self._entries[entry] = (caller, kept)
        return {"id": entry, "appended": appended, "warnings": []}

    def store_get(self, id: str, caller: int) -> dict[str, Any]:
        owner, kept = self._entries.get(id, (None, []))
        if owner != caller:
            return {"not_found": True}
        return {"messages": copy.deepcopy(kept), "answer": None}

    def store_delete(self, id: str, caller: int) -> dict[str, Any]:
        owner, _ = self._entries.get(id, (None, []))
        if owner != caller:
            return {"deleted": False}
        del self._entries[id]
        return {"deleted": True}


def _strings(value: Any) -> list[tuple[Any, Any, str]]:
    """Every (container, key, string) below ``value`` except the pairing keys."""
    found: list[tuple[Any, Any, str]] = []
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str) and key not in ("id", "call_id", "tool_call_id", "name", "type", "role"):
            found.append((value, key, item))
        elif isinstance(item, dict | list):
            found += _strings(item)
    return found


class SharesEntries(ReferenceTarget):
    """Looks entries up without checking who asks: another caller reads and deletes them."""

    def store_get(self, id: str, caller: int) -> dict[str, Any]:
        return super().store_get(id, 0)

    def store_delete(self, id: str, caller: int) -> dict[str, Any]:
        return super().store_delete(id, 0)


class ServesTheNotice(ReferenceTarget):
    """Serves a stored answer back without stripping the store's own drop notice."""

    def store_get(self, id: str, caller: int) -> dict[str, Any]:
        result = super().store_get(id, caller)
        if result.get("messages"):
            newest = result["messages"][-1]
            texts = [p.get("text", "") for p in newest.get("content") or () if isinstance(p, Mapping)]
            result["answer"] = "".join(texts) if texts else result["answer"]
        return result


class HidesItsWarnings(ReferenceTarget):
    """A correct store that does not expose its warnings: drop rules pass, the warning part unjudged."""

    def capabilities(self, op: str) -> Mapping[str, Any]:
        return {} if op == "store.put" else super().capabilities(op)

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        result = super().store_put(messages, caller, answer)
        result.pop("warnings", None)
        return result


class RejectsBigWrites(ReferenceTarget):
    """Refuses every write over the entry budget instead of trimming it."""

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        if len(repr(messages)) + len(repr(answer)) > self._open_store().limits.max_entry_bytes:
            return {"rejected": "over the entry budget"}
        return super().store_put(messages, caller, answer)


class RefusesAtAFixedBudget(RejectsBigWrites):
    """:class:`RejectsBigWrites` launched at a fixed entry budget the kit cannot change."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self._budget = budget

    def capabilities(self, op: str) -> Mapping[str, Any]:
        if op == "store.open":
            return {"fixed_limits": {"max_messages": 12, "max_entry_bytes": self._budget}}
        return super().capabilities(op)


class DropsOversizedCalls(ReferenceTarget):
    """Keeps an entry under its budget by dropping every message that carries an oversized tool call
    (and its result), silently: no notice, so nothing tells a reader turns are missing."""

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        budget = self._open_store().limits.max_entry_bytes
        big = {c for m in messages for c in _call_ids(m) if len(repr(m)) > budget}
        kept = [m for m in messages if not (set(_call_ids(m)) & big)]
        if answer.get("tool_call") and len(repr(answer)) > budget:
            answer = {"text": "done"}
        return super().store_put(kept, caller, answer)


class HugeFixedBudget(ReferenceTarget):
    """A store launched at a default budget of 32 MiB (as gateways ship), which takes no limits from the
    kit: argument cases are decided unbuildable before anything is built or sent, so a put is a kit bug."""

    def capabilities(self, op: str) -> Mapping[str, Any]:
        if op == "store.open":
            return {"fixed_limits": {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}}
        return super().capabilities(op)

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"the kit built and sent a {len(repr(messages))}-character conversation")


def _call_ids(message: Mapping[str, Any]) -> list[str]:
    ids = [str(c.get("id")) for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
    ids += [str(message[k]) for k in ("call_id", "tool_call_id") if k in message]
    return ids


def drops_oversized_calls() -> DropsOversizedCalls:
    return DropsOversizedCalls()


def naive_store() -> NaiveStore:
    return NaiveStore()


def shares_entries() -> SharesEntries:
    return SharesEntries()


def serves_the_notice() -> ServesTheNotice:
    return ServesTheNotice()


def hides_its_warnings() -> HidesItsWarnings:
    return HidesItsWarnings()


def rejects_big_writes() -> RejectsBigWrites:
    return RejectsBigWrites()


def huge_fixed_budget() -> HugeFixedBudget:
    return HugeFixedBudget()


def refuses_under_the_tight_limit() -> RefusesAtAFixedBudget:
    return RefusesAtAFixedBudget(TIGHT_BELOW - 1)


def refuses_at_the_tight_limit() -> RefusesAtAFixedBudget:
    return RefusesAtAFixedBudget(TIGHT_BELOW)

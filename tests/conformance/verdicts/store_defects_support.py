"""Stores built with one of the content stage's defects
(``python:tests.conformance.verdicts.store_defects_support:...``), for the STORE verdict meta-tests: the
reference target, whose trimming runs with one rule of seed 003 broken the way a build could break it, at
the floors of the content stage (engine/store/trim.py):

* :func:`grows_small_documents`: JSON arguments of 84 to 121 UTF-16 units are replaced too, by the
  121-unit document (a truncation that grows a value);
* :func:`keeps_what_it_cannot_shrink`: a write whose candidate cannot shrink is kept as the count and
  byte stages left it, over its budget, instead of being rejected (no progress check);
* :func:`refuses_noticed_texts`: a text led by a notice is a candidate as soon as it is longer than its
  notices, so a write with nothing to cut is rejected;
* :func:`cuts_the_second_notice`: only a text's first notice is kept whole, so a cut may fall in the
  second (both stages' notices lead one text).

The kit judges them through the black box like any store; only the reference is built this way."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from unittest import mock

from conformance.targets.reference import ReferenceTarget
from engine.store import memory, trim


class _Defective(ReferenceTarget):
    """The reference target whose store trims with ``patches`` (names in engine.store.trim, or the
    trimming function the store calls) in force for each write."""

    patches: Mapping[tuple[Any, str], Any] = {}

    def store_put(self, messages: list[dict[str, Any]], caller: int, answer: dict[str, Any]) -> dict[str, Any]:
        with contextlib.ExitStack() as stack:
            for (module, name), value in self.patches.items():
                stack.enter_context(mock.patch.object(module, name, value))
            return super().store_put(messages, caller, answer)


def _floor_of_any_slot(is_json: bool, notice: int) -> int:
    return notice + len(trim.TRUNCATION_MARKER) if notice else len(trim.TRUNCATION_MARKER)


def _floor_of_notices(is_json: bool, notice: int) -> int:
    if notice:
        return notice
    return len(trim.ARGUMENTS_TRUNCATION_JSON) if is_json else len(trim.TRUNCATION_MARKER)


def _first_notice_length(text: str) -> int:
    found = trim.NOTICE_PATTERN.match(text)
    return found.end() if found else 0


def _kept_anyway(real: Callable[..., trim.TrimOutcome]) -> Callable[..., trim.TrimOutcome]:
    def trim_for_store(
        messages: Sequence[Mapping[str, Any]], *, max_messages: int, max_entry_bytes: int
    ) -> trim.TrimOutcome:
        try:
            return real(messages, max_messages=max_messages, max_entry_bytes=max_entry_bytes)
        except trim.StoreWriteRejected:
            kept, by_count = trim.truncate_messages(messages, max_messages)
            kept, by_bytes = trim.cap_entry_bytes(kept, max_entry_bytes)
            return trim.TrimOutcome(kept, by_count, by_bytes, trim.MAX_PASSES, ())

    return trim_for_store


class GrowsSmallDocuments(_Defective):
    patches = {(trim, "_slot_floor"): _floor_of_any_slot}


class KeepsWhatItCannotShrink(_Defective):
    patches = {(memory, "trim_for_store"): _kept_anyway(trim.trim_for_store)}


class RefusesNoticedTexts(_Defective):
    patches = {(trim, "_slot_floor"): _floor_of_notices}


class CutsTheSecondNotice(_Defective):
    patches = {(trim, "_notices_length"): _first_notice_length}


def grows_small_documents() -> GrowsSmallDocuments:
    return GrowsSmallDocuments()


def keeps_what_it_cannot_shrink() -> KeepsWhatItCannotShrink:
    return KeepsWhatItCannotShrink()


def refuses_noticed_texts() -> RefusesNoticedTexts:
    return RefusesNoticedTexts()


def cuts_the_second_notice() -> CutsTheSecondNotice:
    return CutsTheSecondNotice()

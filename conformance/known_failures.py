"""Known-failure files: invariants expected to fail on a target, optionally pinned to a case.

    known_failures:
      - id: WIRE-2
        reason: our decoder drops unknown fields (tracked in ISSUE-12)
        case: cases/wire-2.json        # optional; relative to this file

A listed invariant that passes fails the run, so the list stays honest. :func:`apply_known_failure`
gives that verdict, for ``cascade-conformance run`` and the pytest plugin alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema

from conformance.cases import read_case
from conformance.catalogue import CATALOGUE
from conformance.properties import Case, properties
from conformance.runner import Result, Status

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["known_failures"],
    "properties": {
        "known_failures": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "reason"],
                "properties": {
                    "id": {"type": "string"},
                    "reason": {"type": "string", "minLength": 1},
                    "case": {"type": "string", "minLength": 1},
                },
            },
        }
    },
}


class KnownFailuresError(ValueError):
    pass


@dataclass(frozen=True)
class KnownFailure:
    id: str
    reason: str
    case: Path | None = None


def pinned_case(known: KnownFailure | None) -> Case | None:
    """The case a listed invariant is pinned to (``case:``), read from its file: the one case it is judged on;
    None when it is not listed or not pinned. Raises :class:`conformance.cases.CaseFileError` for a file that is
    not a case file."""
    return read_case(known.case).case if known is not None and known.case is not None else None


def pinned_cases(known: dict[str, KnownFailure]) -> dict[str, Case]:
    """:func:`pinned_case` of every listed invariant that is pinned."""
    return {inv_id: case for inv_id, k in known.items() if (case := pinned_case(k)) is not None}


def load_known_failures(path: Path) -> dict[str, KnownFailure]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KnownFailuresError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise KnownFailuresError(f"{path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            document = yaml.safe_load(text)
        else:
            document = json.loads(text)
    except Exception as exc:
        raise KnownFailuresError(f"{path}: cannot parse: {exc}") from exc
    errors = list(jsonschema.Draft202012Validator(_SCHEMA).iter_errors(document))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "<top level>"
        raise KnownFailuresError(f"{path}: at {where}: {errors[0].message}")
    entries: dict[str, KnownFailure] = {}
    for item in document["known_failures"]:
        if item["id"] not in CATALOGUE:
            raise KnownFailuresError(f"{path}: {item['id']!r} is not an invariant ID")
        if item["id"] not in properties():
            raise KnownFailuresError(
                f"{path}: {item['id']} has no property yet (not yet implemented in this kit), so it can neither "
                "fail nor pass: remove it from the list"
            )
        if item["id"] in entries:
            raise KnownFailuresError(f"{path}: {item['id']} is listed twice")
        case = (path.parent / item["case"]).resolve() if "case" in item else None
        if case is not None and not case.is_file():
            raise KnownFailuresError(f"{path}: the pinned case {item['case']} for {item['id']} does not exist")
        entries[item["id"]] = KnownFailure(item["id"], item["reason"], case)
    return entries


def apply_known_failure(result: Result, known: KnownFailure | None) -> Result:
    """The verdict on ``result`` once the known-failure list is read. A listed invariant that fails is a
    known failure; one that passes is an unexpected pass, which fails the run until it is taken off
    the list. An error (a crash, a hang) is never the listed failure: it stays an error, as every
    result of an invariant that is not listed stays what it is."""
    if known is None:
        return result
    if result.status == Status.FAIL:
        return replace(result, status=Status.KNOWN_FAILURE, message=f"{known.reason}: {result.message}")
    if result.status.passed:
        message = f"listed as a known failure ({known.reason}) but it passes: remove it from the list"
        return replace(result, status=Status.UNEXPECTED_PASS, message=message)
    return result

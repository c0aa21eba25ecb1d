"""``results.json``: a run's verdicts for programs, beside ``report.md`` and ``junit.xml`` (docs/cli.md, "The
report folder").

Per run: the schema version, the kit's version, the command, the target, the profile, the seed, when it started,
where it stopped early and the exit status. Per invariant: its status as one bare word
(:attr:`conformance.runner.Status.word`, never the display line), the examples judged, refused and not judged
with the reasons, each distinct failure with its case file and the command that replays it, the waits and the
duration. :data:`RESULTS_SCHEMA` is the contract; every document
is checked against it before it is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from conformance.report import RunInfo, distinct_failures
from conformance.runner import Result, Status

SCHEMA_VERSION = 1

_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": "number", "minimum": 0}
_TEXT_OR_NULL = {"type": ["string", "null"]}

RESULTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "cascade-conformance results.json",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "schema",
        "kit_version",
        "command",
        "target",
        "profile",
        "seed",
        "started",
        "interrupted",
        "exit_code",
        "invariants",
    ],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "kit_version": {"type": "string"},
        "command": _TEXT_OR_NULL,
        "target": {"type": "string"},
        "profile": {"type": "string"},
        "seed": {"type": ["integer", "null"]},
        "started": _TEXT_OR_NULL,
        "interrupted": _TEXT_OR_NULL,
        "exit_code": {"type": ["integer", "null"]},
        "invariants": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "status", "verdict", "message", "examples", "failures", "waits", "seconds"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
                    "status": {"enum": [status.word for status in Status]},
                    "verdict": {"type": "string"},
                    "message": {"type": "string"},
                    "examples": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["judged", "refused", "not_judged", "reasons"],
                        "properties": {
                            "judged": _COUNT,
                            "refused": _COUNT,
                            "not_judged": _COUNT,
                            "reasons": {"type": "object", "additionalProperties": _COUNT},
                        },
                    },
                    "failures": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["kind", "message", "case_file", "replay"],
                            "properties": {
                                "kind": {"enum": [s.word for s in (Status.FAIL, Status.ERROR, Status.KNOWN_FAILURE)]},
                                "message": {"type": "string"},
                                "case_file": _TEXT_OR_NULL,
                                "replay": _TEXT_OR_NULL,
                            },
                        },
                    },
                    "waits": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["count", "seconds"],
                        "properties": {"count": _COUNT, "seconds": _SECONDS},
                    },
                    "seconds": _SECONDS,
                },
            },
        },
    },
}


def results_document(
    results: Sequence[Result],
    *,
    target: str,
    info: RunInfo,
    cases: dict[str, list[Path]],
    replay: Callable[[Path], str],
    exit_code: int | None = None,
) -> dict[str, Any]:
    """The document of a run: ``cases`` maps an invariant to its failures' case files, in order; ``replay``
    gives the command that replays a case file against the same target."""
    return {
        "schema": SCHEMA_VERSION,
        "kit_version": info.version,
        "command": info.command,
        "target": target,
        "profile": info.profile,
        "seed": info.seed,
        "started": info.started,
        "interrupted": info.interrupted,
        "exit_code": exit_code,
        "invariants": [_invariant(result, cases.get(result.invariant.id, []), replay) for result in results],
    }


def _invariant(result: Result, saved: list[Path], replay: Callable[[Path], str]) -> dict[str, Any]:
    files = iter(saved)  # one per failure that has a case, in order (report.save_failure_cases)
    failures = []
    for failure in distinct_failures(result):
        case = next(files, None) if failure.case is not None else None
        failures.append(
            {
                "kind": failure.kind.word,
                "message": failure.message,
                "case_file": str(case) if case is not None else None,
                "replay": replay(case) if case is not None else None,
            }
        )
    return {
        "id": result.invariant.id,
        "status": result.status.word,
        "verdict": result.line,
        "message": result.message,
        "examples": {
            "judged": result.examples,
            "refused": result.refused,
            "not_judged": result.unjudged,
            "reasons": dict(result.reasons),
        },
        "failures": failures,
        "waits": {"count": result.waits, "seconds": round(result.waited_s, 3)},
        "seconds": round(result.seconds, 3),
    }


def write_results(path: Path, document: dict[str, Any]) -> Path:
    """``document`` written as UTF-8 JSON at ``path`` (folders made), once it meets :data:`RESULTS_SCHEMA`."""
    jsonschema.validate(document, RESULTS_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path

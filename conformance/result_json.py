"""Results as JSON-ready dicts and back: how the pytest plugin's xdist workers hand their verdicts to
the controller, which writes the run's one report (``report.md``, ``junit.xml``)."""

from __future__ import annotations

import json
from typing import Any

from conformance.catalogue import CATALOGUE
from conformance.runner import Failure, Result, Status


def _plain(value: Any) -> Any:
    """``value`` as JSON types only (evidence may hold tuples or other reprs)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def result_to_json(result: Result) -> dict[str, Any]:
    return {
        "invariant": result.invariant.id,
        "status": result.status.value,
        "message": result.message,
        "case": _plain(result.case),
        "evidence": _plain(result.evidence),
        "seconds": result.seconds,
        "examples": result.examples,
        "failures": [
            {
                "kind": f.kind.value,
                "message": f.message,
                "case": _plain(f.case),
                "evidence": _plain(f.evidence),
                "shrunk": f.shrunk,
                "cut_short": f.cut_short,
            }
            for f in result.failures
        ],
        "refused": result.refused,
        "unjudged": result.unjudged,
        "reasons": dict(result.reasons),
        "warnings": list(result.warnings),
        "waits": result.waits,
        "waited_s": result.waited_s,
    }


def result_from_json(data: dict[str, Any]) -> Result:
    failures = [
        Failure(Status(f["kind"]), f["message"], f["case"], f["evidence"], f["shrunk"], f["cut_short"])
        for f in data["failures"]
    ]
    return Result(
        CATALOGUE[data["invariant"]],
        Status(data["status"]),
        data["message"],
        data["case"],
        data["evidence"],
        data["seconds"],
        data["examples"],
        failures,
        data["refused"],
        data["unjudged"],
        data["reasons"],
        data["warnings"],
        data["waits"],
        data["waited_s"],
    )

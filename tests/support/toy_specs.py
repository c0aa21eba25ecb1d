"""Mutation specs for throw-away toy trees, shared by the meta-tests of the mutation runner and of
the baseline guard (tests/mutations/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def toy_mutation(name: str, anchor: str, replacement: str, caught: bool = True, **extra: Any) -> dict[str, Any]:
    """A WIRE-1 mutation of ``fakels/toy.py``; a survivor gets a documented reason."""
    item = {
        "name": name,
        "invariants": ["WIRE-1"],
        "file": "fakels/toy.py",
        "anchor": anchor,
        "replacement": replacement,
        "expect_caught": caught,
        **extra,
    }
    if not caught:
        item["survivor_reason"] = "describe() is only smoke-tested here; the premise is documented in the test."
    return item


def write_toy_spec(root: Path, mutations: list[dict[str, Any]], baseline: int) -> Path:
    """``root/spec.json``: a WIRE spec selecting ``tests/test_toy.py`` that expects ``baseline`` passes."""
    spec = {
        "schema": 1,
        "family": "WIRE",
        "tests": ["tests/test_toy.py"],
        "expect_baseline_pass": baseline,
        "mutations": mutations,
    }
    path = root / "spec.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path

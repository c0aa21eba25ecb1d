"""The invariant catalogue: every invariant's ID and statement, stated once.

Tests and properties refer to invariants by ID (``@pytest.mark.invariant("WIRE-1")``); the
mutation specs name the same IDs. Unknown IDs are an error, so a typo cannot silently detach a
test from its invariant.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    id: str
    family: str
    statement: str
    source: str


_ENTRIES = (
    Invariant(
        "WIRE-1",
        "WIRE",
        "Every RPC of the cascade flow decodes field for field as real clients encode it.",
        "wire.md",
    ),
    Invariant(
        "WIRE-2",
        "WIRE",
        "Unknown fields survive decoding and are reported in the journal (protocol drift).",
        "wire.md",
    ),
    Invariant(
        "WIRE-3",
        "WIRE",
        "Malformed frames or protobuf get a clean gRPC error; the server stays up; the journal records the "
        "rejected request.",
        "wire.md",
    ),
    Invariant(
        "WIRE-4",
        "WIRE",
        "Stateful semantics: steps are cumulative from the requested offset, planner text grows append-only, run "
        "status goes RUNNING then IDLE, generator metadata honours its offset, an expired cascade answers with text "
        "the real clients classify as expired.",
        "wire.md",
    ),
)

CATALOGUE: dict[str, Invariant] = {entry.id: entry for entry in _ENTRIES}


def invariant(invariant_id: str) -> Invariant:
    try:
        return CATALOGUE[invariant_id]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise KeyError(f"unknown invariant ID {invariant_id!r}; the catalogue has: {known}") from None

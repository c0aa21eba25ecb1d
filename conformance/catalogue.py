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
    Invariant(
        "IMG-1",
        "IMG",
        "Images of every replayed turn reach field 6, within the bounds, instead of a placeholder.",
        "000",
    ),
    Invariant(
        "IMG-2",
        "IMG",
        "Ordinals: current-turn images are #1..k, history images follow chronologically; the marker `[Image #N "
        "attached to this request — from an earlier turn]` names the N-th field-6 image.",
        "000",
    ),
    Invariant(
        "IMG-3",
        "IMG",
        "Bounds: at most CASCADE_MAX_HISTORY_IMAGES (4) images and CASCADE_MAX_HISTORY_IMAGE_BYTES (1.6 MB) of "
        "history images, newest turn first, checked per image; 0 disables, still counted.",
        "000",
    ),
    Invariant(
        "IMG-4",
        "IMG",
        "Never silent: attached and dropped counters by reason (cap, bytes, truncated, no_vision, and one for "
        "attachments that yield no image) plus one structured log line per request.",
        "000",
    ),
    Invariant(
        "IMG-5",
        "IMG",
        "Vision gate: with a tool preamble and no native bridge, history images are not attached (counted "
        "no_vision) and never flip the planner mode.",
        "000",
    ),
    Invariant(
        "IMG-6",
        "IMG",
        "A cascade rebuilt after a rejected resume carries exactly what a fresh one would, counted once.",
        "000",
    ),
    Invariant(
        "IMG-7",
        "IMG",
        "History images pass the same guards as current ones (SSRF, 5 MB, MIME, decode, re-encode), and no image "
        "is fetched only to be dropped.",
        "000",
    ),
    Invariant(
        "IMG-8",
        "IMG",
        "The same conversation always yields byte-identical prompt text and field-6 list.",
        "000",
    ),
    Invariant(
        "OFF-1",
        "OFF",
        "Generator-metadata parsing keeps the record count when no record carries usage.",
        "001 D3, D5",
    ),
    Invariant(
        "OFF-2",
        "OFF",
        "Records without usage still advance the generator window.",
        "001 D3, D5",
    ),
    Invariant(
        "OFF-3",
        "OFF",
        "An unknown offset stays unknown (never 0); an unknown start abstains instead of asking from 0.",
        "001 D3, D5",
    ),
    Invariant(
        "OFF-4",
        "OFF",
        "Over any sequence of turns, resumes, expiries and usage-less records, the metadata windows requested "
        "cover every record exactly once: nothing billed twice, nothing skipped.",
        "001 D3, D5",
    ),
    Invariant(
        "OFF-5",
        "OFF",
        "additional_steps: a fresh cascade gets the full mapped tool history, an ordinary resume only the newest "
        "round, a rejected resume the delta first and the full history on the fresh restart.",
        "001 D3, D5",
    ),
)

CATALOGUE: dict[str, Invariant] = {entry.id: entry for entry in _ENTRIES}


def invariant(invariant_id: str) -> Invariant:
    try:
        return CATALOGUE[invariant_id]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise KeyError(f"unknown invariant ID {invariant_id!r}; the catalogue has: {known}") from None

"""The invariant catalogue: every invariant's ID, statement and source seed, stated once.

This is the one source of truth for all invariants of the product (``design.md`` section 4),
implemented or not: a property registers against an ID here, and ``cascade-conformance list``
shows the ones without a property as ``not yet implemented``.

Tests and properties refer to invariants by ID (``@pytest.mark.invariant("WIRE-1")``); the
mutation specs name the same IDs. Unknown IDs are an error, so a typo cannot silently detach a
test from its invariant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    id: str
    title: str
    source: str


@dataclass(frozen=True)
class Invariant:
    id: str
    family: str
    statement: str
    source: str


class SelectionError(ValueError):
    """A name given to ``--only`` (or ``--cascade-only``) that selects nothing runnable."""


FAMILIES: dict[str, Family] = {
    family.id: family
    for family in (
        Family("WIRE", "the fake LS matches the real protocol", "wire.md"),
        Family("IMG", "images of replayed turns", "000"),
        Family("OFF", "offset continuity and tool-history delta", "001 D3, D5"),
        Family("SO", "structured output", "001 D2"),
        Family("ACC", "cache-replay accounting", "001 D4"),
        Family("STORE", "response store trimming", "003"),
        Family("ATT", "durable tool-result attachments", "002"),
        # Beyond the seeds: defects the public gateways fixed; each invariant names its defect (P1..P12).
        Family("TURN", "turns delivered, ended and failed as the LS ran them", "gateway-fixes.md"),
        Family("SCOPE", "what is shared and with whom", "gateway-fixes.md"),
        Family("REQ", "requests as the client sent them", "gateway-fixes.md"),
    )
}


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
    Invariant(
        "SO-1",
        "SO",
        "A non-conforming answer to a json_schema request ends as exactly one typed "
        "`STRUCTURED_OUTPUT_NOT_CONFORMING` error (no `[DONE]` on streams).",
        "001 D2",
    ),
    Invariant(
        "SO-2",
        "SO",
        "A violating turn is neither cached nor committed to session continuity.",
        "001 D2",
    ),
    Invariant(
        "SO-3",
        "SO",
        "A conforming stream reaches the client with the same frames in the same order.",
        "001 D2",
    ),
    Invariant(
        "SO-4",
        "SO",
        "Turns that deliver tool calls are not judged against the schema.",
        "001 D2",
    ),
    Invariant(
        "ACC-1",
        "ACC",
        "A cache hit, streamed or not, adds no tokens, no credits and no account spend, and is still counted as "
        "served (flagged cache-served).",
        "001 D4",
    ),
    Invariant(
        "ACC-2",
        "ACC",
        "The cached usage still reaches the client in the replayed response.",
        "001 D4",
    ),
    Invariant(
        "ACC-3",
        "ACC",
        "Over any mix of hits and misses, the ledgers equal the sum over turns that ran upstream.",
        "001 D4",
    ),
    Invariant(
        "ACC-4",
        "ACC",
        "Usage maps the LS's billed records: cached tokens never exceed prompt tokens, where cache writes are "
        "counted is the gateway's declared policy, usage appears in exactly one stream frame, and it equals the "
        "non-stream answer's for the same records.",
        "gateway-fixes.md P7",
    ),
    Invariant(
        "STORE-1",
        "STORE",
        "A JSON-document `arguments` value is stored byte-identical or replaced whole by the `__truncated__` "
        "document; stored arguments always parse. Same for Responses `function_call` items.",
        "003",
    ),
    Invariant(
        "STORE-2",
        "STORE",
        "A compacted call keeps its id and function name, so its tool result still pairs.",
        "003",
    ),
    Invariant(
        "STORE-3",
        "STORE",
        "Non-JSON arguments are prefix-cut with the marker; no truncation grows a value; a candidate that cannot "
        "shrink rejects the write instead of looping.",
        "003",
    ),
    Invariant(
        "STORE-4",
        "STORE",
        "Turns dropped by the count cap leave a notice naming how many, at the seam, with a warning; a conversation "
        "at the cap gets none.",
        "003",
    ),
    Invariant(
        "STORE-5",
        "STORE",
        "The newest turn is never rewritten to make room for a notice.",
        "003",
    ),
    Invariant(
        "STORE-6",
        "STORE",
        "Parts-array content gets a text block, not a flattened string; the caller's objects are never mutated.",
        "003",
    ),
    Invariant(
        "STORE-7",
        "STORE",
        "When the byte ceiling also binds, the stored conversation still carries a notice, and the notice is stripped "
        "before anything is served back as model output.",
        "003",
    ),
    Invariant(
        "STORE-8",
        "STORE",
        "Only the owner can read or delete an entry; others get not-found and nothing is dropped.",
        "003",
    ),
    Invariant(
        "ATT-1",
        "ATT",
        "Tool-result images are committed to history before any request is built and persisted in the session log; a "
        "restored session lowers byte-identically.",
        "002",
    ),
    Invariant(
        "ATT-2",
        "ATT",
        "Building a request never mutates history.",
        "002",
    ),
    Invariant(
        "ATT-3",
        "ATT",
        "Responses lowering: `function_call_output` carries `input_text` then `input_image` items; no separate image "
        "message.",
        "002",
    ),
    Invariant(
        "ATT-4",
        "ATT",
        "Chat lowering: tool messages carry text only; one user image message follows each run of tool results, in "
        "order; tool-call pairing stays intact.",
        "002",
    ),
    Invariant(
        "ATT-5",
        "ATT",
        "Pruning works on a request clone: pruned results lose content and images, keep their summary; history is "
        "unchanged; a pruned result stays pruned until compaction.",
        "002",
    ),
    Invariant(
        "ATT-6",
        "ATT",
        "Without a new prune or compaction boundary, each request's lowered input is a prefix of the next.",
        "002",
    ),
    Invariant(
        "ATT-7",
        "ATT",
        "Exploration and compaction views show attachment counts, never base64.",
        "002",
    ),
    Invariant(
        "TURN-1",
        "TURN",
        "The client receives this turn's planner text exactly once: nothing of earlier turns of a resumed cascade, "
        "nothing lost when the LS rewrites its response or spreads it over many frames, nothing repeated by an "
        "internal retry, no error text spliced into the content.",
        "gateway-fixes.md P1",
    ),
    Invariant(
        "TURN-2",
        "TURN",
        "A turn ended by an LS error, a failed RPC, a deadline or a client disconnect is not cached, not stored as "
        "completed, not committed and not resumed: the next turn starts a fresh cascade with the whole history.",
        "gateway-fixes.md P4",
    ),
    Invariant(
        "TURN-3",
        "TURN",
        "Whatever the LS fails with (a trailers-only gRPC error, an HTTP error, undecodable protobuf or frames), the "
        "client gets an error, never an empty success; the gateway keeps serving the next request; an upstream rate "
        "limit reaches the client as a rate limit.",
        "gateway-fixes.md P10",
    ),
    Invariant(
        "TURN-4",
        "TURN",
        "A Responses turn has one status in its stream, its non-stream body and a later read; a tool-call turn is "
        "`completed`, a cut one `incomplete`.",
        "gateway-fixes.md P11",
    ),
    Invariant(
        "TURN-5",
        "TURN",
        "A turn the gateway stops waiting on while the LS still runs is reported as cut (chat: `finish_reason: "
        '"length"` or an error; Responses: `incomplete`), never as a normal stop; a silent LS still gets the '
        "client a heartbeat within the interval the gateway declares.",
        "gateway-fixes.md P12",
    ),
    Invariant(
        "SCOPE-1",
        "SCOPE",
        "No cached answer, stored response or pooled cascade crosses callers; an empty or whitespace-only `user` "
        "behaves exactly as an absent one.",
        "gateway-fixes.md P5",
    ),
    Invariant(
        "SCOPE-2",
        "SCOPE",
        "Requests that differ in anything that changes the answer (images, `response_format`, reasoning effort, "
        "`stop`, sampling parameters, max tokens, tools) never share a cached answer.",
        "gateway-fixes.md P6",
    ),
    Invariant(
        "SCOPE-3",
        "SCOPE",
        "A cascade is resumed only for the same caller, the same model and exactly the earlier turns it was produced "
        "for (system text, answers, tool calls, images, tools), and then receives only the turns added since; any "
        "other request starts fresh with the whole history.",
        "gateway-fixes.md P3",
    ),
    Invariant(
        "SCOPE-4",
        "SCOPE",
        "`previous_response_id` is honoured (the LS receives the stored turns, each once, no duplicated "
        "`function_call`, only the current instructions) or refused with a 4xx before any LS call; never a blind "
        "fresh answer.",
        "gateway-fixes.md P8",
    ),
    Invariant(
        "REQ-1",
        "REQ",
        "A fresh cascade's Send carries every turn in order (user text, assistant text, assistant tool calls with "
        "their arguments, tool results in full), whatever accepted shape carried them (string or parts array, chat "
        "or Responses items); parts are never rendered as `[object Object]`.",
        "gateway-fixes.md P2",
    ),
    Invariant(
        "REQ-2",
        "REQ",
        "Parameters are honoured or refused: `stop` cuts the delivered text; a request the gateway cannot serve as "
        "asked (`n` > 1, `logprobs`, a non-default `seed`, penalty or `logit_bias`, an unknown model, nothing to "
        "answer) gets a 4xx before any LS call, never a 200 that ignored it.",
        "gateway-fixes.md P9",
    ),
)

CATALOGUE: dict[str, Invariant] = {entry.id: entry for entry in _ENTRIES}


def resolve(name: str) -> list[str]:
    """The catalogue IDs one name selects, in catalogue order: an ID (``img-3``) or a family
    (``wire``), in any case. Raises SelectionError for a name that is neither."""
    wanted = name.strip().upper()
    if wanted in CATALOGUE:
        return [wanted]
    if wanted in FAMILIES:
        return [inv_id for inv_id, inv in CATALOGUE.items() if inv.family == wanted]
    near = _near_miss(wanted)
    if near is not None:
        raise SelectionError(f"{name.strip()!r} is neither an invariant ID nor a family ({near})")
    hint = ""
    family = wanted.rpartition("-")[0]
    if family in FAMILIES:
        ids = [inv_id for inv_id, inv in CATALOGUE.items() if inv.family == family]
        hint = f"{family} has {ids[0]}..{ids[-1]}; "
    families = ", ".join(FAMILIES)
    raise SelectionError(f"{name.strip()!r} is neither an invariant ID nor a family ({hint}families: {families})")


_SPELLED_ID = re.compile(r"([A-Z]+)[-_ ]*0*([0-9]+)")


def _near_miss(wanted: str) -> str | None:
    """What a name that selects nothing was probably meant as: an ID spelled another way (``IMG1``,
    ``img_1``, ``STORE-01``), or several names separated by spaces instead of commas."""
    spelled = _SPELLED_ID.fullmatch(wanted)
    if spelled is not None and f"{spelled[1]}-{spelled[2]}" in CATALOGUE:
        return f"did you mean {spelled[1]}-{spelled[2]}?"
    words = wanted.split()
    if len(words) > 1 and all(word in CATALOGUE or word in FAMILIES for word in words):
        return f"separate names with commas: {','.join(words)}"
    return None


def invariant(invariant_id: str) -> Invariant:
    try:
        return CATALOGUE[invariant_id]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise KeyError(f"unknown invariant ID {invariant_id!r}; the catalogue has: {known}") from None

"""STORE: response-store trimming never splices JSON and never drops turns silently (seed 003).

Each property opens a store with the case's limits (or the target's fixed ones), stores a generated
conversation as caller 0 and reads it back. Verdicts come from tracing what was stored to what was
submitted (:mod:`conformance.models.store`); the target's own warnings are judged when it exposes
them (``observes: warnings`` on ``store.put``), and reported as not observed otherwise.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from conformance.errors import excerpt
from conformance.models.store import (
    ARGUMENTS_TRUNCATION_JSON,
    NOTICE,
    PAIRING_KEYS,
    Traced,
    arguments_slots,
    cut_notices,
    entry_bytes_bound,
    looks_like_json_document,
    must_refuse,
    notices_in,
    parses,
    text_of,
    trace,
)
from conformance.models.store_wire import Replayed, call_arguments
from conformance.properties import Case, Evidence, OverHttp, invariant_property, require
from conformance.strategies.store import (
    argument_cases,
    both_limits_cases,
    count_cases,
    newest_cases,
    ownership_cases,
    parts_cases,
    plain_argument_cases,
    refusal_allowed,
    refusal_forbidden,
    unbuilt_reason,
    write_of,
)
from conformance.targets import Target

_NEEDS = ("store.open", "store.put", "store.get")
# Over HTTP the kit draws examples for the limits the gateway was launched with, declared: its defaults (the
# reference's 32 MiB budget) would make them megabytes big.
_OVER_HTTP = OverHttp(given="small --store-limits")
_NOT_ON_THE_WIRE = (
    "{what}: not observable in the conversation the gateway replays, and it serves no stored items "
    "(GET /v1/responses/{{id}}/input_items)"
)
_NOTICE_WORDS = "earlier message(s) dropped by the response store"


@dataclass(frozen=True)
class Stored:
    """One conversation through the store: what was submitted (the case's messages and what the
    target appended), the entry read back, the answer served from it, and the put's warnings."""

    submitted: list[dict[str, Any]]
    messages: list[Any]
    answer: str | None
    warnings: list[str] | None
    traced: Traced
    mutated: str | None
    # The conversation as the target replayed it to the LS, when it cannot give the stored items
    # (``messages`` is then empty and ``traced`` traces nothing): judged from the text.
    replayed: Replayed | None = None


def _store(target: Target, case: Case, evidence: Evidence) -> Stored | None:
    """The case through the store; None when the store refused a write seed 003 refuses (the kit's
    model proves it: :func:`conformance.models.store.must_refuse`). A refusal is judged by the seed's
    rules: wrong when the model proves nothing could make a store refuse the write, not judged where a
    store may refuse it; a write the model proves must be refused fails when it is stored."""
    unbuilt = unbuilt_reason(case)
    require(unbuilt is None, unbuilt or "")
    target.call("store.open", limits=case["limits"])
    given = case["messages"]
    pristine = copy.deepcopy(given)
    put = target.call("store.put", messages=given, caller=0, answer=case["answer"])
    evidence.add("put", excerpt(put))
    if "rejected" in put:
        required = must_refuse(write_of(case), case["limits"])
        if required is not None:
            evidence.add("the refusal seed 003 requires", required)
            return None
        allowed = refusal_allowed(case)
        require(allowed is None, allowed or "")
    assert "rejected" not in put, f"{refusal_forbidden(case)}: {put.get('rejected')}"
    submitted = [*pristine, *put["appended"]]
    required = must_refuse(submitted, case["limits"])
    assert required is None, (
        f"the store kept a write seed 003 rejects (a candidate that cannot shrink rejects the write): {required}"
    )
    read = target.call("store.get", id=put["id"], caller=0)
    assert "not_found" not in read, f"the owner cannot read the entry {put['id']} it just stored"
    mutated = None if given == pristine else "the store changed the caller's conversation objects"
    if "replayed" in read:
        replayed = Replayed(read["replayed"], submitted)
        evidence.add("replayed to the LS (the target serves no stored items)", excerpt(read["replayed"]))
        evidence.add("kept (submitted positions found in it)", replayed.kept())
        return Stored(submitted, [], read["answer"], put.get("warnings"), Traced(), mutated, replayed)
    traced = trace(read["messages"], submitted)
    evidence.add("stored", excerpt(read["messages"]))
    evidence.add("origins", traced.origins)
    evidence.add("rewrites", [(r.path, r.kind) for r in traced.rewrites])
    return Stored(submitted, read["messages"], read["answer"], put.get("warnings"), traced, mutated)


def _kept(target: Target, case: Case, evidence: Evidence) -> Stored:
    """:func:`_store` for a property about what a store keeps: a refused write leaves nothing to judge."""
    stored = _store(target, case, evidence)
    require(stored is not None, "the store refused the write, as seed 003 requires: nothing was stored to judge")
    assert stored is not None
    return stored


def _over_budget(case: Case) -> str | None:
    """Why the byte budget may bind on ``case`` besides the cap (the model's bound of the write, with
    room for what a store appends, is not under it), else None: then only the message cap can bind."""
    needed = entry_bytes_bound(write_of(case)) + _APPENDED_ROOM
    budget = int(case["limits"]["max_entry_bytes"])
    if needed <= budget:
        return None
    return (
        f"the conversation is not far enough under the byte budget for the cap alone to bind: {needed} bytes by "
        f"the kit's bound against an entry budget of {budget}; a gateway whose budget leaves fewer than about "
        f"{needed // max(1, len(case['messages']))} bytes a message cannot be checked at its cap of "
        f"{case['limits']['max_messages']}: launch it with a bigger entry budget (or a smaller cap) and declare it "
        "with --store-limits"
    )


def _cap_alone_binds(case: Case) -> None:
    """Judge ``case`` only when its byte budget cannot bind (:func:`_over_budget`)."""
    reason = _over_budget(case)
    require(reason is None, reason or "")


#: What a store may append to a write besides the answer the kit knows (its ids, statuses, annotations).
_APPENDED_ROOM = 512


@invariant_property("STORE-1", needs=_NEEDS, cases=argument_cases, max_examples=20, over_http=_OVER_HTTP)
def json_arguments_are_never_spliced(target: Target, case: Case, evidence: Evidence) -> None:
    """Tool calls with JSON-document arguments bigger than the entry budget: every stored
    ``arguments`` whose original is a JSON document is byte-identical to it or is the
    ``__truncated__`` document, and parses (Chat ``tool_calls`` and Responses ``function_call``)."""
    stored = _kept(target, case, evidence)
    if stored.replayed is not None:
        _judge_replayed_arguments(stored.replayed, case, json_documents=True)
        return
    json_problems = stored.traced.json_argument_problems()
    assert not json_problems, "stored arguments were spliced:\n  " + "\n  ".join(json_problems[:5])
    slots = arguments_slots(stored.messages)
    unparsed = [path for path, value in slots if looks_like_json_document(value) and not parses(value)]
    assert not unparsed, f"stored JSON arguments do not parse at {unparsed}"
    big = [
        path
        for path, value in arguments_slots(stored.messages)
        if value == ARGUMENTS_TRUNCATION_JSON or len(value) > case["limits"]["max_entry_bytes"]
    ]
    _judgeable(stored, bool(big), "the store kept none of the oversized tool calls (nothing to judge)")


def _judgeable(stored: Stored, condition: bool, reason: str) -> None:
    """Judge this example only when ``condition`` holds, but a store that left nothing to judge by
    dropping messages without a notice fails: what it dropped silently must not make the property
    not checkable (a precondition the target controls is no escape hatch)."""
    if not condition:
        _no_silent_drop(stored)
        require(False, reason)


def _no_silent_drop(stored: Stored) -> None:
    """Gaps between the stored messages, and submitted messages found nowhere in the entry (the newest
    ones too, or all of them: a store that keeps only a text of its own leaves no gap to see), need
    a notice."""
    seams = stored.traced.seams()
    missing = sorted(set(range(len(stored.submitted))) - set(stored.traced.origins))
    assert not (seams or missing) or stored.traced.notices, (
        f"messages were dropped from the stored conversation without a notice (submitted messages {missing} are "
        f"not in it; seams at stored positions {seams}; stored origins {stored.traced.origins})"
    )


def _judge_replayed_arguments(replayed: Replayed, case: Case, *, json_documents: bool) -> None:
    """From the replayed text: no oversized argument of the wanted kind is cut (a JSON document may
    only be whole or replaced by the ``__truncated__`` document; other text may be cut with the
    marker, never replaced by a JSON document), and none vanished without a notice."""
    budget = int(case["limits"]["max_entry_bytes"])
    oversized = [a for a in call_arguments(replayed.submitted) if len(a.encode()) > budget]
    wanted = [a for a in oversized if looks_like_json_document(a) == json_documents]
    kind = "JSON-document" if json_documents else "plain-text"
    require(
        bool(wanted),
        f"no oversized {kind} arguments reached the store (the gateway appended no tool call for the LS's proposal, "
        "and this example's client history carried none)",
    )
    fates = {index: replayed.argument_fate(a) for index, a in enumerate(wanted)}
    if json_documents:
        cut = [i for i, fate in fates.items() if fate == "cut"]
        assert not cut, (
            f"{len(cut)} oversized JSON argument(s) were cut, not kept whole or replaced by the __truncated__ "
            f"document: the replayed text holds the start of {wanted[cut[0]][:60]!r} but not the whole"
        )
    else:
        assert not replayed.compacted_more_than_json(), (
            "non-JSON arguments were replaced by the __truncated__ JSON document"
        )
        cut = [i for i, fate in fates.items() if fate == "cut"]
        assert not cut or replayed.has_cut_marker, "an argument was cut without the truncation marker"
    absent = [i for i, fate in fates.items() if fate == "absent"]
    assert not absent or replayed.notice_counts(), (
        f"{len(absent)} oversized tool call(s) are not in the replayed conversation and no notice says anything "
        "was dropped"
    )
    require(len(absent) < len(wanted), "the store kept none of the oversized tool calls (dropped with a notice)")


@invariant_property("STORE-2", needs=_NEEDS, cases=argument_cases, max_examples=20, over_http=_OVER_HTTP)
def compacted_calls_keep_id_and_name(target: Target, case: Case, evidence: Evidence) -> None:
    """A call whose JSON arguments were replaced whole keeps its id and function name, so its tool
    result (stored or not) still pairs with it."""
    stored = _kept(target, case, evidence)
    require(stored.replayed is None, _NOT_ON_THE_WIRE.format(what="the ids of stored calls"))
    compacted = [r for r in stored.traced.rewrites if r.kind == "compacted"]
    _judgeable(stored, bool(compacted), "the store compacted no call (nothing to judge)")
    pairing = stored.traced.problems_at(*PAIRING_KEYS) + stored.traced.problems_at("")
    assert not pairing, "ids, names or messages of stored calls changed:\n  " + "\n  ".join(pairing[:5])


@invariant_property("STORE-3", needs=_NEEDS, cases=plain_argument_cases, max_examples=20, over_http=_OVER_HTTP)
def other_strings_are_prefix_cut(target: Target, case: Case, evidence: Evidence) -> None:
    """Tool calls answered with plain-text arguments bigger than the budget, and answers at the
    content stage's floors under budgets they exceed alone: every rewritten string that is not a JSON
    document is a prefix of the original with the truncation marker, shorter than the original, never
    a JSON document; no truncation (a cut, or the ``__truncated__`` document) is as long as what it
    replaced; a write the store can shrink, or one no rewrite could ever shrink, is not rejected; one
    whose candidate cannot shrink is (never stored as it is, never looped on: a hang is an error)."""
    stored = _store(target, case, evidence)
    if stored is None:  # refused, as seed 003 requires
        return
    if stored.replayed is not None:
        _judge_replayed_arguments(stored.replayed, case, json_documents=False)
        return
    grown = stored.traced.grown()
    assert not grown, "a truncation grew a value (seed 003: never):\n  " + "\n  ".join(grown[:5])
    plain = stored.traced.other_string_problems()
    assert not plain, "strings were rewritten against the rules:\n  " + "\n  ".join(plain[:5])
    _judgeable(stored, bool(stored.traced.rewrites), "the store rewrote no string (nothing to judge)")
    compacted_plain = [r.path for r in stored.traced.rewrites if r.kind == "compacted" and not r.original_json]
    assert not compacted_plain, f"non-JSON arguments were replaced by a JSON document at {compacted_plain}"


def _judge_replayed_count_stage(replayed: Replayed, cap: int, evidence: Evidence) -> None:
    """The count stage from the replayed text: every submitted message carries its token, so the
    dropped ones are those whose token is missing; they are the oldest, and one notice names them."""
    tokened, kept = replayed.tokened(), replayed.kept()
    total = len(replayed.submitted)
    dropped = [i for i in tokened if i not in kept]
    notices = replayed.notice_counts()
    evidence.add("counts", {"submitted": total, "replayed": len(kept), "cap": cap, "notices": notices})
    order = replayed.order_problem()
    assert order is None, order
    assert len(kept) <= cap, f"{len(kept)} messages replayed from the entry, over the cap of {cap}"
    if total <= cap:
        assert not notices, f"a conversation at or under the cap ({total} <= {cap}) got a notice: {notices}"
        assert not dropped, f"a conversation at or under the cap lost messages {dropped}"
        return
    run = tokened[tokened.index(dropped[0]) : tokened.index(dropped[0]) + len(dropped)] if dropped else []
    assert dropped == run, f"the dropped messages {dropped} leave more than one seam"
    assert len(notices) == 1, (
        f"{len(dropped)} of {total} messages dropped by the cap of {cap}: expected one notice in what the gateway "
        f"replays, found {len(notices)}"
    )
    assert notices[0] == len(dropped), f"the notice says {notices[0]} dropped, {len(dropped)} were"
    evidence.not_observed("the warning of a drop")


def _judge_count_stage(stored: Stored, cap: int, evidence: Evidence) -> None:
    if stored.replayed is not None:
        _judge_replayed_count_stage(stored.replayed, cap, evidence)
        return
    traced = stored.traced
    assert not traced.problems, "the stored conversation is not the submitted one:\n  " + "\n  ".join(
        p.text for p in traced.problems[:5]
    )
    total = len(stored.submitted)
    kept = len(stored.messages)
    assert kept <= cap, f"{kept} messages stored, over the cap of {cap}"
    dropped = total - kept
    evidence.add("counts", {"submitted": total, "stored": kept, "cap": cap})
    if total <= cap:
        assert not traced.notices, f"a conversation at or under the cap ({total} <= {cap}) got a notice"
        assert stored.messages == stored.submitted, "a conversation at or under the cap was not stored as it was"
        return
    seams = traced.seams()
    assert len(traced.notices) == 1, (
        f"{dropped} of {total} messages dropped by the cap of {cap}: expected one notice, found "
        f"{len(traced.notices)} at {[n.position for n in traced.notices]}"
    )
    notice = traced.notices[0]
    assert notice.count == dropped, f"the notice says {notice.count} dropped, {dropped} were"
    assert len(seams) == 1, f"the drop left seams at {seams}"
    seam = seams[0]
    expected = seam if seam < kept - 1 or seam == 0 else seam - 1
    assert notice.position == expected, (
        f"the notice is on stored message {notice.position}; the seam is at {seam} of {kept}, so it belongs on "
        f"{expected}"
    )
    if stored.warnings is None:
        evidence.not_observed("the warning of a drop")
    else:
        assert any(str(dropped) in w for w in stored.warnings), (
            f"no warning names the {dropped} dropped messages: {stored.warnings}"
        )


@invariant_property("STORE-4", needs=_NEEDS, cases=count_cases, max_examples=25, over_http=_OVER_HTTP)
def count_drops_leave_a_notice(target: Target, case: Case, evidence: Evidence) -> None:
    """A conversation of short messages around the cap (one under, at, one over, more): at or under
    the cap it is stored as it is, without a notice; over it, exactly one notice names how many
    were dropped, at the seam (or on the message before it when the seam is the newest), with a
    warning."""
    _cap_alone_binds(case)
    stored = _kept(target, case, evidence)
    _judge_count_stage(stored, case["limits"]["max_messages"], evidence)


@invariant_property("STORE-5", needs=_NEEDS, cases=newest_cases, max_examples=25, over_http=_OVER_HTTP)
def newest_turn_is_never_rewritten(target: Target, case: Case, evidence: Evidence) -> None:
    """Conversations over the cap opened by up to a cap's worth of system messages: the newest
    submitted message is stored byte-identical, unless it is the only message stored (then the
    notice has nowhere else to go)."""
    _cap_alone_binds(case)
    stored = _kept(target, case, evidence)
    require(len(stored.submitted) > case["limits"]["max_messages"], "the conversation is not over the cap")
    if stored.replayed is not None:
        newest_text = text_of(stored.submitted[-1]) or ""
        assert newest_text in stored.replayed.text, (
            f"the newest turn is not replayed as it was submitted: {newest_text[:200]!r} is not in the replayed text"
        )
        return
    assert stored.messages, "nothing was stored"
    newest = stored.messages[-1]
    if len(stored.messages) > 1:
        submitted = stored.submitted[-1]
        assert newest == submitted, (
            f"the newest turn was rewritten:\n  stored:    {excerpt(newest)}\n  submitted: {excerpt(submitted)}"
        )


@invariant_property("STORE-6", needs=_NEEDS, cases=parts_cases, max_examples=20, over_http=_OVER_HTTP)
def parts_arrays_get_a_text_block(target: Target, case: Case, evidence: Evidence) -> None:
    """Parts-array conversations over the cap: the notice is a leading text block of the seam's
    array (the rest of the array unchanged, nothing flattened), and the caller's objects are the
    same after the store as before."""
    _cap_alone_binds(case)
    stored = _kept(target, case, evidence)
    assert stored.mutated is None, stored.mutated
    require(len(stored.submitted) > case["limits"]["max_messages"], "the conversation is not over the cap")
    found = stored.replayed.notice_counts() if stored.replayed is not None else stored.traced.notices
    require(bool(found), "the store left no notice whose shape could be judged (a missing notice is STORE-4's)")
    _judge_count_stage(stored, case["limits"]["max_messages"], evidence)
    if stored.replayed is not None:
        evidence.not_observed(_NOT_ON_THE_WIRE.format(what="whether the notice is a text block"))
        return
    notice = stored.traced.notices[0]
    message = stored.messages[notice.position]
    if isinstance(stored.submitted[stored.traced.origins[notice.position]].get("content"), list):
        assert notice.as_block, f"the notice was not given as a leading text block: {excerpt(message)}"


@invariant_property("STORE-7", needs=_NEEDS, cases=both_limits_cases, max_examples=20, over_http=_OVER_HTTP)
def notice_survives_the_byte_stage_and_is_never_served(target: Target, case: Case, evidence: Evidence) -> None:
    """Over the cap and over the byte budget at once: the stored conversation still carries a notice,
    none of its notices is cut (both stages' may lead one text), and the answer served back from the
    entry carries none."""
    stored = _kept(target, case, evidence)
    if stored.replayed is not None:
        notices: list[Any] = stored.replayed.notice_counts()
    else:
        notices = notices_in(stored.messages)
    assert notices, "messages were dropped by both limits and the stored conversation carries no notice"
    cut = cut_notices(stored.messages)
    assert not cut, "a notice was cut, so the drop it reported is silent:\n  " + "\n  ".join(cut[:5])
    evidence.add("answer", stored.answer)
    require(stored.answer is not None, "the store serves no answer back for this entry")
    assert stored.answer is not None
    served = stored.answer
    assert NOTICE.match(served) is None, f"the answer served back carries the store's notice: {served[:200]!r}"
    assert _NOTICE_WORDS not in served, f"the answer served back carries the store's notice: {served[:200]!r}"


@invariant_property(
    "STORE-8", needs=(*_NEEDS, "store.delete"), cases=ownership_cases, max_examples=10, over_http=_OVER_HTTP
)
def only_the_owner_reads_or_deletes(target: Target, case: Case, evidence: Evidence) -> None:
    """Caller 0 stores an entry; caller 1 gets not-found on reading and deleting it, and afterwards
    the owner still reads the same entry; the owner's delete removes it."""
    target.call("store.open", limits=case["limits"])
    put = target.call("store.put", messages=case["messages"], caller=0, answer=case["answer"])
    assert "rejected" not in put, f"the store rejected a small conversation: {put.get('rejected')}"
    entry = put["id"]
    first = target.call("store.get", id=entry, caller=0)
    assert "not_found" not in first, f"the owner cannot read the entry {entry} it just stored"
    foreign = target.call("store.get", id=entry, caller=1)
    assert foreign == {"not_found": True}, f"another caller read the entry: {excerpt(foreign)}"
    deleted = target.call("store.delete", id=entry, caller=1)
    assert deleted == {"deleted": False}, "another caller deleted the entry"
    again = target.call("store.get", id=entry, caller=0)
    assert again == first, f"after the other caller's attempts the owner reads {excerpt(again)}, not {excerpt(first)}"
    assert target.call("store.delete", id=entry, caller=0) == {"deleted": True}, "the owner could not delete it"
    gone = target.call("store.get", id=entry, caller=0)
    assert gone == {"not_found": True}, f"the deleted entry is still served: {excerpt(gone)}"

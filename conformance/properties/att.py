"""ATT: tool-result images are durable history, lowered per upstream, pruned only as a projection
(seed 002, yoi.md §9).

Each property opens a fresh session, commits a generated history round by round and builds requests
from it. What each tool result must lower to comes from the kit's model
(:mod:`conformance.models.att`), never from the engine; restores and repeated builds must agree
with it and with each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from conformance.errors import excerpt
from conformance.models.att import (
    base64_leaks,
    check_chat,
    check_responses,
    expected_results,
    identity_problems,
    prefix_problems,
)
from conformance.properties import Case, Evidence, invariant_property
from conformance.strategies.att import durable_cases, prune_cases, session_cases
from conformance.targets import Target

_NEEDS = ("session.open", "session.commit", "session.build")
_CHECKS = {"responses": check_responses, "chat": check_chat}
_ALL_PRUNED = {"protected_tokens": 0, "min_savings": 0}
_LOG_FAULT = "a failing session-log write (session.commit's fail_log_write)"


def _flat(rounds: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [item for batch in rounds for item in batch]


def _build(target: Target, upstream: str, prune: dict[str, int] | None = None) -> list[Any]:
    request: list[Any] = target.call("session.build", upstream=upstream, prune=prune)["request"]
    return request


def _judge(request: list[Any], items: list[dict[str, Any]], case: Case, pruned: frozenset[str] = frozenset()) -> None:
    expected = expected_results(items, vision=case["vision"], pruned=pruned)
    _holds(_CHECKS[case["upstream"]](request, expected)[:6], f"the {case['upstream']} request breaks the rules")


def _holds(problems: list[str], what: str) -> None:
    assert not problems, f"{what}:\n  " + "\n  ".join(problems)


@invariant_property("ATT-1", needs=(*_NEEDS, "session.restore"), cases=durable_cases, max_examples=25)
def images_are_durable_and_restore_identically(target: Target, case: Case, evidence: Evidence) -> None:
    """Commit the history, restore the session before anything was built: the request holds every
    image (it was committed and logged first); build, restore again, build: the same request, byte
    for byte. When a round's commit has its log write fail (``fail_round``), that commit answers
    ``failed`` and the build after it is the one before it (nothing unlogged reached the history);
    the round is then committed again, and the restored session lowers as the running one did."""
    target.call("session.open", vision=case["vision"])
    items = _flat(case["rounds"])
    failing = _failing_round(target, case, evidence)
    for index, batch in enumerate(case["rounds"]):
        if index == failing:
            _commit_with_a_failing_log_write(target, case, index, evidence)
        _commit_durably(target, batch, index, evidence)
    running = _build(target, case["upstream"]) if failing is not None else None
    target.call("session.restore")
    first = _build(target, case["upstream"])
    evidence.add("request", excerpt(first))
    _judge(first, items, case)
    if running is not None:
        _holds(
            identity_problems(running, first),
            f"after the failed log write of round {failing}, the restored session lowers unlike the running one",
        )
    target.call("session.restore")
    again = _build(target, case["upstream"])
    _holds(identity_problems(first, again), "the restored session lowers differently")


def _commit_durably(target: Target, batch: list[dict[str, Any]], index: int, evidence: Evidence) -> None:
    """Commit round ``index``; nothing asked its log write to fail, so it must be committed and logged: a
    commit answering ``failed`` left its tool results neither in the history nor in the session log."""
    answer = target.call("session.commit", items=batch)
    if "failed" in answer:
        evidence.add(f"round {index}, committed", {"answer": answer, "items": len(batch)})
    assert "failed" not in answer, (
        f"the commit of round {index} ({len(batch)} item(s)) failed although nothing made its log write fail: "
        f"{answer['failed']}; its tool results are neither committed nor persisted"
    )


def _failing_round(target: Target, case: Case, evidence: Evidence) -> int | None:
    """The round whose first commit fails its log write, when the case has one and the target can fail one."""
    index: int | None = case.get("fail_round")
    if index is not None and not target.capabilities("session.commit").get("fail_log_write"):
        evidence.not_observed(_LOG_FAULT)
        return None
    return index


def _commit_with_a_failing_log_write(target: Target, case: Case, index: int, evidence: Evidence) -> None:
    """Commit round ``index`` with its log write failing: the commit must say it failed, and the history
    must be as before (the model's request for the rounds before, and the very request built before)."""
    before = _build(target, case["upstream"])
    answer = target.call("session.commit", items=case["rounds"][index], fail_log_write=True)
    after = _build(target, case["upstream"])
    evidence.add(f"round {index}, committed with a failing log write", {"answer": answer, "after": excerpt(after)})
    assert "failed" in answer, f"the commit of round {index} answered success although its log write failed"
    _holds(
        identity_problems(before, after), f"the commit of round {index}, whose log write failed, changed the history"
    )
    _judge(after, _flat(case["rounds"][:index]), case)


@invariant_property("ATT-2", needs=_NEEDS, cases=session_cases, max_examples=25)
def building_never_mutates_history(target: Target, case: Case, evidence: Evidence) -> None:
    """Build for one upstream, then the other, then the first again: the repeated build is identical
    and still carries every image, so nothing was cleared or injected by building."""
    target.call("session.open", vision=case["vision"])
    items = _flat(case["rounds"])
    for batch in case["rounds"]:
        target.call("session.commit", items=batch)
    other = "chat" if case["upstream"] == "responses" else "responses"
    first = _build(target, case["upstream"])
    _build(target, other)
    again = _build(target, case["upstream"])
    evidence.add("requests", {"first": excerpt(first), "again": excerpt(again)})
    assert again == first, "a repeated build differs:\n  " + "\n  ".join(prefix_problems(first, again))
    _judge(again, items, case)


@invariant_property("ATT-3", needs=_NEEDS, cases=session_cases, max_examples=25)
def responses_images_ride_in_function_call_output(target: Target, case: Case, evidence: Evidence) -> None:
    """The Responses input: each result's ``function_call_output.output`` is its text, or
    ``input_text`` then one ``input_image`` per attachment in order; no other item carries an image."""
    target.call("session.open", vision=case["vision"])
    for batch in case["rounds"]:
        target.call("session.commit", items=batch)
    request = _build(target, "responses")
    evidence.add("request", excerpt(request))
    _judge(request, _flat(case["rounds"]), {**case, "upstream": "responses"})


@invariant_property("ATT-4", needs=_NEEDS, cases=session_cases, max_examples=25)
def chat_images_follow_each_tool_run(target: Target, case: Case, evidence: Evidence) -> None:
    """The Chat messages: tool messages carry text only, one user message with the run's images
    follows each run of tool results, and every call is answered directly after it."""
    target.call("session.open", vision=case["vision"])
    for batch in case["rounds"]:
        target.call("session.commit", items=batch)
    request = _build(target, "chat")
    evidence.add("request", excerpt(request))
    _judge(request, _flat(case["rounds"]), {**case, "upstream": "chat"})


@invariant_property(
    "ATT-5", needs=(*_NEEDS, "session.restore", "session.compact", "session.views"), cases=prune_cases, max_examples=20
)
def pruning_is_a_sticky_projection(target: Target, case: Case, evidence: Evidence) -> None:
    """Prune with nothing protected: every result with detail lowers as its summary alone; built
    again without a prune, and after a restore, it stays pruned; the history still holds the images
    (the views count them); compaction ends the decision for the results it keeps."""
    target.call("session.open", vision=True)
    items = _flat(case["rounds"])
    for batch in case["rounds"]:
        target.call("session.commit", items=batch)
    detailed = frozenset(
        i["call_id"]
        for i in items
        if i.get("type") == "tool_result" and (i.get("content") is not None or i.get("attachments"))
    )
    pruned = _build(target, case["upstream"], _ALL_PRUNED)
    evidence.add("pruned request", excerpt(pruned))
    _judge(pruned, items, case, pruned=detailed)
    assert _build(target, case["upstream"]) == pruned, "without a new prune the earlier decision was not kept"
    target.call("session.restore")
    assert _build(target, case["upstream"]) == pruned, "after a restore the prune decision was lost"
    views = target.call("session.views")
    for item in items:
        count = len(item.get("attachments") or ())
        if count:
            assert re.search(rf"\b{count} image", views["exploration"]), (
                f"the history no longer shows the {count} image(s) of {item['call_id']}: {views['exploration'][:300]!r}"
            )
    retain_from = sum(len(batch) for batch in case["rounds"][: case["retain_round"]])
    target.call("session.compact", summary="[compacted]", retain_from=retain_from)
    tail = items[retain_from:]
    after = _build(target, case["upstream"])
    evidence.add("after compaction", excerpt(after))
    expected_tail = expected_results(tail, vision=True)
    got = [r for r in expected_results(items, vision=True) if r.call_id in {e.call_id for e in expected_tail}]
    problems = _CHECKS[case["upstream"]](after, got)
    assert not problems, "after compaction the kept results are still pruned or wrong:\n  " + "\n  ".join(problems[:6])


@invariant_property("ATT-6", needs=_NEEDS, cases=session_cases, max_examples=25)
def each_request_is_a_prefix_of_the_next(target: Target, case: Case, evidence: Evidence) -> None:
    """Commit the history round by round, building after each: without a prune or compaction, every
    request's items are an element-wise prefix of the next one's (the Chat image message included)."""
    target.call("session.open", vision=case["vision"])
    previous: list[Any] | None = None
    for index, batch in enumerate(case["rounds"]):
        target.call("session.commit", items=batch)
        request = _build(target, case["upstream"])
        if previous is not None:
            problems = prefix_problems(previous, request)
            if problems:
                evidence.add("requests", {"before": excerpt(previous), "after": excerpt(request)})
            assert not problems, f"the request after round {index} is no extension of the one before: {problems[0]}"
        previous = request


@invariant_property("ATT-7", needs=(*_NEEDS[:2], "session.views"), cases=session_cases, max_examples=25)
def views_count_images_and_never_show_them(target: Target, case: Case, evidence: Evidence) -> None:
    """The exploration view and the compaction input name each result's image count and never carry
    any part of an image (base64 or raw bytes)."""
    target.call("session.open", vision=case["vision"])
    items = _flat(case["rounds"])
    for batch in case["rounds"]:
        target.call("session.commit", items=batch)
    views = target.call("session.views")
    evidence.add("views", excerpt(views))
    for name in ("exploration", "compaction_input"):
        leaks = base64_leaks(views[name], items)
        assert not leaks, f"the {name} view shows image data: {leaks[:3]}"
    for item in items:
        count = len(item.get("attachments") or ())
        for name in ("exploration", "compaction_input") if count else ():
            assert re.search(rf"\b{count} image", views[name]), (
                f"the {name} view does not count the {count} image(s) of {item['call_id']}"
            )

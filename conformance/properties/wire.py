"""WIRE: the language-server side of the protocol (checked on fakels, or any LS implementation).

WIRE-1 and WIRE-2 need ``ls.decode_request``: requests are hand-assembled from wire.md's field
tables (:mod:`conformance.models.wire`) with :mod:`conformance.wire_bytes`, not with the kit's
generated classes, together with the field-named JSON a decoder must produce. WIRE-3 and WIRE-4
need a served LS (``ls.serve``/``ls.journal``/``ls.advance_clock``) and talk to it over real gRPC.
Cases come from :mod:`conformance.strategies.wire`.
"""

from __future__ import annotations

import base64
import re
from functools import partial
from typing import Any

import grpc

from conformance._ls_client import SERVICE_PREFIX, LsClient
from conformance.models.wire import CLEAN_REJECTIONS, EXPIRED_PATTERNS, IDLE, RUNNING
from conformance.properties import Case, Evidence, invariant_property
from conformance.strategies.wire import encoded_requests, garbage_calls, stateful_cases, unknown_field_cases
from conformance.targets import Target
from fakels.rpcs import RPCS


def _decode(target: Target, method: str, raw: bytes, evidence: Evidence) -> dict[str, Any]:
    result = target.call("ls.decode_request", method=method, raw_b64=base64.b64encode(raw).decode("ascii"))
    evidence.add("decoded", result)
    return result


@invariant_property("WIRE-1", needs=("ls.decode_request",), cases=encoded_requests)
def decodes_field_for_field(target: Target, case: Case, evidence: Evidence) -> None:
    result = _decode(target, case["method"], bytes.fromhex(case["raw_hex"]), evidence)
    assert "rejected" not in result, f"{case['method']}: a valid client encoding was rejected: {result.get('rejected')}"
    assert result["fields"] == case["expected"], (
        f"{case['method']}: decoded fields differ from wire.md's tables\n"
        f"  expected: {case['expected']}\n  decoded:  {result['fields']}"
    )
    assert result["unknown"] == [], f"{case['method']}: declared fields reported as unknown: {result['unknown']}"


@invariant_property("WIRE-2", needs=("ls.decode_request",), cases=unknown_field_cases)
def unknown_fields_survive(target: Target, case: Case, evidence: Evidence) -> None:
    result = _decode(target, case["method"], bytes.fromhex(case["raw_hex"]), evidence)
    assert "rejected" not in result, f"{case['method']}: a request with an unknown field was rejected: {result}"
    reported = [{k: u[k] for k in ("path", "number", "wire_type")} for u in result["unknown"]]
    assert reported == case["expected_unknown"], (
        f"{case['method']}: unknown fields not reported as sent\n"
        f"  sent:     {case['expected_unknown']}\n  reported: {reported}"
    )


@invariant_property("WIRE-3", needs=("ls.serve", "ls.journal", "ls.stop"), cases=garbage_calls, max_examples=25)
def garbage_gets_clean_errors(target: Target, case: Case, evidence: Evidence) -> None:
    served = target.call("ls.serve", scenario={}, manual_clock=False)
    try:
        seen = []
        with LsClient(served["address"], served["csrf_token"]) as client:
            for call in case["calls"]:
                token = {"right": served["csrf_token"], "wrong": "not-the-token", "missing": None}[call["csrf"]]
                rpc = RPCS.get(call["method"])
                outcome = client.raw_call(
                    SERVICE_PREFIX + call["method"],
                    bytes.fromhex(call["raw_hex"]),
                    token,
                    streaming=rpc is not None and rpc.server_streaming,
                )
                seen.append(outcome)
            evidence.add("statuses", [f"{o.code}: {o.details}" for o in seen])
            alive = client.start()
        entries = target.call("ls.journal", since=0)["entries"]
        evidence.add("journal", [_entry_summary(e) for e in entries])
        for outcome in seen:
            assert outcome.code == "OK" or outcome.code in CLEAN_REJECTIONS, (
                f"unclean status {outcome.code}: {outcome.details}"
            )
            assert outcome.code == "OK" or outcome.details, f"{outcome.code} without a message"
        assert alive, "StartCascade after the garbage returned no cascade id"
        assert len(entries) == len(case["calls"]) + 1, (
            f"the journal has {len(entries)} entries for {len(case['calls'])} calls + 1 StartCascade: "
            "something was lost"
        )
        for call, outcome, entry in zip(case["calls"], seen, entries, strict=False):
            assert base64.b64decode(entry["raw_b64"]).hex() == call["raw_hex"], f"journal raw bytes differ for {call}"
            assert entry["status"] == outcome.code, f"journal says {entry['status']}, the client saw {outcome.code}"
            assert entry["method"] == call["method"]
    finally:
        target.call("ls.stop")


def _entry_summary(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry.get(k) for k in ("seq", "method", "status", "error", "request", "unknown_fields", "raw_len")}


@invariant_property("WIRE-4", needs=("ls.serve", "ls.advance_clock", "ls.stop"), cases=stateful_cases, max_examples=20)
def stateful_semantics(target: Target, case: Case, evidence: Evidence) -> None:
    """Each scripted turn played as the case's client polls it (its reads in its order, the run status
    maybe only once the steps stop growing): steps cumulative from any offset, planner text append-only,
    RUNNING then IDLE, generator metadata at its offsets; an expired cascade (``expire_after``, or a Send
    the scenario answers with the ``expired`` fault) answers every later call with expired text."""
    served = target.call("ls.serve", scenario=case["scenario"], manual_clock=True)
    try:
        with LsClient(served["address"], served["csrf_token"]) as client:
            cascade = client.start()
            records_expected = 0
            turns = case["scenario"]["turns"]
            plays = case.get("plays") or []
            for index, turn in enumerate(turns):
                prompt = f"turn {index}"
                if turn.get("fault", {}).get("kind") == "expired":
                    # The Send is refused as expired, and the cascade with it: its polls and the next Send too.
                    _expect_expired(partial(client.send, cascade, prompt), "the Send the fault refuses", evidence)
                    _expect_expired_after(client, cascade, evidence)
                    return
                client.send(cascade, prompt)
                play = plays[index] if index < len(plays) else {}
                _play_turn(client, target, cascade, turn, play, case["offsets"], evidence)
                records_expected += len(turn["records"])
                _check_records(client, cascade, records_expected, case["offsets"])
            if turns[-1].get("expire_after"):
                # The finished turn stayed readable; resuming the expired cascade is refused, and then
                # every call on it is.
                _expect_expired(lambda: client.send(cascade, "resume"), "a Send resuming it", evidence)
                _expect_expired_after(client, cascade, evidence)
    finally:
        target.call("ls.stop")


def _expect_expired_after(client: LsClient, cascade: str, evidence: Evidence) -> None:
    """Every call on an expired cascade is refused with expired text: its polls and the next Send."""
    _expect_expired(lambda: client.steps(cascade, 0), "its steps", evidence)
    _expect_expired(lambda: client.status(cascade), "its run status", evidence)
    _expect_expired(lambda: client.records(cascade, 0), "its generator metadata", evidence)
    _expect_expired(lambda: client.send(cascade, "are you there?"), "the next Send", evidence)


def _expect_expired(call: Any, what: str, evidence: Evidence) -> None:
    with_error = _expect_error(call)
    evidence.add(f"after expiry: {what}", with_error)
    assert with_error[0] == "NOT_FOUND", f"an expired cascade answered {with_error} to {what}"
    assert any(re.search(p, with_error[1], re.IGNORECASE) for p in EXPIRED_PATTERNS), (
        f"the expiry text {with_error[1]!r} ({what}) is not one real clients classify as an expired cascade"
    )


def _play_turn(
    client: LsClient,
    target: Target,
    cascade: str,
    turn: dict[str, Any],
    play: dict[str, Any],
    offsets: list[int],
    evidence: Evidence,
) -> None:
    """Poll the turn as ``play`` says (its reads in ``order``, no run status before poll ``status_from``)
    until it is IDLE twice; the clock moves a second between polls."""
    order = play.get("order") or ["steps", "status"]
    status_from = int(play.get("status_from", 0))
    statuses: list[int] = []
    seen_text: dict[int, tuple[str, str]] = {}
    for poll in range(len(turn["chunks"]) * 3 + 6 + status_from):
        for read in order:
            if read == "metadata":
                client.records(cascade, 0)
            elif read == "steps":
                _check_steps(client, cascade, offsets, seen_text)
            elif poll >= status_from:
                statuses.append(client.status(cascade))
                evidence.add("statuses", statuses)
        if statuses[-1:] == [IDLE] and statuses.count(IDLE) >= 2:
            break
        target.call("ls.advance_clock", seconds=1.0)
    if status_from:
        evidence.add("first run status read", f"at poll {status_from}, after the last chunk showed ({order})")
    assert statuses[:1] == [RUNNING], f"the first status poll after Send was {statuses[:1]}, not RUNNING"
    assert IDLE in statuses, f"the turn never went IDLE: {statuses}"
    first_idle = statuses.index(IDLE)
    assert all(s == IDLE for s in statuses[first_idle:]), f"RUNNING after IDLE within one turn: {statuses}"
    final = "".join(c.get("text", "") for c in turn["chunks"])
    texts = [s.planner_response.response for s in client.steps(cascade, 0) if s.HasField("planner_response")]
    assert final == "" or final in texts, (
        f"at IDLE the planner text is {texts[-1:]!r}, the scripted turn says {final!r}"
    )


def _check_steps(client: LsClient, cascade: str, offsets: list[int], seen_text: dict[int, tuple[str, str]]) -> None:
    """Steps at each offset are the snapshot's tail, and every planner text grew append-only."""
    full = client.steps(cascade, 0)
    for k in offsets:  # the clock is frozen: every read sees the same moment
        part = client.steps(cascade, k)
        assert [s.SerializeToString() for s in part] == [s.SerializeToString() for s in full[k:]], (
            f"GetCascadeTrajectorySteps(offset={k}) is not the snapshot's steps[{k}:] "
            f"({len(part)} steps vs {len(full[k:])})"
        )
    for i, step in enumerate(full):
        if step.HasField("planner_response"):
            now = (step.planner_response.response, step.planner_response.thinking)
            before = seen_text.get(i, ("", ""))
            grew = now[0].startswith(before[0]) and now[1].startswith(before[1])
            assert grew, f"planner text at step {i} did not grow append-only: {before!r} -> {now!r}"
            seen_text[i] = now


def _check_records(client: LsClient, cascade: str, expected: int, offsets: list[int]) -> None:
    everything = client.records(cascade, 0)
    assert len(everything) == expected, (
        f"{len(everything)} generator records, expected {expected} from the finished turns"
    )
    for k in offsets:
        part = client.records(cascade, k)
        assert [r.SerializeToString() for r in part] == [r.SerializeToString() for r in everything[k:]], (
            f"GetCascadeTrajectoryGeneratorMetadata(offset={k}) is not records[{k}:]"
        )


def _expect_error(call: Any) -> tuple[str, str]:
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code().name, exc.details() or ""
    return "OK", ""

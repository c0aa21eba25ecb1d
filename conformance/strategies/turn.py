"""TURN: turns as the LS ran them. TURN-3's cases: the LS fails a turn before it answers, in one of the
ways real gateways took for an empty success."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import unicode_text
from conformance.targets import Target

Case = dict[str, Any]

# The polling RPCs a gateway calls after its Send (each may fail on its first call of the turn).
POLLED_RPCS = ("GetCascadeTrajectorySteps", "GetCascadeTrajectory")
# Answers no protobuf parser decodes: a length-delimited field cut short, a varint of eleven bytes,
# wire types 6 and 7, a tag with no value.
UNDECODABLE = ("0a05", "0a0501ff", "08ffffffffffffffffffff01", "0e01", "0f", "1a", "0a8080808010")
# gRPC status codes a failing LS answers with; RESOURCE_EXHAUSTED is its rate limit.
ERROR_CODES = ("UNAVAILABLE", "INTERNAL", "UNKNOWN", "DEADLINE_EXCEEDED", "PERMISSION_DENIED", "DATA_LOSS")
RATE_LIMIT_CODE = "RESOURCE_EXHAUSTED"
# HTTP statuses a proxy in front of the LS answers with, in place of a gRPC answer.
HTTP_ERRORS = (500, 502, 503, 504)


def fails_at_http_level(case: Case) -> bool:
    """Whether the case's failure needs the fake's hand-written gRPC port (an HTTP status, a cut frame)."""
    return "http_status" in case or "cut_frame" in case


# The ways TURN-3 fails the LS; every example meets each once, in some order.
FAILURE_KINDS = ("send", "status", "rate limit", "undecodable", "http", "cut frame")


@st.composite
def _ls_failure(draw: st.DrawFn, kind: str) -> Case:
    """One failure of ``kind``: where (the Send, or the first call of a polling RPC), how (a gRPC status with a
    message, often non-ASCII or with ``%``; bytes that do not decode; an HTTP error status in place of a gRPC
    answer; the answer's frame cut mid-message), and whether the client streams."""
    case: Case = {
        "where": "send" if kind == "send" else draw(st.sampled_from(POLLED_RPCS)),
        "stream": draw(st.booleans()),
        "prompt": draw(unicode_text(min_size=1, max_size=30)),
        "answer": draw(unicode_text(min_size=1, max_size=40)),
    }
    if kind == "send":
        case.update(code="INTERNAL", message=draw(unicode_text(min_size=1, max_size=40)))
    elif kind == "undecodable":
        case.update(payload_hex=draw(st.sampled_from(UNDECODABLE)))
    elif kind == "http":
        case.update(http_status=draw(st.sampled_from(HTTP_ERRORS)))
    elif kind == "cut frame":
        case.update(cut_frame=True)
    else:
        code = RATE_LIMIT_CODE if kind == "rate limit" else draw(st.sampled_from(ERROR_CODES))
        message = draw(st.one_of(unicode_text(min_size=1, max_size=40), st.just("quota 100% used; retry in 1s")))
        case.update(code=code, message=message)
    return case


@st.composite
def ls_failure_cases(draw: st.DrawFn, target: Target) -> Case:
    """One failure of each kind (:data:`FAILURE_KINDS`), in some order."""
    return {"failures": [draw(_ls_failure(kind)) for kind in draw(st.permutations(FAILURE_KINDS))]}


def failing_turn(case: Case) -> dict[str, Any]:
    """The scenario turn that fails as ``case`` says (its text is never meant to reach the client)."""
    turn: dict[str, Any] = {"chunks": [{"text": case["answer"]}], "records": [{"input_tokens": 9, "output_tokens": 4}]}
    if case["where"] == "send":
        turn["fault"] = {"kind": "error", "message": case["message"]}
        return turn
    override: dict[str, Any] = {"rpc": case["where"], "call": 0}
    if "payload_hex" in case:
        override["payload_hex"] = case["payload_hex"]
    elif "http_status" in case:
        override["http_status"] = case["http_status"]
    elif "cut_frame" in case:
        override["cut_frame"] = True
    else:
        override.update(error_code=case["code"], error_message=case["message"])
    turn["overrides"] = [override]
    return turn


# How the LS may end a planner step: its response as streamed, or post-edited (modified_response).
ENDINGS = ("as streamed", "extended", "rewritten", "shortened")


@st.composite
def _scripted_answer(draw: st.DrawFn, ending: str, *, may_fail: bool) -> Case:
    """One turn's planner text in 1-4 short frames or 2-12 long ones, ended as ``ending`` says, or (when
    ``may_fail``) sometimes with an error step after the text."""
    long = draw(st.booleans())
    size, frames = (400, (2, 12)) if long else (30, (1, 4))
    pieces = draw(st.lists(unicode_text(min_size=1, max_size=size), min_size=frames[0], max_size=frames[1]))
    response = "".join(pieces)
    answer: Case = {"pieces": pieces, "stream": draw(st.booleans()), "modified": None, "error": None}
    if may_fail and draw(st.integers(0, 3)) == 0:
        answer["error"] = "cascade failed: " + draw(unicode_text(min_size=1, max_size=30))
        return answer
    if ending == "extended":
        answer["modified"] = response + draw(unicode_text(min_size=1, max_size=30))
    elif ending == "rewritten":
        rewrite = "Rewritten: " + draw(unicode_text(min_size=1, max_size=30))
        if not rewrite.startswith(response) and not response.startswith(rewrite):
            answer["modified"] = rewrite
    elif ending == "shortened":
        answer["modified"] = response[: draw(st.integers(0, len(response) - 1))]
    return answer


@st.composite
def conversation_cases(draw: st.DrawFn, target: Target) -> Case:
    """A conversation of four turns (each a user question and the scripted answer the LS gives it), the
    answers ended in every way the LS ends a step, in some order (so every example meets each); the last
    answer may instead end in an error step."""
    endings = draw(st.permutations(ENDINGS))
    count = len(endings)
    return {
        "questions": draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=count, max_size=count)),
        "answers": [draw(_scripted_answer(ending, may_fail=n == count - 1)) for n, ending in enumerate(endings)],
    }


def scripted_turn(answer: Case) -> dict[str, Any]:
    """The scenario turn that plays ``answer``."""
    chunks: list[dict[str, Any]] = [{"text": piece} for piece in answer["pieces"]]
    if answer["error"] is not None:
        chunks.append({"error": answer["error"]})
    turn: dict[str, Any] = {"chunks": chunks, "records": [{"input_tokens": 20, "output_tokens": 10}]}
    if answer["modified"] is not None:
        turn["modified_response"] = answer["modified"]
    return turn


@st.composite
def failed_turn_cases(draw: st.DrawFn, target: Target) -> Case:
    """A turn that fails after some of its text (an error step after the text, a polling call that fails once
    text was polled, or a client that leaves the stream part way), streamed or not, then the conversation's
    next question."""
    pieces = draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=1, max_size=4))
    failure = draw(st.sampled_from(FAILURES))
    return {
        "question": draw(unicode_text(min_size=1, max_size=30)),
        "next_question": draw(unicode_text(min_size=1, max_size=30)),
        "pieces": pieces,
        "failure": failure,
        "code": draw(st.sampled_from(ERROR_CODES)),
        "stream": failure == DISCONNECT or draw(st.booleans()),
    }


# How TURN-2's turn fails; a client can only leave a stream.
DISCONNECT = "client disconnect"
FAILURES = ("error step", "polling fails", DISCONNECT)
# How many events a leaving client reads first: the role, then the first text.
EVENTS_BEFORE_LEAVING = 2


def failing_after_text(case: Case) -> dict[str, Any]:
    """The scenario turn of a failed-turn case: its text, then the failure."""
    chunks: list[dict[str, Any]] = [{"text": piece} for piece in case["pieces"]]
    turn: dict[str, Any] = {"chunks": chunks, "records": [{"input_tokens": 7, "output_tokens": 3}]}
    if case["failure"] == "error step":
        chunks.append({"error": "cascade failed: the model stopped"})
    elif case["failure"] == DISCONNECT:
        # The turn runs on after the client left: a gateway that does not notice would still finish and keep it.
        chunks.append({"text": " and the rest, once the client is gone", "delay_s": 0.3})
    else:
        # The first text frame is revealed by the first polls; a later steps call fails mid-answer.
        chunks.append({"text": " and more", "delay_s": 0.05})
        override = {"rpc": "GetCascadeTrajectorySteps", "call": 2, "error_code": case["code"]}
        turn["overrides"] = [override]
    return turn


@st.composite
def wait_limit_cases(draw: st.DrawFn, target: Target) -> Case:
    """A turn the LS keeps running past the gateway's wait limit (its first text, then silence), and a turn
    whose LS falls silent for a few heartbeat intervals before it ends, each streamed or not."""
    return {
        "first": draw(unicode_text(min_size=1, max_size=30)),
        "rest": draw(unicode_text(min_size=1, max_size=30)),
        "cut_stream": draw(st.booleans()),
        "silences": draw(st.integers(4, 6)),
    }


@st.composite
def status_cases(draw: st.DrawFn, target: Target) -> Case:
    """TURN-4's turns: one that answers text, one that proposes a tool call (its input a parts array), and one
    the LS keeps running past the gateway's wait limit (streamed or not)."""
    return {
        "question": draw(unicode_text(min_size=1, max_size=30)),
        "pieces": draw(st.lists(unicode_text(min_size=1, max_size=30), min_size=1, max_size=4)),
        "tool": draw(st.sampled_from(("lookup", "search_docs", "get_weather"))),
        "arguments": json.dumps({"q": draw(unicode_text(max_size=20))}, ensure_ascii=False),
        "first": draw(unicode_text(min_size=1, max_size=30)),
        "cut_stream": draw(st.booleans()),
    }

"""TURN: turns delivered, ended and failed as the LS ran them (gateway-fixes.md P1, P4, P10, P11, P12),
end to end through a gateway.

TURN-3 scripts an LS that fails a turn (:mod:`conformance.strategies.turn`): the Send fails, or the
first call of a polling RPC answers a gRPC error (trailers-only) or bytes no parser decodes. What the
fake saw says whether the failure was served; the client must then get an error (a rate limit for the
LS's RESOURCE_EXHAUSTED), or an internal retry's whole answer, and the gateway must serve the next
request.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.errors import FeatureDeclined, InputRefused
from conformance.gateway import RATE_LIMIT, REFUSAL, ChatAnswer, GatewayUnderTest, TimeLimits, open_gateway
from conformance.models.journal import SEND, cascade_of, send_text, sends
from conformance.models.responses import announced_id, answer_view, body_view
from conformance.models.stream import StreamView
from conformance.models.turn import answers
from conformance.properties import Case, Evidence, OverHttp, invariant_property, require
from conformance.refusals import transient_error
from conformance.strategies.turn import (
    DISCONNECT,
    EVENTS_BEFORE_LEAVING,
    RATE_LIMIT_CODE,
    conversation_cases,
    failed_turn_cases,
    failing_after_text,
    failing_turn,
    fails_at_http_level,
    ls_failure_cases,
    scripted_turn,
    status_cases,
    wait_limit_cases,
)
from conformance.targets import Target

# What every turn after the failing one answers: an internal retry's answer and the next request's.
RECOVERED = "The answer after the failure."


def _failure_served(case: Case, entries: list[dict[str, Any]]) -> bool:
    """Whether the fake served the scripted failure: the first Send failed, or the RPC was called after it."""
    first = next((i for i, e in enumerate(entries) if e.get("method") == SEND), None)
    if first is None:
        return False
    if case["where"] == "send":
        return entries[first].get("status") != "OK"
    return any(e.get("method") == case["where"] for e in entries[first + 1 :])


def _how(case: Case) -> str:
    if "http_status" in case:
        return f"{case['where']} answered HTTP {case['http_status']} with no gRPC status"
    if "cut_frame" in case:
        return f"{case['where']} answered a gRPC frame cut mid-message, with no trailers"
    if "payload_hex" in case:
        return f"{case['where']} answered bytes no parser decodes ({case['payload_hex']})"
    return f"{case['where']} failed with {case['code']} ({case['message']!r})"


@invariant_property("TURN-3", needs=("gateway.chat",), cases=ls_failure_cases, max_examples=4)
def ls_failures_are_errors(target: Target, case: Case, evidence: Evidence) -> None:
    """The LS fails a turn in each way in turn (its Send, or the first call of a polling RPC, with a gRPC status,
    its rate limit, undecodable bytes, an HTTP error status or a frame cut mid-message): the client gets an
    error, never a 200 without one (unless an internal retry answered in full); an LS rate limit reaches it as a
    rate limit; the next request is served."""
    recovered = {"chunks": [{"text": RECOVERED}], "records": [{"input_tokens": 5, "output_tokens": 3}]}
    played: list[tuple[Case, ChatAnswer, list[dict[str, Any]], ChatAnswer]] = []
    with open_gateway(target, {"turns": []}, http_faults=True) as gw:
        for failure in case["failures"]:
            if fails_at_http_level(failure) and not gw.ls.http_faults:
                evidence.not_observed(
                    "LS failures at the HTTP level (the gateway dials fakels' grpcio port; wire it with "
                    "{ls_h2_address})"
                )
                continue
            before = len(gw.journal())
            gw.ls.load_scenario({"turns": [failing_turn(failure), *[recovered] * 4]})
            request = {
                "messages": [{"role": "user", "content": gw.tag(failure["prompt"])}],
                "stream": failure["stream"],
            }
            failed = gw.chat(request, judged=(REFUSAL, RATE_LIMIT))
            served = gw.journal()[before:]
            follow_up = {"messages": [{"role": "user", "content": gw.tag(f"next: {failure['prompt']}")}]}
            played.append((failure, failed, served, gw.chat({**follow_up, "stream": False})))
    evidence.add("exchanges", gw.exchanges)
    judged = [(f, failed, served, after) for f, failed, served, after in played if _failure_served(f, served)]
    require(bool(judged), "the gateway never made a call a scripted failure is on")
    for failure, failed, served, next_answer in judged:
        _judge_failure(failure, failed, served, next_answer, evidence)


def _judge_failure(
    failure: Case, failed: ChatAnswer, served: list[dict[str, Any]], next_answer: ChatAnswer, evidence: Evidence
) -> None:
    how = _how(failure)
    error = failed.error
    if error is None:
        retried = len(sends(served)) >= 1 and failed.content == RECOVERED
        assert retried, (
            f"the LS's {how}; the client got {failed.status} with no error and the content "
            f"{failed.content!r} (an internal retry would have answered {RECOVERED!r})"
        )
        evidence.add("answered by an internal retry", True)
    elif failure.get("code") == RATE_LIMIT_CODE:
        said = failed.events if failed.events is not None else failed.body
        assert failed.status == 429 or transient_error(said) is not None, (
            f"the LS's {how}: an upstream rate limit, which reached the client as {error!r}, not as a rate limit"
        )
    assert next_answer.status == 200, f"after the LS's {how} the next request was answered {next_answer.summary()}"
    assert next_answer.content == RECOVERED, (
        f"after the LS's {how} the next request was answered {next_answer.content!r}, expected {RECOVERED!r}"
    )


def _judge_turn(answer: Case, got: ChatAnswer, turn: int) -> None:
    """The text a turn delivered against the scripted answer its Send played."""
    content = got.content
    response = "".join(answer["pieces"])
    if answer["error"] is not None:
        assert answer["error"] not in content, (
            f"turn {turn}: the LS's error step was spliced into the content: {content!r}"
        )
        assert response.startswith(content), (
            f"turn {turn} ended in an LS error after its text; the content is not the text before it\n"
            f"  text before the error: {response!r}\n  content:               {content!r}"
        )
        return
    assert got.status == 200, f"turn {turn} was answered {got.summary()}"
    expected = answers(response, answer["modified"])
    if content in expected:
        return
    want = min(expected, key=len)
    if content.endswith(want) and len(content) > len(want):
        raise AssertionError(
            f"turn {turn}: text before this turn's answer was delivered again: {content[: -len(want)]!r}\n"
            f"  expected: {want!r}\n  got:      {content!r}"
        )
    raise AssertionError(
        f"turn {turn}: the content is not the turn's text (ended {_ending(answer)})\n"
        f"  expected: {' or '.join(repr(t) for t in sorted(expected))}\n  got:      {content!r}"
    )


def _ending(answer: Case) -> str:
    if answer["modified"] is None:
        return "as streamed"
    return f"with modified_response {answer['modified']!r}"


@invariant_property("TURN-1", needs=("gateway.chat",), cases=conversation_cases, max_examples=20)
def this_turns_text_exactly_once(target: Target, case: Case, evidence: Evidence) -> None:
    """A conversation of four turns, each answered by the scripted turn its Send played (short or long texts over
    many frames, a post-edited response that extends, rewrites or shortens it, the last maybe an error step after
    its text): each turn delivers exactly that turn's text, nothing of earlier turns (a resumed cascade still
    holds them), nothing lost, no error text in the content."""
    scenario = {"turns": [scripted_turn(answer) for answer in case["answers"]]}
    played: list[tuple[int, ChatAnswer, int, int]] = []
    with open_gateway(target, scenario) as gw:
        messages: list[dict[str, Any]] = []
        for turn, (question, answer) in enumerate(zip(case["questions"], case["answers"], strict=True), start=1):
            messages.append({"role": "user", "content": gw.tag(question) if turn == 1 else question})
            before = len(sends(gw.journal()))
            got = gw.chat({"messages": list(messages), "stream": answer["stream"]})
            played.append((turn, got, before, len(sends(gw.journal()))))
            if answer["error"] is not None:
                break
            messages.append({"role": "assistant", "content": got.content})
    evidence.add("exchanges", gw.exchanges)
    for turn, got, before, after in played:
        require(after > before, f"turn {turn} reached no Send")
        require(after <= len(case["answers"]), f"turn {turn} took more Sends than the conversation has turns")
        _judge_turn(case["answers"][after - 1], got, turn)


# How long the LS must see no call before a gateway whose client left counts as done with the turn, and the
# longest the kit waits for that.
_SETTLE_S = 0.3
_SETTLE_LIMIT_S = 15.0


def _settled(gw: GatewayUnderTest) -> list[dict[str, Any]]:
    """The journal once the gateway has stopped calling the LS (a client left: the gateway may poll on, and
    keep the turn, a little after)."""
    entries = gw.journal()
    deadline = time.monotonic() + _SETTLE_LIMIT_S
    while time.monotonic() < deadline:
        time.sleep(_SETTLE_S)
        later = gw.journal()
        if len(later) == len(entries):
            break
        entries = later
    return entries


def _failed(case: Case, entries: list[dict[str, Any]]) -> bool:
    """Whether the scripted failure happened: the error step was revealed with the turn, or a steps call failed
    (a client that left was checked when it left)."""
    if case["failure"] == DISCONNECT:
        return True
    if case["failure"] == "error step":
        return any(e.get("method") == SEND and e.get("status") == "OK" for e in entries)
    return any(e.get("method") == "GetCascadeTrajectorySteps" and e.get("status") != "OK" for e in entries)


@invariant_property("TURN-2", needs=("gateway.chat",), cases=failed_turn_cases, max_examples=12)
def a_failed_turn_leaves_nothing_behind(target: Target, case: Case, evidence: Evidence) -> None:
    """A turn fails after some of its text (an error step, a steps call failing mid-answer, or its client leaving
    the stream while the LS runs on): the conversation's next turn goes to a fresh cascade that carries the whole
    history (the failed turn was not committed to be resumed), and the failed request, sent again, reaches the LS
    (its partial answer was not cached). The same failure on a Responses turn asked to be stored is never
    reported, nor read back, as completed."""
    answered = {"chunks": [{"text": RECOVERED}], "records": [{"input_tokens": 5, "output_tokens": 3}]}
    scenario = {"turns": [failing_after_text(case), *[answered] * 4]}
    leaves = case["failure"] == DISCONNECT
    with open_gateway(target, scenario) as gw:
        require(not leaves or gw.can_hang_up, "the target cannot leave a stream part way (gateway.chat's hang_up)")
        first = {"role": "user", "content": gw.tag(case["question"])}
        request = {"messages": [first], "stream": case["stream"]}
        if leaves:
            failed = gw.chat(request, hang_up_after=EVENTS_BEFORE_LEAVING)
            require(not StreamView(failed.events or []).done, "the turn ended before the client left")
            served = _settled(gw)
        else:
            failed = gw.chat(request, judged=(REFUSAL, RATE_LIMIT))
            served = gw.journal()
            # A failure served as a success is TURN-3's to judge; what such a gateway then keeps follows from it.
            require(
                failed.error is not None or not _failed(case, served),
                "the gateway served the failed turn as a success (TURN-3 judges that)",
            )
        # The client goes on from what it saw: the streamed text, or (answered an error) the text before the failure.
        seen = failed.content if failed.events is not None else "".join(case["pieces"])
        following = [first, {"role": "assistant", "content": seen}, {"role": "user", "content": case["next_question"]}]
        gw.chat({"messages": following, "stream": False})
        after_next = gw.journal()
        gw.chat({"messages": [first], "stream": case["stream"]})
        after_repeat = gw.journal()
        if "gateway.respond" not in target.operations():
            evidence.not_observed("Responses turns (the target has no gateway.respond)")
        elif not leaves:
            _judge_failed_response(gw, case, evidence)
    evidence.add("exchanges", gw.exchanges)
    require(_failed(case, served), f"the scripted failure ({case['failure']}) never happened: the turn ended first")
    failing = sends(served)
    require(len(failing) == 1, "the failing request reached the LS more than once (an internal retry)")
    next_sends = sends(after_next)[len(failing) :]
    assert len(next_sends) == 1, f"the next turn reached {len(next_sends)} Sends, expected 1"
    assert cascade_of(next_sends[0]) != cascade_of(failing[0]), (
        f"the next turn resumed the cascade of the failed turn ({cascade_of(failing[0])}): the failed turn was kept"
    )
    sent = send_text(next_sends[0])
    for question in (first["content"], case["next_question"]):
        assert question in sent, (
            f"the next turn went to a fresh cascade without the whole history: {question!r} is not in its Send\n"
            f"  Send: {sent!r}"
        )
    assert len(sends(after_repeat)) > len(sends(after_next)), (
        "the failed request, sent again, reached no Send: its partial answer was cached"
    )


def _judge_failed_response(gw: GatewayUnderTest, case: Case, evidence: Evidence) -> None:
    """The same failure on a Responses turn asked to be stored: never reported, nor read back, as completed."""
    before = len(gw.journal())
    gw.ls.load_scenario({"turns": [failing_after_text(case)]})
    request = {"input": gw.tag(f"responses: {case['question']}"), "stream": case["stream"], "store": True}
    try:
        answer = gw.respond(request, judged=(RATE_LIMIT,))
    except (InputRefused, FeatureDeclined) as refused:
        evidence.not_observed(f"Responses turns ({refused})")
        return
    if not _failed(case, gw.journal()[before:]):
        evidence.not_observed("a failed Responses turn (the turn ended before the scripted failure)")
        return
    if answer.status >= 300:
        return  # refused as a whole: no id to read back
    view = answer_view(answer.events, answer.body)
    how = f"a {'streamed' if case['stream'] else 'non-stream'} Responses turn the LS failed ({case['failure']})"
    if view.status == "completed":  # the gateway took the failure for a success: TURN-3's to judge, not stored state
        evidence.not_observed("stored failed Responses turns (the gateway served the failure as completed: TURN-3)")
        return
    response_id = view.response_id or (announced_id(answer.events) if answer.events is not None else None)
    if response_id is None:
        return
    status, body = gw.retrieve(response_id)
    read = body_view(body) if status == 200 else None
    assert read is None or read.status != "completed", f"{how} was stored as completed: a read gives {body!r:.300}"


# How much later than its declared interval a heartbeat may come (timers and the kit's own reading): this
# much, or half the interval when that is more.
HEARTBEAT_SLACK_S = 0.3
_RECORDS = [{"input_tokens": 6, "output_tokens": 2}]


def _judge_cut(gw: GatewayUnderTest, case: Case, wait_limit_s: float, evidence: Evidence) -> None:
    """A turn whose LS answers some text, then runs on past the wait limit: reported cut, not stopped."""
    late = wait_limit_s + 60
    turn = {"chunks": [{"text": case["first"]}, {"text": case["rest"], "delay_s": late}], "records": _RECORDS}
    gw.ls.load_scenario({"turns": [turn]})
    request = {
        "messages": [{"role": "user", "content": gw.tag(f"long: {case['first']}")}],
        "stream": case["cut_stream"],
    }
    answer = gw.chat(request, judged=(REFUSAL, RATE_LIMIT))
    if answer.error is not None:
        evidence.add("cut turn", "reported as an error")
        return
    finishes = answer.finish_reasons
    assert finishes == ["length"], (
        f"the LS still ran after the declared wait limit of {wait_limit_s:g} s; the gateway ended the turn with "
        f"finish reasons {finishes}, not as cut (finish_reason length, or an error)"
    )


def _judge_heartbeats(gw: GatewayUnderTest, case: Case, limits: TimeLimits, evidence: Evidence) -> None:
    """A turn whose LS falls silent for a few heartbeat intervals (well inside the wait limit) and then ends:
    the stream is never silent longer than the interval, and the turn ends normally with all its text."""
    assert limits.heartbeat_s is not None
    silence = limits.heartbeat_s * case["silences"]
    if limits.wait_limit_s is not None:
        silence = min(silence, limits.wait_limit_s / 2)
    if silence <= 2 * limits.heartbeat_s:
        evidence.not_observed("heartbeats (the wait limit leaves no room for a silence of two intervals)")
        return
    turn = {"chunks": [{"text": case["first"]}, {"text": case["rest"], "delay_s": silence}], "records": _RECORDS}
    gw.ls.load_scenario({"turns": [turn]})
    request = {"messages": [{"role": "user", "content": gw.tag(f"quiet: {case['first']}")}], "stream": True}
    answer = gw.chat(request)
    assert answer.content == case["first"] + case["rest"], (
        f"after {silence:g} s of silence (inside the wait limit) the turn's text is {answer.content!r}"
    )
    assert answer.finish_reasons == ["stop"], (
        f"a turn that ended inside the wait limit ended with {answer.finish_reasons}, not stop"
    )
    if answer.longest_silence_s is None:
        evidence.not_observed("heartbeats (the target does not time its streams: longest_silence_s)")
        return
    evidence.add("longest silence (s)", answer.longest_silence_s)
    slack = max(HEARTBEAT_SLACK_S, limits.heartbeat_s / 2)
    assert answer.longest_silence_s <= limits.heartbeat_s + slack, (
        f"the LS was silent for {silence:g} s; the stream went {answer.longest_silence_s:g} s without a line, "
        f"past the declared heartbeat interval of {limits.heartbeat_s:g} s (+{slack:g} s)"
    )


@invariant_property(
    "TURN-5",
    needs=("gateway.chat",),
    cases=wait_limit_cases,
    max_examples=3,
    over_http=OverHttp(given="--wait-limit or --heartbeat-interval"),
)
def time_limits_end_honestly(target: Target, case: Case, evidence: Evidence) -> None:
    """A turn the LS keeps running past the gateway's declared wait limit is reported as cut (finish ``length``
    or an error), never as a normal stop; while the LS is silent for a few heartbeat intervals, the stream still
    carries a line at least every declared interval, and the turn then ends normally."""
    with open_gateway(target, {"turns": []}) as gw:
        limits = gw.time_limits
        require(
            limits.wait_limit_s is not None or limits.heartbeat_s is not None,
            "the gateway's wait limit and heartbeat interval are not declared (--wait-limit, --heartbeat-interval)",
        )
        if limits.wait_limit_s is not None:
            _judge_cut(gw, case, limits.wait_limit_s, evidence)
        else:
            evidence.not_observed("turns cut by the wait limit (undeclared: --wait-limit)")
        if limits.heartbeat_s is not None:
            _judge_heartbeats(gw, case, limits, evidence)
        else:
            evidence.not_observed("heartbeats (undeclared: --heartbeat-interval)")
    evidence.add("exchanges", gw.exchanges)


# How a Responses turn may end, and the status it must then report everywhere (TURN-4).
_EXPECTED_STATUS = {"text": "completed", "tool call": "completed", "cut": "incomplete"}
# What a read of a stored response answers when the gateway keeps none (or does not serve reads).
_NO_READS = (404, 405, 501)


def _status_turn(case: Case, kind: str, wait_limit_s: float | None) -> dict[str, Any]:
    if kind == "text":
        chunks: list[dict[str, Any]] = [{"text": piece} for piece in case["pieces"]]
    elif kind == "tool call":
        call = {"id": "call_0", "name": case["tool"], "arguments_json": case["arguments"]}
        chunks = [{"text": "Let me look."}, {"tool_call": call}]
    else:
        assert wait_limit_s is not None
        chunks = [{"text": case["first"]}, {"text": " and on", "delay_s": wait_limit_s + 60}]
    return {"chunks": chunks, "records": _RECORDS}


def _status_request(gw: GatewayUnderTest, case: Case, kind: str, stream: bool) -> dict[str, Any]:
    question = gw.tag(f"{kind}: {case['question']}")
    request: dict[str, Any] = {"input": question, "stream": stream, "store": True}
    if kind == "tool call":
        request["input"] = [{"role": "user", "content": [{"type": "input_text", "text": question}]}]
        request["tools"] = [{"type": "function", "name": case["tool"], "parameters": {"type": "object"}}]
    return request


def _judge_status(gw: GatewayUnderTest, kind: str, stream: bool, answer: ChatAnswer, evidence: Evidence) -> None:
    """One Responses answer: the status its kind of turn ends with, reported once, and read back the same."""
    how = f"a {'streamed' if stream else 'non-stream'} {kind} turn"
    expected = _EXPECTED_STATUS[kind]
    assert answer.status < 300, f"{how} was answered {answer.status}: {str(answer.body)[:300]!r}"
    view = answer_view(answer.events, answer.body)
    assert view.problem is None, f"{how}: {view.problem}"
    assert view.status == expected, f"{how} reported status {view.status!r}, expected {expected!r}"
    if expected == "incomplete":
        reason = view.incomplete_reason
        assert isinstance(reason, str), f"{how} is incomplete without its reason (incomplete_details: {reason!r})"
        assert reason.strip(), f"{how} is incomplete with an empty reason"
    if kind == "tool call" and view.function_calls == 0:
        evidence.not_observed("tool-call turns (the gateway delivered no function_call for the LS's tool call)")
    if view.response_id is None:
        evidence.not_observed(f"later reads ({how} carries no response id)")
        return
    status, body = gw.retrieve(view.response_id)
    if status in _NO_READS:
        evidence.not_observed(f"later reads (GET /v1/responses/{{id}} answered {status}: no stored response)")
        return
    assert status == 200, f"reading {how} back answered {status}: {str(body)[:300]!r}"
    read = body_view(body)
    assert read.problem is None, f"reading {how} back: {read.problem}"
    assert read.status == view.status, f"{how} reported {view.status!r}; reading it back says {read.status!r}"
    assert read.output == view.output, (
        f"reading {how} back gives another output\n  served: {view.output!r}\n  read:   {read.output!r}"
    )


@invariant_property("TURN-4", needs=("gateway.respond", "gateway.retrieve"), cases=status_cases, max_examples=4)
def one_status_everywhere(target: Target, case: Case, evidence: Evidence) -> None:
    """A Responses turn reports one status in its stream, its non-stream body and a later read: ``completed``
    for a text or tool-call turn (each asked streamed and not), ``incomplete`` with its reason for a turn the
    LS kept running past the declared wait limit; a read gives back the output the POST served."""
    judged = 0
    with open_gateway(target, {"turns": []}) as gw:
        wait_limit_s = gw.time_limits.wait_limit_s
        plays = [("text", False), ("text", True), ("tool call", False), ("tool call", True)]
        if wait_limit_s is not None:
            plays.append(("cut", case["cut_stream"]))
        else:
            evidence.not_observed("cut turns (the wait limit is undeclared: --wait-limit)")
        for kind, stream in plays:
            gw.ls.load_scenario({"turns": [_status_turn(case, kind, wait_limit_s)]})
            try:
                answer = gw.respond(_status_request(gw, case, kind, stream))
            except (InputRefused, FeatureDeclined) as refused:
                evidence.not_observed(f"{'streamed' if stream else 'non-stream'} {kind} turns ({refused})")
                continue
            _judge_status(gw, kind, stream, answer, evidence)
            judged += 1
    evidence.add("exchanges", gw.exchanges)
    require(judged > 0, "the gateway refused every Responses request (POST /v1/responses)")

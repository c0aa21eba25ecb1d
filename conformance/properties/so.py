"""SO: structured output (seed 001 D2), end to end through a gateway.

The kit starts (or, for an HTTP target, loads) a fake LS whose scripted answer is a payload the
kit's model (:mod:`conformance.models.so`) labels conforming or not, sends an OpenAI request with
``response_format: json_schema`` through the gateway (``gateway.chat``), and judges the HTTP answer
and what the fake received. Cases come from :mod:`conformance.strategies.so`.
"""

from __future__ import annotations

from typing import Any

from conformance.gateway import ChatAnswer, GatewayUnderTest, open_gateway
from conformance.models.journal import delta, sends, served_tokens
from conformance.models.so import VIOLATION_CODE, error_code, gathered_into_one_frame, stream_essentials
from conformance.models.stream import StreamView
from conformance.properties import SCOPE_HINT, Case, Evidence, invariant_property, require
from conformance.strategies.so import conforming_cases, tool_call_cases, violating_cases
from conformance.targets import Target


def _turn(case: Case) -> dict[str, Any]:
    chunks: list[dict[str, Any]] = [{"thinking": case["thinking"]}] if case["thinking"] else []
    chunks += [{"text": text} for text in case["chunks"]]
    chunks += [{"tool_call": call} for call in case.get("tool_calls", ())]
    return {"chunks": chunks, "records": [case["usage"]]}


def _request(gw: GatewayUnderTest, case: Case, content: str, *, schema: bool = True) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": [{"role": "user", "content": gw.tag(content)}], "stream": case["stream"]}
    if schema:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": case["schema"]},
        }
    if case["stream"] and case["include_usage"]:
        request["stream_options"] = {"include_usage": True}
    return request


_CONTROL_ANSWER = '{"placeholder": true}'


def _follow_up(gw: GatewayUnderTest, asked: str, answer: str, stream: bool) -> dict[str, Any]:
    """The next turn of a conversation whose first request (``asked``, tagged) was answered ``answer``."""
    return {
        "messages": [
            {"role": "user", "content": gw.tag(asked)},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "And again?"},
        ],
        "stream": stream,
    }


def _keeps_a_conforming_turn(gw: GatewayUnderTest, case: Case) -> tuple[bool, bool]:
    """Whether the gateway keeps a conforming turn for this caller: (answers it again from a cache,
    resumes its cascade for the follow-up). The controls of SO-2's clauses, without a schema."""
    control = _request(gw, case, "Say it plainly", schema=False)
    gw.chat(control)
    asked = sends(gw.journal())
    cascade = asked[-1]["request"].get("cascade_id")
    gw.chat(control)
    cached = len(sends(gw.journal())) == len(asked)
    gw.chat(_follow_up(gw, "Say it plainly", _CONTROL_ANSWER, case["stream"]))
    resumed = sends(gw.journal())[-1]["request"].get("cascade_id") == cascade
    return cached, resumed


def _is_one_typed_error(answer: ChatAnswer) -> str | None:
    """None when ``answer`` is exactly one STRUCTURED_OUTPUT_NOT_CONFORMING error; else what it was."""
    if answer.events is None:
        if answer.status < 400:
            return f"status {answer.status} (a success) instead of an error status"
        code = error_code(answer.body)
        return None if code == VIOLATION_CODE else f"status {answer.status} with error code {code!r}"
    view = StreamView(answer.events)
    if view.done:
        return f"the stream ended with [DONE] ({len(answer.events)} events)"
    if len(answer.events) != 1 or len(view.errors) != 1:
        return f"{len(answer.events)} events instead of one error frame: {answer.events[:6]}"
    code = view.errors[0].get("code")
    return None if code == VIOLATION_CODE else f"one error frame with code {code!r}"


@invariant_property("SO-1", needs=("gateway.chat",), cases=violating_cases, max_examples=25)
def violation_is_one_typed_error(target: Target, case: Case, evidence: Evidence) -> None:
    """A json_schema request whose upstream answer the kit's model says violates the schema (wrong
    types, missing or extra properties, prose, truncated JSON, an array), streamed or not: exactly
    one typed error; no [DONE] on a stream."""
    with open_gateway(target, {"turns": [_turn(case)]}) as gw:
        answer = gw.chat(_request(gw, case, "Answer as JSON"))
        entries = gw.journal()
    evidence.add("exchanges", gw.exchanges)
    assert len(sends(entries)) == 1, f"the fake accepted {len(sends(entries))} Sends for one request"
    problem = _is_one_typed_error(answer)
    assert problem is None, f"a non-conforming answer ({case['violation']}) reached the client as {problem}"


@invariant_property("SO-2", needs=("gateway.chat",), cases=violating_cases, max_examples=15)
def violating_turn_is_not_kept(target: Target, case: Case, evidence: Evidence) -> None:
    """After a violating turn: a follow-up that carries the violating answer as the assistant turn
    does not resume its cascade (it was not committed), the same request again reaches the LS (it
    was not cached), and the usage the turn consumed upstream is in the ledger. Each clause is judged
    where the gateway shows it keeps that much for this caller: a conforming turn asked twice is
    answered from its cache, a conforming turn's follow-up resumes its cascade."""
    conforming = {**case, "chunks": [_CONTROL_ANSWER], "thinking": ""}
    scenario = {"turns": [_turn(case), *[_turn(conforming)] * 5]}
    with open_gateway(target, scenario) as gw:
        before = gw.ledger() if gw.has_ledger else None
        first = gw.chat(_request(gw, case, "Answer as JSON"))
        after_first = gw.ledger() if gw.has_ledger else None
        bad_cascade = sends(gw.journal())[-1]["request"].get("cascade_id")
        gw.chat(_follow_up(gw, "Answer as JSON", case["payload"], case["stream"]))
        sends_before_retry = len(sends(gw.journal()))
        gw.chat(_request(gw, case, "Answer as JSON"))
        entries = gw.journal()
        accepted = sends(entries)
        resumed = [s["seq"] for s in accepted[1:] if s["request"].get("cascade_id") == bad_cascade]
        kept = bool(resumed) or len(accepted) != sends_before_retry + 1
        cached, resumes = (True, True) if kept else _keeps_a_conforming_turn(gw, case)
    evidence.add("exchanges", gw.exchanges)
    # Whether the turn was refused as SO-1 asks is SO-1's verdict; here only what was kept is judged.
    evidence.add("the violating turn's answer (SO-1 judges it)", _is_one_typed_error(first) or "one typed error")
    assert not resumed, (
        f"the follow-up resumed cascade {bad_cascade} of the violating turn (Send seq {resumed}): it was committed "
        "to session continuity"
    )
    assert len(accepted) == sends_before_retry + 1, (
        "the violating request, sent again, never reached the LS: it was cached"
    )
    if not cached:
        evidence.not_observed(f"whether it was cached (this caller's repeated conforming turn was not: {SCOPE_HINT})")
    if not resumes:
        evidence.not_observed(f"whether it was committed (this caller's conforming follow-up was not: {SCOPE_HINT})")
    require(
        cached or resumes or before is not None,
        "the gateway kept nothing a violating turn could be kept in: it answered no repeated conforming turn from "
        f"a cache, resumed no conforming turn's cascade and exposes no ledger ({SCOPE_HINT})",
    )
    if before is None or after_first is None:
        evidence.not_observed("the ledger (usage of the violating turn)")
        return
    gained = delta(before, after_first)["tokens"]
    expected = served_tokens([e for e in entries if e["seq"] < accepted[1]["seq"]])
    assert gained == expected, (
        f"the violating turn's upstream usage was not recorded: ledger gained {gained}, wire {expected}"
    )


@invariant_property("SO-3", needs=("gateway.chat",), cases=conforming_cases, max_examples=15)
def conforming_stream_is_unchanged(target: Target, case: Case, evidence: Evidence) -> None:
    """The same conforming answer streamed for a json_schema request and for a plain request: what a
    schema check could change is the same (:func:`stream_essentials`: each channel in its own order,
    role, finish, errors, usage, [DONE] last), the payload intact, and the content not gathered into
    one frame where the plain stream has several. Chunk boundaries and how the channels interleave
    follow the gateway's polls, not the schema, and are not judged; a stream that looks gathered is
    asked once more (another prompt, so no cache answers it) before it fails."""
    with open_gateway(target, {"turns": [_turn(case)] * 3}) as gw:
        judged = gw.chat(_request(gw, case, "Answer as JSON"))
        plain = gw.chat(_request(gw, case, "Answer as JSON", schema=False))
        gathered = _streams(judged, plain) and gathered_into_one_frame(judged.events or [], plain.events or [])
        again = gw.chat(_request(gw, case, "Answer as JSON once more")) if gathered else None
    evidence.add("exchanges", gw.exchanges)
    assert judged.events is not None, f"a stream request was answered without a stream: {judged.summary()}"
    assert plain.events is not None, f"a stream request was answered without a stream: {plain.summary()}"
    view = StreamView(judged.events)
    assert not view.errors, f"a conforming answer was refused: {view.errors}"
    assert view.content == case["payload"], (
        f"content differs\n  sent by the LS: {case['payload']!r}\n  streamed: {view.content!r}"
    )
    assert view.done, "the conforming stream did not end with [DONE]"
    got, want = stream_essentials(judged.events), stream_essentials(plain.events)
    differ = {key: (got[key], want[key]) for key in got if got[key] != want[key]}
    assert not differ, "the json_schema stream differs from the plain stream in what a schema check could change\n" + (
        "\n".join(f"  {key}: schema {mine!r}, plain {theirs!r}" for key, (mine, theirs) in differ.items())
    )
    if again is not None:
        assert not (again.events is not None and gathered_into_one_frame(again.events, plain.events)), (
            f"the json_schema stream gathered the content into one frame, twice, where the plain stream delivered "
            f"it in {StreamView(plain.events).content_frames}: it buffers beyond what the plain stream shows"
        )


def _streams(*answers: ChatAnswer) -> bool:
    return all(answer.events is not None for answer in answers)


def _delivered(answer: ChatAnswer) -> tuple[list[str], list[Any], str | None]:
    """The tool calls an answer delivered (names), its finish reasons, and what else is wrong with it
    for a turn that delivers tool calls (an error status, a schema error, a stream without [DONE])."""
    if answer.events is None:
        if answer.status != 200 or not isinstance(answer.body, dict):
            return [], [], f"status {answer.status} for a tool-call turn: {answer.body}"
        choice = answer.body["choices"][0]
        calls = [c["function"]["name"] for c in choice["message"].get("tool_calls") or ()]
        return calls, [choice.get("finish_reason")], None
    view = StreamView(answer.events)
    if view.errors:
        return (
            view.tool_call_names,
            view.finish_reasons,
            f"a tool-call turn was judged against the schema: {view.errors}",
        )
    if not view.done:
        return view.tool_call_names, view.finish_reasons, "the tool-call stream did not end with [DONE]"
    return view.tool_call_names, view.finish_reasons, None


@invariant_property("SO-4", needs=("gateway.chat",), cases=tool_call_cases, max_examples=15)
def tool_call_turns_are_not_judged(target: Target, case: Case, evidence: Evidence) -> None:
    """A json_schema request answered with tool calls (and maybe prose): the tool calls reach the
    client with their normal terminal, no schema error. Judged where the same turn without a schema
    delivers the LS's tool calls (a gateway that makes tool calls only from its own text markup
    delivers none: the statement is about turns that deliver them)."""
    names = [call["name"] for call in case["tool_calls"]]
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]
    with open_gateway(target, {"turns": [_turn(case), _turn(case)]}) as gw:
        control = gw.chat({**_request(gw, case, "Use the tools", schema=False), "tools": tools})
        answer = gw.chat({**_request(gw, case, "Use the tools"), "tools": tools})
    evidence.add("exchanges", gw.exchanges)
    require(
        _delivered(control)[0] == names and _delivered(control)[2] is None,
        "without a schema the gateway does not deliver the LS's proposed tool calls (it may make tool calls only "
        "from its own markup); SO-4 judges turns that deliver tool calls",
    )
    delivered, finish, problem = _delivered(answer)
    assert problem is None, problem
    assert delivered == names, f"tool calls delivered {delivered}, the LS proposed {names}"
    assert finish == ["tool_calls"], f"finish_reason {finish}, expected ['tool_calls']"

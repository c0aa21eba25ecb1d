"""REQ: requests as the client sent them (gateway-fixes.md P2, P9), end to end through a gateway.

REQ-1 sends a conversation with earlier rounds to a fresh cascade and reads the Send the fake received:
every turn's pieces (:func:`conformance.models.req.history_pieces`) must be in it, in order.

REQ-2 sends a request the fake's scripted answer lets the kit judge: with ``stop``, the delivered text
must be the scripted answer cut before its first stop sequence (:mod:`conformance.models.req`), or the
request refused; with a parameter the LS cannot honour, or nothing to answer, a 4xx that reached no
Send. A 200 that ignored the parameter fails. Cases come from :mod:`conformance.strategies.req`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.errors import FeatureDeclined, InputRefused, excerpt
from conformance.example_tags import tagged, untagged
from conformance.gateway import REFUSAL, ChatAnswer, GatewayUnderTest, open_gateway
from conformance.models.journal import cascade_of, send_text, sends, unescaped
from conformance.models.req import OBJECT_RENDERED, history_pieces, responses_input, text_before_stop
from conformance.models.stream import StreamView
from conformance.properties import Case, Evidence, invariant_property
from conformance.strategies.req import history_cases, nothing_to_answer, parameter_cases
from conformance.targets import Target

_USAGE = {"input_tokens": 12, "output_tokens": 7}


def _refused(answer: ChatAnswer) -> bool:
    """A 4xx, or a stream that carries only an error: the gateway declined the request as asked."""
    if 400 <= answer.status < 500:
        return True
    if answer.status == 200 and answer.events is not None:
        return bool(answer.errors) and not answer.content and not StreamView(answer.events).tool_calls
    return False


def _probe_request(gw: GatewayUnderTest, probe: Case, prompt: str, stream: bool) -> tuple[dict[str, Any], str]:
    """The request a probe sends, and what it asks that the gateway must refuse."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": gw.tag(prompt)}]
    request: dict[str, Any] = {"messages": messages, "stream": stream}
    if probe["kind"] == "parameter":
        request.update(probe["parameter"])
        return request, ", ".join(f"{k}={v!r}" for k, v in probe["parameter"].items())
    if probe["kind"] == "unknown model":
        request["model"] = f"no-such-model-{gw.run_tag}"
        return request, f"the unknown model {request['model']!r}"
    messages.extend(nothing_to_answer(probe["ending"]))
    return request, f"a conversation with nothing to answer ({probe['ending']})"


def _resumed(entries: list[dict[str, Any]], before: int) -> bool:
    """Whether the Send after the first ``before`` went to the cascade of the one before it."""
    sent = sends(entries)
    return len(sent) > before >= 1 and cascade_of(sent[before]) == cascade_of(sent[before - 1])


def _judge_stop(answer: ChatAnswer, case: Case, upstream: int, evidence: Evidence) -> None:
    asked = f"stop={case['stop']!r}"
    if _refused(answer):
        evidence.add("stop refused", answer.status)
        assert upstream == 0, f"the gateway refused {asked} only after sending the turn to the LS ({upstream} Send)"
        return
    assert answer.status == 200, f"the gateway answered {answer.status} to {asked}"
    content, finishes, errors = answer.content, answer.finish_reasons, answer.errors
    assert not errors, f"the answer to {asked} carried an error: {errors[0]}"
    expected = text_before_stop("".join(case["pieces"]), case["stop"])
    assert content == expected, (
        f"with {asked} the delivered text is not the answer cut before its first stop sequence\n"
        f"  expected: {expected!r}\n  got:      {content!r}"
    )
    assert finishes == ["stop"], f"with {asked} the finish reasons are {finishes}, expected ['stop']"


@invariant_property("REQ-2", needs=("gateway.chat",), cases=parameter_cases, max_examples=25)
def parameters_honoured_or_refused(target: Target, case: Case, evidence: Evidence) -> None:
    """``stop`` cuts the delivered text before the first stop sequence (finish ``stop``), streamed or not;
    ``n`` > 1, log probabilities, a seed, a penalty, a logit bias, an unknown model and a conversation with
    nothing to answer each get a 4xx before any Send. Either may be refused; neither may be a 200 that ignored
    it."""
    answered = {"chunks": [{"text": "and on"}], "records": [_USAGE]}
    scenario = {"turns": [{"chunks": [{"text": piece} for piece in case["pieces"]], "records": [_USAGE]}, answered]}
    with open_gateway(target, scenario) as gw:
        request = {"messages": [{"role": "user", "content": gw.tag(case["prompt"])}], "stream": case["stream"]}
        answer = gw.chat({**request, "stop": case["stop"]}, judged=(REFUSAL,))
        upstream = len(sends(gw.journal()))
        cut = answer.content if answer.status == 200 else None
        if cut is not None and cut != "".join(case["pieces"]):
            # The conversation now holds the answer as cut; the cascade holds more of it.
            following = [
                *request["messages"],
                {"role": "assistant", "content": cut},
                {"role": "user", "content": "go on"},
            ]
            gw.chat({"messages": following, "stream": False})
            resumed = _resumed(gw.journal(), upstream)
            upstream = len(sends(gw.journal()))
        else:
            resumed = None
        outcomes = []
        for probe in case["probes"]:
            probe_request, asked = _probe_request(gw, probe, case["prompt"], case["probes_stream"])
            outcomes.append((asked, gw.chat(probe_request, judged=(REFUSAL,)), len(sends(gw.journal()))))
    evidence.add("exchanges", gw.exchanges)
    _judge_stop(answer, case, upstream, evidence)
    assert not resumed, (
        f"the answer cut at stop={case['stop']!r} was resumed: the next turn went to the cascade that holds the "
        "text past the stop sequence, which the client never saw"
    )
    for asked, probed, sent in outcomes:
        assert _refused(probed), f"the gateway answered {probed.status} to {asked}, " + (
            "ignoring it (a 4xx was due)" if probed.status == 200 else "where a request it cannot serve gets a 4xx"
        )
        assert sent == upstream, f"the gateway refused {asked} only after sending the turn to the LS"
        upstream = sent


@invariant_property("REQ-1", needs=("gateway.chat",), cases=history_cases, max_examples=25)
def every_turn_reaches_a_fresh_cascade(target: Target, case: Case, evidence: Evidence) -> None:
    """A conversation with earlier rounds (texts as strings or parts arrays, tool calls with arguments, tool
    results up to 20 KB) goes to a fresh cascade: its Send carries every piece in order, whatever framing the
    gateway puts around them, and never ``[object Object]``. The same conversation as Responses input items
    (messages, ``function_call`` and ``function_call_output`` items) is judged the same way."""
    scenario = {"turns": [{"chunks": [{"text": "noted"}], "records": [_USAGE]}]}
    with open_gateway(target, scenario) as gw:
        gw.chat({"messages": tagged(case["messages"]), "stream": False})
        chat_sends = sends(gw.journal())
        responses_sends: list[Mapping[str, Any]] | None = None
        if "gateway.respond" in target.operations():
            gw.ls.load_scenario(scenario)
            try:
                gw.respond({"input": responses_input(tagged(case["messages"])), "stream": False, "store": False})
                responses_sends = sends(gw.journal())[len(chat_sends) :]
            except (InputRefused, FeatureDeclined) as refused:
                evidence.not_observed(f"Responses input items ({refused})")
        else:
            evidence.not_observed("Responses input items (the target has no gateway.respond)")
    evidence.add("exchanges", gw.exchanges)
    _judge_history(case, chat_sends, "chat messages", evidence)
    if responses_sends is not None:
        _judge_history(case, responses_sends, "Responses input items", evidence)


def _judge_history(case: Case, sent: list[Mapping[str, Any]], asked: str, evidence: Evidence) -> None:
    """The first Send after the conversation was asked as ``asked`` carries every piece, in order."""
    assert sent, f"the conversation, asked as {asked}, reached no Send"
    text = unescaped(untagged(send_text(sent[0])))
    evidence.add(f"first Send ({asked})", excerpt(text))
    assert OBJECT_RENDERED not in text, f"a part was rendered as {OBJECT_RENDERED} ({asked}): {excerpt(text)}"
    at = 0
    for what, forms in history_pieces(case["messages"]):
        found = [(text.find(form, at), form) for form in forms if text.find(form, at) >= 0]
        assert found, (
            f"{what} ({asked}) is not in the Send after the turns before it\n  expected: {excerpt(forms[0])!r}\n"
            f"  Send from offset {at}: {text[at:][:600]!r}"
        )
        position, form = min(found)
        at = position + len(form)

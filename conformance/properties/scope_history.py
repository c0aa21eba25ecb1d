"""SCOPE-3 and SCOPE-4: a conversation goes on only from the history it holds (gateway-fixes.md P3, P8), end to
end through a gateway.

SCOPE-3 starts a conversation, changes what came before its next turn in one way (an edited or regenerated
answer, the system prompt, the tools, an image, the model, the caller) and reads the next turn's Send: a fresh
cascade that carries the whole history, never the cascade of the history before the change. SCOPE-4 chains a
Responses turn to a stored one with ``previous_response_id``: the LS gets the stored turns once each and only
the current instructions, or the gateway refuses before any LS call. Every turn carries a marker
(:func:`conformance.models.scope.marker`), so the Send is read by what it carries.
"""

from __future__ import annotations

from typing import Any

from conformance.errors import FeatureDeclined, InputRefused
from conformance.fixtures.images import image_block, same_size_pngs
from conformance.gateway import REFUSAL, ChatAnswer, GatewayUnderTest, open_gateway
from conformance.models.responses import body_view
from conformance.models.scope import Upstream, carried, marked, marker, missing, upstream
from conformance.properties import SCOPE_HINT, Case, Evidence, invariant_property, require
from conformance.strategies.scope import chain_cases, history_change_cases
from conformance.targets import Caller, Target

# How each change reads in a verdict, and why one could not be made.
_CHANGES = {
    "edited answer": "an edited answer",
    "regenerated answer": "a regenerated answer",
    "system prompt": "another system prompt",
    "tools": "other tools",
    "image": "another image in the first turn",
    "model": "another model",
    "caller": "another caller",
}
_UNAVAILABLE = {
    "regenerated answer": "the first turn asked again with another temperature was refused",
    "model": "the kit knows no other model it serves: --other-model",
    "caller": "one API key, and it scopes by key alone or the kit sends no per-user signal",
}
# Every Send gets its own answer, so two answers to one question (a regenerated one) differ.
_ANSWERS = [{"chunks": [{"text": f"Answer number {n} of this example."}]} for n in range(1, 61)]


class _Conversation:
    """One SCOPE-3 conversation: its messages so far, the markers of its turns, the request fields every turn
    carries, and the caller."""

    def __init__(self, gw: GatewayUnderTest, case: Case, name: str, *, image: str | None = None) -> None:
        self.gw = gw
        self.name = name
        self.marks: list[str] = []
        system = marked(f"{case['systems'][0]} (system first)", self._mark("system"))
        question = gw.tag(marked(case["questions"][0], self._mark("question")))
        content: Any = question
        if image is not None:
            content = [{"type": "text", "text": question}, image_block(image, "image_url")]
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": content},
        ]
        self.fields: dict[str, Any] = {"stream": case["stream"]}
        self.caller: int | Caller = 0

    def _mark(self, what: str) -> str:
        mark = marker(self.gw.run_tag, f"{self.name}-{what}")
        self.marks.append(mark)
        return mark

    def ask(self, **changed: Any) -> tuple[ChatAnswer, Upstream]:
        before = self.gw.journal()
        request = {"messages": list(self.messages), **self.fields, **changed}
        answer = self.gw.chat(request, caller=self.caller)
        assert answer.status == 200, f"{self.name}: the gateway answered {answer.summary()}"
        return answer, upstream(before, self.gw.journal())

    def answered(self, answer: ChatAnswer) -> None:
        self.messages.append({"role": "assistant", "content": answer.content})
        self.marks.append(answer.content)

    def next_question(self, case: Case) -> str:
        mark = self._mark("next")
        self.messages.append({"role": "user", "content": marked(case["questions"][1], mark)})
        return mark


def _judge_resumed(gw: GatewayUnderTest, what: str, went: Upstream, earlier: list[str], new: str, ev: Evidence) -> None:
    """A resumed Send gets the turns added since: the new one, none of the earlier ones (unless declared)."""
    assert not missing(went.text, [new]), (
        f"{what}: the resumed cascade's Send lacks the new turn\n  Send: {went.text!r}"
    )
    again = carried(went.text, earlier)
    if gw.resends_history:
        ev.not_observed("only the turns added since (the gateway declares it re-sends the whole history)")
        return
    assert not again, (
        f"{what}: the resumed cascade got earlier turns again ({again}), not only the turns added since (a gateway "
        f"that re-sends the whole history by design declares it: --resends-history)\n  Send: {went.text!r}"
    )


def _judge_fresh(what: str, went: Upstream, whole: list[str]) -> None:
    lost = missing(went.text, whole)
    assert not lost, f"{what}: the fresh cascade's Send lacks earlier turns {lost}\n  Send: {went.text!r}"


def _change_history(gw: GatewayUnderTest, case: Case, kind: str, talk: _Conversation) -> dict[str, Any] | None:
    """Change ``talk`` in the way ``kind`` says before its next turn; the request fields the next turn sends
    (None: the change cannot be made on this gateway)."""
    if kind == "edited answer":
        edited = marked(f"{talk.messages[-1]['content']} {case['edit']}", marker(gw.run_tag, "edit"))
        talk.messages[-1] = {"role": "assistant", "content": edited}
        talk.marks[-1] = edited
    elif kind == "system prompt":
        system = marked(f"{case['systems'][1]} (system second)", marker(gw.run_tag, "other-system"))
        talk.messages[0] = {"role": "system", "content": system}
        talk.marks[0] = system
    elif kind == "tools":
        return {"tools": [case["tools"][1]]}
    elif kind == "image":
        content = talk.messages[1]["content"]
        talk.messages[1] = {
            "role": "user",
            "content": [content[0], image_block(same_size_pngs(case["image_seed"])[1], "image_url")],
        }
    elif kind == "model":
        if gw.other_model is None:
            return None
        return {"model": gw.other_model}
    elif kind == "caller":
        other = _other_caller(gw, case)
        if other is None:
            return None
        talk.caller = other
    return {}


def _other_caller(gw: GatewayUnderTest, case: Case) -> Caller | None:
    """Another caller to continue a conversation as: another API key, else another end user of the key when
    the gateway does not resume the key alone's conversations for a signalled caller (it then scopes its pool
    by key, which a gateway may, and the two users are one caller to it). None: no other caller."""
    pairs = gw.caller_pairs()
    by_key = [pair for pair in pairs if pair.key_alone is None]
    if by_key or not pairs:
        return by_key[0].second if by_key else None
    pair = pairs[0]
    assert pair.key_alone is not None
    probe = _Conversation(gw, case, "key-alone")
    answer, _ = probe.ask()
    probe.answered(answer)
    probe.next_question(case)
    probe.caller = pair.key_alone
    _, went = probe.ask()
    return None if went.resumed else pair.second


def _regenerate(talk: _Conversation) -> Upstream | None:
    """The first turn asked again, as a client regenerating its answer does (with another temperature, so no
    cache answers it); the conversation then goes on from the first answer. None: the gateway refused."""
    first = talk.messages[:2]
    saved, talk.messages = talk.messages, first
    try:
        _, went = talk.ask(temperature=0.9)
    except (InputRefused, FeatureDeclined):
        return None
    finally:
        talk.messages = saved
    return went


@invariant_property("SCOPE-3", needs=("gateway.chat",), cases=history_change_cases, max_examples=3)
def resume_only_the_history_held(target: Target, case: Case, evidence: Evidence) -> None:
    """A conversation's next turn, asked as it went on, may resume its cascade and then gets only the new turn;
    after any change to what came before it (an edited answer, a regenerated one, the system prompt, the tools,
    the first turn's image, the model, the caller), it goes to a fresh cascade with the whole history, never to
    the cascade of the history before the change."""
    with open_gateway(target, {"turns": _ANSWERS}) as gw:
        control = _Conversation(gw, case, "control")
        answer, _ = control.ask()
        control.answered(answer)
        earlier = list(control.marks)
        new = control.next_question(case)
        _, went = control.ask()
        resumes = went.resumed
        if resumes:
            _judge_resumed(gw, "the same conversation", went, earlier, new, evidence)
        else:
            evidence.not_observed(f"resumed cascades (the gateway resumed none; {SCOPE_HINT})")
        for kind in case["changes"]:
            _judge_change(gw, case, kind, evidence)
    evidence.add("exchanges", gw.exchanges)


def _judge_change(gw: GatewayUnderTest, case: Case, kind: str, evidence: Evidence) -> None:
    image = same_size_pngs(case["image_seed"])[0] if kind == "image" else None
    talk = _Conversation(gw, case, kind.replace(" ", "-"), image=image)
    if kind == "tools":
        talk.fields["tools"] = [case["tools"][0]]
    try:
        answer, first = talk.ask()
    except (InputRefused, FeatureDeclined) as refused:
        evidence.not_observed(f"{_CHANGES[kind]} ({refused})")
        return
    talk.answered(answer)
    regenerated = _regenerate(talk) if kind == "regenerated answer" else None
    changed = _change_history(gw, case, kind, talk)
    if changed is None or (kind == "regenerated answer" and regenerated is None):
        evidence.not_observed(f"{_CHANGES[kind]} ({_UNAVAILABLE[kind]})")
        return
    new = talk.next_question(case)
    try:
        _, went = talk.ask(**changed)
    except (InputRefused, FeatureDeclined) as refused:
        evidence.not_observed(f"{_CHANGES[kind]} ({refused})")
        return
    what = f"after {_CHANGES[kind]}"
    assert went.reached, f"{what}: the next turn reached no Send"
    if regenerated is not None and went.resumed:
        assert went.cascade == first.cascade, (
            f"{what}: the conversation went on from its first answer, and the next turn resumed {went.cascade}, the "
            f"cascade of the regenerated answer, not {first.cascade}, the one that holds the first answer"
        )
        _judge_resumed(gw, what, went, talk.marks[:-1], new, evidence)
        return
    assert went.fresh, (
        f"{what}: the next turn resumed {went.cascade}, the cascade of the history before the change, not a fresh one"
    )
    _judge_fresh(what, went, talk.marks)


def _chain_input(gw: GatewayUnderTest, case: Case, call: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The stored turn's input (a question, an earlier tool round, another question) and its markers."""
    marks = [marker(gw.run_tag, name) for name in ("question-0", "output", "question-1")]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": marked(case["output"], marks[1])}
    items = [
        {"role": "user", "content": gw.tag(marked(case["questions"][0], marks[0]))},
        call,
        output,
        {"role": "user", "content": marked(case["questions"][1], marks[2])},
    ]
    return items, marks


def _refused_before_the_ls(what: str, answer: ChatAnswer, went: Upstream) -> None:
    assert 400 <= answer.status < 500, f"{what} was answered {answer.status}, not refused: {str(answer.body)[:300]}"
    assert not went.reached, f"{what} was refused only after a Send reached the LS"


@invariant_property("SCOPE-4", needs=("gateway.respond",), cases=chain_cases, max_examples=4)
def previous_response_id_honoured_or_refused(target: Target, case: Case, evidence: Evidence) -> None:
    """A stored Responses turn (an earlier tool round in its input) and a turn chained to it with other
    instructions that re-sends the earlier tool call: honoured, the LS gets the stored turns once each (on a
    fresh cascade, or only the new turn on the stored turn's cascade), the tool call once, only the current
    instructions; or refused with a 4xx before any Send. Chained to an unknown id, or by another caller, the
    turn is refused before any Send; never answered blind."""
    tool = {"type": "function", "name": case["tool"], "parameters": {"type": "object"}}
    with open_gateway(target, {"turns": _ANSWERS}) as gw:
        call_mark = marker(gw.run_tag, "call")
        call = {"type": "function_call", "call_id": f"call_{gw.run_tag}", "name": case["tool"]}
        call["arguments"] = f'{{"q": "{call_mark}"}}'
        items, marks = _chain_input(gw, case, call)
        old, current = (marker(gw.run_tag, f"instructions-{n}") for n in (1, 2))
        stored = {"input": items, "tools": [tool], "store": True, "instructions": marked(case["instructions"][0], old)}
        try:
            before = gw.journal()
            answer = gw.respond(stored)
        except (InputRefused, FeatureDeclined) as refused:
            require(False, f"the gateway refused the turn to chain to ({refused})")
        first = upstream(before, gw.journal())
        view = body_view(answer.body)
        require(answer.status == 200 and view.response_id is not None, "the stored turn has no response id")
        assert view.response_id is not None
        next_mark = marker(gw.run_tag, "question-2")
        chained = {
            "previous_response_id": view.response_id,
            "input": [dict(call), {"role": "user", "content": marked(case["questions"][2], next_mark)}],
            "tools": [tool],
            "instructions": marked(case["instructions"][1], current),
        }
        before = gw.journal()
        reply = gw.respond(chained, judged=(REFUSAL,))
        went = upstream(before, gw.journal())
        if reply.status >= 300:
            _refused_before_the_ls("a turn chained to a stored response", reply, went)
            evidence.add("chained turn", "refused")
        else:
            stored_turns = [*marks, *(text for kind, text, _ in view.output if kind == "message" and text)]
            _judge_chained(first, went, stored_turns, call_mark, next_mark, (old, current))
        _judge_foreign_chains(gw, chained, evidence)
    evidence.add("exchanges", gw.exchanges)


def _judge_chained(
    first: Upstream, went: Upstream, stored: list[str], call: str, new: str, instructions: tuple[str, str]
) -> None:
    old, current = instructions
    what = "a turn chained with previous_response_id"
    assert went.reached, f"{what} was answered without reaching the LS"
    text = went.text
    assert old not in text, f"{what}: the stored turn's instructions were sent again\n  Send: {text!r}"
    assert text.count(current) <= 1, f"{what}: the instructions were sent {text.count(current)} times"
    assert new in text, f"{what}: the new question is not in the Send\n  Send: {text!r}"
    if went.resumed:
        assert went.cascade == first.cascade, f"{what} resumed {went.cascade}, not the stored turn's {first.cascade}"
        again = carried(text, [*stored, call])
        assert not again, f"{what}: the resumed cascade got the stored turns again: {again}\n  Send: {text!r}"
        return
    lost = missing(text, stored)
    assert not lost, f"{what} was answered blind: a fresh cascade without the stored turns {lost}\n  Send: {text!r}"
    repeated = [mark for mark in stored if text.count(mark) > 1]
    assert not repeated, f"{what}: stored turns reached the LS more than once: {repeated}\n  Send: {text!r}"
    assert text.count(call) == 1, (
        f"{what}: the tool call the client sent again reached the LS {text.count(call)} times, expected once\n"
        f"  Send: {text!r}"
    )


def _judge_foreign_chains(gw: GatewayUnderTest, chained: dict[str, Any], evidence: Evidence) -> None:
    """Chained to an unknown id, or to the stored turn by another caller: refused before any Send."""
    unknown = {**chained, "previous_response_id": f"resp_unknown{gw.run_tag}"}
    before = gw.journal()
    reply = gw.respond(unknown, judged=(REFUSAL,))
    _refused_before_the_ls("a turn chained to an unknown response id", reply, upstream(before, gw.journal()))
    creator = gw.callers[0]
    pairs = [pair for pair in gw.caller_pairs() if pair.first == creator]
    if not pairs:
        evidence.not_observed("chains by another caller (one API key and no per-user signal)")
        return
    for pair in pairs:
        if pair.key_alone is not None and gw.respond(chained, caller=pair.key_alone, judged=(REFUSAL,)).status < 300:
            evidence.not_observed(
                "chains by another end user of the key (the key alone may chain: the gateway scopes its store by "
                "key, which a gateway may)"
            )
            continue
        before = gw.journal()
        reply = gw.respond(chained, caller=pair.second, judged=(REFUSAL,))
        went = upstream(before, gw.journal())
        _refused_before_the_ls(f"a turn chained to another caller's stored response ({pair.kind})", reply, went)

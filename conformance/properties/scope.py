"""SCOPE-1 and SCOPE-2: what a gateway's cache, store and pool share, and with whom (gateway-fixes.md P5, P6),
end to end through a gateway.

Whether a request reached the LS, and on which cascade, is read from the fake's journal
(:mod:`conformance.models.scope`); a request that reached no Send was answered from a cache. A gateway
that never answers from a cache (or never resumes a cascade) for a caller cannot show a leak of either,
and the property says so rather than passing on it.
"""

from __future__ import annotations

from typing import Any

from conformance.errors import FeatureDeclined, InputRefused
from conformance.fixtures.images import image_block, same_size_pngs
from conformance.gateway import CallerPair, ChatAnswer, GatewayUnderTest, open_gateway
from conformance.models.scope import Upstream, marked, marker, upstream
from conformance.properties import SCOPE_HINT, Case, Evidence, invariant_property, require
from conformance.strategies.scope import answer_change_cases, caller_cases
from conformance.targets import Caller, CallerScope, Target


def _asked(
    gw: GatewayUnderTest, request: dict[str, Any], caller: Caller, scope: CallerScope | None = None
) -> tuple[ChatAnswer, Upstream]:
    """``request`` sent as ``caller``: the answer, and what it did upstream."""
    before = gw.journal()
    answer = gw.chat(request, caller=caller, scope=scope)
    assert answer.status == 200, f"the gateway answered {answer.summary()}"
    return answer, upstream(before, gw.journal())


def _key_scoped(evidence: Evidence, what: str) -> None:
    evidence.not_observed(
        f"{what} between end users of one key (the gateway shares them with the key alone: it scopes them by key, "
        "which a gateway may)"
    )


def _judge_cache(gw: GatewayUnderTest, case: Case, pair: CallerPair, evidence: Evidence) -> bool:
    """One caller asks a question twice, the other asks it too: the other's request reaches the LS. Answers
    whether the first caller's repeat was a cache hit (else nothing could leak)."""
    request = {"messages": [{"role": "user", "content": gw.tag(f"{pair.kind}: {case['question']}")}], "stream": False}
    _asked(gw, request, pair.first)
    cached = not _asked(gw, request, pair.first)[1].reached
    if pair.key_alone is not None and cached and not _asked(gw, request, pair.key_alone)[1].reached:
        _key_scoped(evidence, "cached answers")
        return cached
    _, other = _asked(gw, request, pair.second)
    assert other.reached, (
        f"{pair.kind}: the second caller's request was answered from the first caller's cached answer (it reached "
        "no Send)"
    )
    return cached


def _opened(gw: GatewayUnderTest, case: Case, name: str, caller: Caller) -> tuple[list[dict[str, Any]], Upstream]:
    """A conversation ``caller`` starts (its first turn, marked ``name``): the history with the answer, and
    what the first turn did upstream."""
    started = [{"role": "user", "content": gw.tag(marked(case["question"], marker(gw.run_tag, name)))}]
    answer, went = _asked(gw, {"messages": started, "stream": case["stream"]}, caller)
    return [*started, {"role": "assistant", "content": answer.content}], went


def _continued(gw: GatewayUnderTest, case: Case, history: list[dict[str, Any]], name: str, caller: Caller) -> Upstream:
    """``history`` continued by ``caller`` with the follow-up question (marked ``name``)."""
    asked = [*history, {"role": "user", "content": marked(case["follow_up"], marker(gw.run_tag, name))}]
    return _asked(gw, {"messages": asked, "stream": case["stream"]}, caller)[1]


def _judge_pool(gw: GatewayUnderTest, case: Case, pair: CallerPair, evidence: Evidence) -> bool:
    """The first caller starts a conversation; the second continues it word for word: a fresh cascade that
    carries the whole history; the first caller's own next turn then resumes its cascade when its control
    conversation (nobody else in between) did. Answers whether the gateway resumed for the first caller."""
    kind, first = pair.kind, pair.first
    history, _ = _opened(gw, case, f"control-{kind}", first)
    pools = _continued(gw, case, history, f"control-next-{kind}", first).resumed
    if pair.key_alone is not None and pools:
        history, _ = _opened(gw, case, f"probe-{kind}", first)
        if _continued(gw, case, history, f"probe-next-{kind}", pair.key_alone).resumed:
            _key_scoped(evidence, "pooled cascades")
            return pools
    opening = f"opening-{kind}"
    history, owner = _opened(gw, case, opening, first)
    other = _continued(gw, case, history, f"taker-{kind}", pair.second)
    assert other.reached, f"{kind}: the second caller's turn reached no Send"
    assert other.fresh, (
        f"{kind}: the second caller's turn continued the first caller's cascade ({owner.cascade}): it was given "
        f"{other.describe()}"
    )
    assert marker(gw.run_tag, opening) in other.text, (
        f"{kind}: the second caller's turn went to a fresh cascade without the whole history: the opening turn is "
        f"not in its Send\n  Send: {other.text!r}"
    )
    mine = _continued(gw, case, history, f"owner-{kind}", first)
    if pools and mine.cascade != owner.cascade:
        # A gateway may let a pooled cascade go for its own reasons (a turn cut at its wait limit is not
        # pooled; a slow machine makes that likelier): only when its own control conversation still resumes
        # now, with nobody in between, is the lost cascade the other caller's doing.
        history, _ = _opened(gw, case, f"recheck-{kind}", first)
        require(
            _continued(gw, case, history, f"recheck-next-{kind}", first).resumed,
            f"{kind}: the gateway no longer resumed the first caller's own control conversation either, so a fresh "
            "cascade for its next turn says nothing about the other caller",
        )
        assert mine.cascade == owner.cascade, (
            f"{kind}: another caller's turn took the first caller's cascade away: its own next turn was given "
            f"{mine.describe()}, not its cascade {owner.cascade} (its control conversation was resumed)"
        )
    return pools


def _judge_store(gw: GatewayUnderTest, case: Case, pair: CallerPair, evidence: Evidence) -> bool:
    """The first caller stores a Responses turn; the second cannot read it. Answers whether the first could."""
    try:
        request = {"input": gw.tag(f"stored, {pair.kind}: {case['question']}"), "store": True}
        answer = gw.respond(request, caller=pair.first)
    except (InputRefused, FeatureDeclined) as refused:
        evidence.not_observed(f"stored responses ({refused})")
        return False
    body = answer.body if isinstance(answer.body, dict) else {}
    response_id = body.get("id")
    if answer.status != 200 or not isinstance(response_id, str) or not response_id:
        return False
    if gw.retrieve(response_id, caller=pair.first)[0] != 200:
        return False
    if pair.key_alone is not None and gw.retrieve(response_id, caller=pair.key_alone)[0] == 200:
        _key_scoped(evidence, "stored responses")
        return True
    status, read = gw.retrieve(response_id, caller=pair.second)
    leaked = status == 200 and isinstance(read, dict) and read.get("output") == body.get("output")
    assert not leaked, (
        f"{pair.kind}: the second caller read the first caller's stored response {response_id}: {str(read)[:300]}"
    )
    return True


def _hits(gw: GatewayUnderTest, request: dict[str, Any], callers: list[Caller], scope: CallerScope) -> list[bool]:
    return [not _asked(gw, request, caller, scope)[1].reached for caller in callers]


def _judge_blank(gw: GatewayUnderTest, case: Case, evidence: Evidence) -> None:
    """A blank signal is no signal: asked as [none, blank, blank, other blank, none], a repeat hits the cache
    exactly when the last request, with no signal, does; a conversation continued the same way is resumed at
    every turn or at none."""
    scope = gw.blank_scope()
    key = gw.callers[0].api_key
    first, second = (Caller(key, blank) for blank in case["blanks"])
    anonymous = Caller(key, None)
    order = [anonymous, first, first, second, anonymous]
    shown = ["none", *(repr(c.signal) for c in order[1:4]), "none"]
    request = {"messages": [{"role": "user", "content": gw.tag(f"blank: {case['question']}")}], "stream": False}
    hits = _hits(gw, request, order, scope)
    evidence.add("cache hits by signal", dict(zip(shown, hits, strict=True)))
    assert hits[1:4] == [hits[4]] * 3, (
        f"a blank {scope.scope} is not the same caller as none: asked with {', '.join(shown)}, the cache hits were "
        f"{hits} (the last, with no signal, {'hit' if hits[4] else 'missed'}; every blank one must too)"
    )
    messages = [{"role": "user", "content": gw.tag(marked(case["question"], marker(gw.run_tag, "blank-0")))}]
    resumed: list[bool] = []
    for turn, caller in enumerate(order):
        answer, went = _asked(gw, {"messages": list(messages), "stream": False}, caller, scope)
        if turn:
            resumed.append(went.resumed)
        messages += [
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": marked(case["follow_up"], marker(gw.run_tag, f"blank-{turn + 1}"))},
        ]
    evidence.add("turns resumed by signal", dict(zip(shown[1:], resumed, strict=True)))
    assert len(set(resumed)) == 1, (
        f"a blank {scope.scope} is not the same caller as none: a conversation continued with {', '.join(shown[1:])} "
        f"resumed its cascade at turns {resumed} (the same caller resumes at every turn or at none)"
    )


@invariant_property("SCOPE-1", needs=("gateway.chat",), cases=caller_cases, max_examples=3)
def nothing_crosses_callers(target: Target, case: Case, evidence: Evidence) -> None:
    """For each pair of callers the gateway can be shown (two API keys; two end users of one key): a question one
    asked is not answered to the other from a cache; a conversation one started is continued for the other on a
    fresh cascade with the whole history, and is still the first one's afterwards; a response one stored cannot be
    read by the other. A blank per-user signal behaves exactly as none (the same cache hits, the same resumes)."""
    with open_gateway(target, {"turns": []}) as gw:
        pairs = gw.caller_pairs()
        cached = pooled = stored = False
        for pair in pairs:
            cached |= _judge_cache(gw, case, pair, evidence)
            pooled |= _judge_pool(gw, case, pair, evidence)
            if "gateway.respond" in target.operations() and "gateway.retrieve" in target.operations():
                stored |= _judge_store(gw, case, pair, evidence)
        _judge_blank(gw, case, evidence)
    evidence.add("exchanges", gw.exchanges)
    evidence.add("caller pairs", [pair.kind for pair in pairs])
    if not pairs:
        evidence.not_observed("callers kept apart (one API key and no per-user signal: --api-key twice, or a signal)")
    require(
        not pairs or cached or pooled or stored,
        f"the gateway kept no cached answer, pooled cascade or stored response for a caller; {SCOPE_HINT}",
    )
    for shared, what in ((cached, "cached answers"), (pooled, "pooled cascades"), (stored, "stored responses")):
        if pairs and not shared:
            evidence.not_observed(f"{what} kept apart (the gateway kept none for a caller; {SCOPE_HINT})")


_IMAGE_TEXT = "Describe the picture."


def _base_request(gw: GatewayUnderTest, case: Case, image: str | None = None) -> dict[str, Any]:
    question = gw.tag(case["question"])
    content: Any = question
    if image is not None:
        content = [{"type": "text", "text": f"{question} {_IMAGE_TEXT}"}, image_block(image, "image_url")]
    return {"messages": [{"role": "user", "content": content}], "stream": case["stream"]}


@invariant_property("SCOPE-2", needs=("gateway.chat",), cases=answer_change_cases, max_examples=3)
def the_cache_sees_what_changes_the_answer(target: Target, case: Case, evidence: Evidence) -> None:
    """A question asked twice (the second may be a cache hit), then asked again with one thing changed that can
    change the answer (response_format, reasoning effort flat and nested, stop, temperature, top_p, top_k,
    max_tokens, max_completion_tokens, tools; or, asked with an image, the pixels of a same-size image), each
    change on its own: the changed request reaches the LS. A change the gateway refuses is not judged."""
    turn = {"chunks": [{"text": case["answer"]}], "records": [{"input_tokens": 9, "output_tokens": 4}]}
    judged: list[str] = []
    with open_gateway(target, {"turns": [turn] * 40}) as gw:
        first = gw.callers[0]
        base = _base_request(gw, case)
        _asked(gw, base, first)
        caches = not _asked(gw, base, first)[1].reached
        for change in case["changes"]:
            if change["kind"] == "image":
                one, other = same_size_pngs(change["seed"])
                asked, changed = _base_request(gw, case, one), _base_request(gw, case, other)
            else:
                asked, changed = base, {**base, **{k: v for k, v in change.items() if k != "kind"}}
            try:
                if asked is not base:
                    _asked(gw, asked, first)
                before = gw.journal()
                gw.chat(changed, caller=first)
            except (InputRefused, FeatureDeclined) as refused:
                evidence.not_observed(f"{change['kind']} (refused: {refused})")
                continue
            judged.append(change["kind"])
            assert upstream(before, gw.journal()).reached, (
                f"a request with another {change['kind']} ({_shown(change)}) was answered from the cached answer "
                "of the request without it (it reached no Send)"
            )
    evidence.add("exchanges", gw.exchanges)
    evidence.add("changes judged", judged)
    require(caches, f"the gateway never answered a repeated request from a cache; {SCOPE_HINT}")


def _shown(change: Case) -> str:
    if change["kind"] == "image":
        return "the same size, other pixels"
    return ", ".join(f"{k}={v!r}" for k, v in change.items() if k != "kind")[:200]

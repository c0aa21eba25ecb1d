"""ACC: cache-replay accounting (seed 001 D4), end to end through a gateway.

Upstream turns and billable tokens come from the fake's wire (:mod:`conformance.models.acc`); a
request that reached no Send was answered from a cache. The gateway's ledger (``gateway.ledger``,
the kit's ledger document) is judged against that, by its deltas, so a gateway that outlives the
examples (an HTTP target) is judged the same way as a fresh one.
"""

from __future__ import annotations

from typing import Any

from conformance.gateway import ChatAnswer, GatewayUnderTest, open_gateway
from conformance.models.acc import (
    CACHE_WRITES_APART,
    CACHE_WRITES_IN_PROMPT,
    billed,
    no_tokens,
    prompt_tokens,
    usage_frames,
    usage_numbers,
)
from conformance.models.journal import META, accepted_sends, delta, served_tokens
from conformance.models.stream import StreamView
from conformance.properties import SCOPE_HINT, Case, Evidence, invariant_property, require
from conformance.strategies.acc import repeat_cases, replay_usage_cases, request_mixes, usage_mapping_cases
from conformance.targets import Target

_QUESTIONS = ("What is the capital of Peru?", "Name a prime above 100.", "Summarise the plot of Hamlet.")


def _turn(text: str, thinking: str, usage: dict[str, int]) -> dict[str, Any]:
    chunks = ([{"thinking": thinking}] if thinking else []) + [{"text": text}]
    return {"chunks": chunks, "records": [usage]}


def _ask(gw: GatewayUnderTest, prompt: str, stream: bool, include_usage: bool, caller: int = 0) -> ChatAnswer:
    request: dict[str, Any] = {"messages": [{"role": "user", "content": gw.tag(prompt)}], "stream": stream}
    if stream and include_usage:
        request["stream_options"] = {"include_usage": True}
    answer = gw.chat(request, caller=caller)
    assert answer.status == 200, f"status {answer.status}: {answer.summary()}"
    if answer.events is not None:
        assert StreamView(answer.events).done, f"the stream did not end with [DONE]: {answer.events[-3:]}"
    return answer


def _usage_of(answer: ChatAnswer) -> dict[str, Any] | None:
    if answer.events is None:
        return usage_numbers(answer.body.get("usage") if isinstance(answer.body, dict) else None)
    return usage_numbers(StreamView(answer.events).usage)


@invariant_property("ACC-1", needs=("gateway.chat", "gateway.ledger"), cases=repeat_cases, max_examples=15)
def cache_hit_adds_nothing(target: Target, case: Case, evidence: Evidence) -> None:
    """The same request twice; when the second never reached the LS (a cache hit), the ledger gains
    no tokens, no credits and no account spend, counts one more served request, and its row is
    flagged cache-served with no credit."""
    scenario = {"turns": [_turn(case["answer"], case["thinking"], case["usage"])] * 2}
    with open_gateway(target, scenario) as gw:
        _ask(gw, case["prompt"], case["stream"], case["include_usage"])
        sends, first = accepted_sends(gw.journal()), gw.ledger()
        _ask(gw, case["prompt"], case["stream"], case["include_usage"])
        hit = accepted_sends(gw.journal()) == sends
        second = gw.ledger()
    evidence.add("exchanges", gw.exchanges)
    require(hit, f"the gateway never answered a repeated request from a cache; {SCOPE_HINT}")
    gained = delta(first, second)
    evidence.add("ledger delta of the hit", gained)
    assert gained["tokens"] == no_tokens(), f"the cache hit added tokens: {gained['tokens']}"
    assert gained["credits"] == 0, f"the cache hit charged {gained['credits']} credits"
    assert gained["spend"] == 0, f"the cache hit added {gained['spend']} to account spend"
    assert gained["served"] == 1, f"the cache hit counted {gained['served']} served requests, expected 1"
    assert gained["cache_served"] == 1, f"the cache hit counted {gained['cache_served']} cache-served, expected 1"
    assert gained["rows"], "the cache hit left no request row"
    row = gained["rows"][-1]
    assert row["cache_served"] is True, f"the hit's row is not flagged cache-served: {row}"
    assert row["credit"] == 0, f"the hit's row carries credit {row['credit']}"


@invariant_property("ACC-2", needs=("gateway.chat",), cases=replay_usage_cases, max_examples=15)
def cached_usage_reaches_the_client(target: Target, case: Case, evidence: Evidence) -> None:
    """The same request twice (usage asked for on streams); when the second was a cache hit, its
    answer carries the usage of the original answer, token for token."""
    scenario = {"turns": [_turn(case["answer"], case["thinking"], case["usage"])] * 2}
    with open_gateway(target, scenario) as gw:
        original = _ask(gw, case["prompt"], case["stream"], True)
        sends = accepted_sends(gw.journal())
        replayed = _ask(gw, case["prompt"], case["stream"], True)
        hit = accepted_sends(gw.journal()) == sends
    evidence.add("exchanges", gw.exchanges)
    require(hit, f"the gateway never answered a repeated request from a cache; {SCOPE_HINT}")
    want = _usage_of(original)
    assert want is not None, "the original answer carried no usage"
    got = _usage_of(replayed)
    assert got == want, f"the replayed answer's usage differs\n  original: {want}\n  replayed: {got}"


@invariant_property("ACC-3", needs=("gateway.chat", "gateway.ledger"), cases=request_mixes, max_examples=15)
def ledgers_equal_upstream_turns(target: Target, case: Case, evidence: Evidence) -> None:
    """Any mix of requests (three questions, two callers, stream or not): the ledger gains exactly
    the tokens of the records the LS handed out (each once), the same as account spend; every
    request counts as served, the ones that reached no Send as cache-served with no credit, and the
    credits are those of the upstream rows."""
    requests = case["requests"]
    scenario = {"turns": [_turn(f"answer {k + 1}", "", usage) for k, usage in enumerate(case["usages"])]}
    with open_gateway(target, scenario) as gw:
        before = gw.ledger()
        for item in requests:
            _ask(gw, _QUESTIONS[item["question"]], item["stream"], item["include_usage"], caller=item["caller"])
        after = gw.ledger()
        entries = gw.journal()
    evidence.add("exchanges", gw.exchanges)
    gained = delta(before, after)
    evidence.add("ledger delta", gained)
    wire = served_tokens(entries)
    upstream = accepted_sends(entries)
    hits = len(requests) - upstream
    assert gained["tokens"] == wire, f"ledger tokens {gained['tokens']}, the LS handed out {wire}"
    assert gained["spend"] == sum(wire.values()), (
        f"account spend grew {gained['spend']}, wire total {sum(wire.values())}"
    )
    assert gained["served"] == len(requests), f"{gained['served']} served for {len(requests)} requests"
    assert gained["cache_served"] == hits, f"{gained['cache_served']} cache-served, {hits} requests reached no Send"
    rows = gained["rows"]
    assert len(rows) == len(requests), f"{len(rows)} new rows for {len(requests)} requests"
    flagged = [row for row in rows if row["cache_served"]]
    assert len(flagged) == hits, f"{len(flagged)} rows flagged cache-served, {hits} hits"
    assert all(row["credit"] == 0 for row in flagged), f"cache-served rows charged credit: {flagged}"
    charged = round(sum(row["credit"] for row in rows), 9)
    assert gained["credits"] == charged, f"credits grew {gained['credits']}, the rows charge {charged}"


def _judge_usage(
    usage: dict[str, Any], sums: dict[str, int], policy: str | None, evidence: Evidence, where: str
) -> None:
    """``usage`` against the sums of the turn's records, under the gateway's declared cache-write policy."""
    completion, prompt = usage.get("completion_tokens"), usage.get("prompt_tokens")
    assert completion == sums["output"], (
        f"{where}: completion_tokens {completion}, the records' output tokens sum to {sums['output']}"
    )
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None:
        evidence.not_observed("cached tokens (no prompt_tokens_details.cached_tokens)")
    else:
        assert isinstance(prompt, int), f"{where}: prompt_tokens is {prompt!r}, not a number"
        assert cached <= prompt, f"{where}: cached_tokens {cached} > prompt_tokens {prompt}"
        assert cached == sums["cache_read"], (
            f"{where}: cached_tokens {cached}, the records' cache reads sum to {sums['cache_read']}"
        )
    policies = (policy,) if policy is not None else (CACHE_WRITES_IN_PROMPT, CACHE_WRITES_APART)
    if policy is None and sums["cache_write"]:
        evidence.not_observed("where cache writes are counted (undeclared; --cache-writes prompt|apart declares it)")
    expected = {p: prompt_tokens(sums, p) for p in policies}
    assert prompt in expected.values(), (
        f"{where}: prompt_tokens {prompt}; the records give "
        + " or ".join(f"{n} (cache writes {p})" for p, n in expected.items())
        + f" (input {sums['input']}, cache reads {sums['cache_read']}, cache writes {sums['cache_write']})"
    )
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        assert reasoning <= completion, f"{where}: reasoning_tokens {reasoning} > completion_tokens {completion}"


@invariant_property("ACC-4", needs=("gateway.chat",), cases=usage_mapping_cases, max_examples=15)
def usage_maps_the_billed_records_once(target: Target, case: Case, evidence: Evidence) -> None:
    """One scripted turn asked twice, streamed and not: each answer's usage maps the turn's generator records
    (completion = output; cached = cache reads, never above prompt; prompt = input + cache reads, plus cache
    writes where the gateway declares it counts them); a stream carries usage in one frame at most (exactly
    one when include_usage asks), with the non-stream answer's figures."""
    turn = _turn(case["answer"], case["thinking"], {})
    turn["records"] = case["records"]
    answers: dict[bool, ChatAnswer] = {}
    with open_gateway(target, {"turns": [turn, turn]}) as gw:
        for stream in (True, False) if case["stream_first"] else (False, True):
            prompt = f"{case['prompt']} ({'streamed' if stream else 'whole'})"
            answers[stream] = _ask(gw, prompt, stream, case["include_usage"])
        entries, policy = gw.journal(), gw.cache_writes
    evidence.add("exchanges", gw.exchanges)
    require(
        any(e.get("method") == META and e.get("status") == "OK" for e in entries),
        "the gateway never read the LS's generator metadata: its usage maps no records",
    )
    require(accepted_sends(entries) == 2, "one of the two requests reached no Send (answered from a cache)")
    sums = billed(case["records"])
    evidence.add("records' sums", sums)
    whole = answers[False].body.get("usage") if isinstance(answers[False].body, dict) else None
    require(isinstance(whole, dict), "the non-stream answer carries no usage")
    assert isinstance(whole, dict)
    _judge_usage(whole, sums, policy, evidence, "the non-stream answer")
    events = answers[True].events
    assert events is not None, f"a stream was asked for, the gateway answered {answers[True].summary()}"
    frames = usage_frames(StreamView(events).chunks)
    assert len(frames) <= 1, f"the stream carries usage in {len(frames)} frames: {[f['usage'] for f in frames]}"
    if not frames:
        if case["include_usage"]:
            evidence.not_observed("usage in streams (include_usage asked for it; none was sent)")
        return
    streamed = frames[0]["usage"]
    _judge_usage(streamed, sums, policy, evidence, "the stream")
    assert usage_numbers(streamed) == usage_numbers(whole), (
        f"the stream's usage differs from the non-stream answer's for the same records\n"
        f"  stream:     {usage_numbers(streamed)}\n  non-stream: {usage_numbers(whole)}"
    )

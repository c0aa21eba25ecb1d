"""Hypothesis strategies for fakels scenarios, shared by the conformance properties and the tests.

Every strategy builds the dataclasses of :mod:`fakels.scenario` directly. Tool-call arguments are
valid JSON, sometimes tens of kilobytes long. Times (``delay_s``, TTLs) are multiples of 0.5 s so
they add up exactly on a ``ManualClock``.

Shrinking goes towards the plain case: no fault, no expiry, no delay, short text.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from conformance.strategies.text import identifiers, json_arguments, unicode_text
from fakels.scenario import (
    Chunk,
    Fault,
    FaultKind,
    NativeStep,
    ResponseOverride,
    Scenario,
    ToolCall,
    Turn,
    Usage,
)

DELAYS: tuple[float, ...] = (0.0, 0.5, 1.0, 2.5)

# Fault messages each real-client error class recognises (wire.md section 4), so a scripted
# message stays in its class.
EXPIRED_MESSAGES: tuple[str, ...] = (
    "not_found: cascade trajectory has been expired by ttl",
    "cascade not found",
    "trajectory not-found for id",
    "expired cascade, start a new one",
    "unknown cascade id",
)
PANEL_MESSAGES: tuple[str, ...] = ("panel state not found", "not_found: panel state missing for this session")
UNTRUSTED_MESSAGES: tuple[str, ...] = ("untrusted workspace", "workspace /work is not trusted")

NATIVE_KINDS: tuple[str, ...] = (
    "run_command",
    "view_file",
    "list_directory",
    "grep_search_v2",
    "search_web",
    "write_to_file",
)


@cache
def tool_calls() -> st.SearchStrategy[ToolCall]:
    return st.builds(
        ToolCall,
        id=st.one_of(identifiers("call_"), unicode_text(min_size=1, max_size=12)),
        name=st.one_of(
            st.sampled_from(("read_file", "Bash", "web.search", "mcp__github__create_issue")),
            identifiers(),
        ),
        arguments_json=json_arguments(),
    )


@st.composite
def native_bodies(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """A protobuf-JSON body (camelCase names) for the native step ``kind``."""
    path = "/work/" + "/".join(draw(st.lists(identifiers(), min_size=1, max_size=3)))
    text = unicode_text(max_size=40)
    if kind == "run_command":
        return {
            "commandLine": draw(unicode_text(min_size=1, max_size=60)),
            "cwd": "/work",
            "blocking": draw(st.booleans()),
        }
    if kind == "view_file":
        start = draw(st.integers(min_value=0, max_value=500))
        return {
            "absolutePathUri": "file://" + path,
            "startLine": start,
            "endLine": start + draw(st.integers(min_value=0, max_value=200)),
            "content": draw(text),
        }
    if kind == "list_directory":
        return {"directoryPathUri": "file://" + path, "children": draw(st.lists(unicode_text(max_size=24), max_size=6))}
    if kind == "grep_search_v2":
        return {"pattern": draw(text), "path": path, "rawOutput": draw(text), "caseInsensitive": draw(st.booleans())}
    if kind == "search_web":
        return {"query": draw(text), "domain": "example.invalid", "summary": draw(text)}
    if kind == "write_to_file":
        return {
            "targetFileUri": "file://" + path,
            "codeContent": draw(st.lists(text, max_size=5)),
            "fileCreated": draw(st.booleans()),
        }
    raise ValueError(f"no body strategy for native kind {kind!r}")


@st.composite
def native_steps(draw: st.DrawFn) -> NativeStep:
    kind = draw(st.sampled_from(NATIVE_KINDS))
    return NativeStep(
        kind=kind,
        body=draw(native_bodies(kind)),
        step_type=draw(st.one_of(st.none(), st.sampled_from((0, 21, 99)))),
        status=draw(st.one_of(st.none(), st.sampled_from((1, 3)))),
    )


@st.composite
def chunks(draw: st.DrawFn) -> Chunk:
    """One revealed unit: text and/or thinking, a tool call, a native step, an error, a pause,
    or a mix. Never entirely empty (the scenario schema wants at least one property)."""
    shape = draw(st.sampled_from(("text", "thinking", "both", "tool", "native", "error", "pause", "mixed")))
    delay = draw(st.sampled_from(DELAYS))
    text = unicode_text(min_size=1, max_size=48)
    if shape == "text":
        return Chunk(text=draw(text), delay_s=delay)
    if shape == "thinking":
        return Chunk(thinking=draw(text), delay_s=delay)
    if shape == "both":
        return Chunk(text=draw(text), thinking=draw(text), delay_s=delay)
    if shape == "tool":
        return Chunk(tool_call=draw(tool_calls()), delay_s=delay)
    if shape == "native":
        return Chunk(native=draw(native_steps()), delay_s=delay)
    if shape == "error":
        return Chunk(error=draw(text), delay_s=delay)
    if shape == "pause":
        return Chunk(delay_s=draw(st.sampled_from(DELAYS[1:])))
    return Chunk(
        text=draw(unicode_text(min_size=1, max_size=24)),
        thinking=draw(unicode_text(max_size=24)),
        tool_call=draw(st.one_of(st.none(), tool_calls())),
        native=draw(st.one_of(st.none(), native_steps())),
        error=draw(st.one_of(st.none(), text)),
        delay_s=delay,
    )


@cache
def usages() -> st.SearchStrategy[Usage]:
    tokens = st.integers(min_value=0, max_value=2**40)
    return st.builds(
        Usage, input_tokens=tokens, output_tokens=tokens, cache_write_tokens=tokens, cache_read_tokens=tokens
    )


@cache
def records() -> st.SearchStrategy[tuple[Usage | None, ...]]:
    """Generator-metadata records of one turn; ``None`` is a record without usage."""
    return st.lists(st.one_of(usages(), st.none()), max_size=3).map(tuple)


@st.composite
def faults(draw: st.DrawFn, kinds: tuple[FaultKind, ...] = ("expired", "panel_lost", "untrusted", "error")) -> Fault:
    kind = draw(st.sampled_from(kinds))
    if draw(st.booleans()):
        return Fault(kind=kind)
    messages: st.SearchStrategy[str] = {
        "expired": st.sampled_from(EXPIRED_MESSAGES),
        "panel_lost": st.sampled_from(PANEL_MESSAGES),
        "untrusted": st.sampled_from(UNTRUSTED_MESSAGES),
        "error": unicode_text(min_size=1, max_size=40),
    }[kind]
    return Fault(kind=kind, message=draw(messages))


@cache
def response_overrides() -> st.SearchStrategy[ResponseOverride]:
    """A malformed answer: raw bytes or an error status in place of one polling answer."""
    rpcs = st.sampled_from(
        ("GetCascadeTrajectorySteps", "GetCascadeTrajectory", "GetCascadeTrajectoryGeneratorMetadata")
    )
    calls = st.integers(min_value=0, max_value=3)
    return st.one_of(
        st.builds(ResponseOverride, rpc=rpcs, call=calls, payload_hex=st.binary(max_size=16).map(bytes.hex)),
        st.builds(
            ResponseOverride,
            rpc=rpcs,
            call=calls,
            error_code=st.sampled_from(("UNAVAILABLE", "INTERNAL", "NOT_FOUND", "DEADLINE_EXCEEDED")),
            error_message=st.one_of(st.none(), unicode_text(max_size=20)),
        ),
    )


def _rarely(strategy: st.SearchStrategy[Any], one_in: int) -> st.SearchStrategy[Any]:
    """``strategy`` about once in ``one_in`` draws, else None; shrinks towards None."""
    return st.integers(min_value=1, max_value=one_in).flatmap(lambda n: strategy if n == one_in else st.none())


@st.composite
def turns(
    draw: st.DrawFn,
    *,
    max_chunks: int = 6,
    fault_one_in: int = 6,
    with_overrides: bool = False,
) -> Turn:
    """A scripted turn. ``modified_response`` is absent, an extension of the final response (which
    the client appends) or an unrelated text (which it ignores)."""
    turn_chunks = tuple(draw(st.lists(chunks(), max_size=max_chunks)))
    response = "".join(c.text for c in turn_chunks)
    modified = draw(
        st.one_of(
            st.none(),
            unicode_text(min_size=1, max_size=20).map(lambda extra: response + extra),
            unicode_text(min_size=1, max_size=20),
        )
    )
    return Turn(
        chunks=turn_chunks,
        records=draw(records()),
        user_input_step=draw(st.integers(min_value=0, max_value=4)) != 4,
        modified_response=modified,
        fault=draw(_rarely(faults(), fault_one_in)),
        expire_after=draw(_rarely(st.just(True), 8)) is True,
        lose_panel_after=draw(_rarely(st.just(True), 10)) is True,
        overrides=tuple(draw(st.lists(response_overrides(), max_size=2))) if with_overrides else (),
        min_running_polls=draw(st.integers(min_value=0, max_value=3)),
    )


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 5,
    max_chunks: int = 6,
    fault_one_in: int = 6,
    ttls: tuple[float, ...] = (3.0, 10.0, 30.0),
) -> Scenario:
    """A scenario of scripted turns (later Sends get :func:`fakels.scenario.default_turn`)."""
    scripted = draw(
        st.lists(turns(max_chunks=max_chunks, fault_one_in=fault_one_in), min_size=min_turns, max_size=max_turns)
    )
    return Scenario(
        turns=tuple(scripted),
        cascade_ttl_s=draw(st.one_of(st.none(), st.sampled_from(ttls))),
        require_panel=draw(st.booleans()),
    )

"""WIRE: encoded client requests (with the fields a decoder must produce), unknown fields, garbage
bodies and calls, and scripted cascades for the stateful checks."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from conformance import wire_bytes as wb
from conformance.models import wire as model
from conformance.strategies.text import unicode_text
from conformance.targets import Target
from fakels.rpcs import RPCS

Case = dict[str, Any]

_NONEMPTY = unicode_text(min_size=1, max_size=8)
WIRE_TYPE_NAMES = {wb.VARINT: "varint", wb.LEN: "len", wb.FIXED32: "fixed32", wb.FIXED64: "fixed64"}


@st.composite
def metadata_values(draw: st.DrawFn) -> dict[str, Any]:
    version = draw(st.sampled_from(["2.0.67", "1.48.2", draw(_NONEMPTY)]))
    values: dict[str, Any] = {
        "ide_name": "windsurf",
        "extension_version": version,
        "api_key": draw(_NONEMPTY),
        "locale": "en",
        "os": draw(st.sampled_from(["linux", "macos", "windows"])),
        "ide_version": version,
        "hardware": draw(st.sampled_from(["x86_64", "arm64"])),
        "request_id": draw(st.integers(min_value=1, max_value=2**48 - 1)),
        "session_id": draw(st.uuids()).hex,
        "extension_name": "windsurf",
    }
    if draw(st.booleans()):
        values["user_jwt"] = draw(_NONEMPTY)
    return values


@st.composite
def send_requests(draw: st.DrawFn) -> model.Request:
    cascade_id, prompt = draw(_NONEMPTY), draw(unicode_text(min_size=1, max_size=40))
    meta = draw(metadata_values())
    mode = draw(st.sampled_from(sorted(model.PLANNER_MODES)))
    uid = draw(st.sampled_from(["claude-sonnet-4-6", "MODEL_PRIVATE_2", "claude-opus-4-8-high"]))
    images = draw(
        st.lists(
            st.tuples(st.binary(min_size=1, max_size=64), st.sampled_from(["image/png", "image/jpeg"])), max_size=3
        )
    )
    return model.send_request(cascade_id, prompt, meta, mode, uid, images)


@st.composite
def offset_requests(draw: st.DrawFn, offset_name: str) -> model.Request:
    cascade_id, offset = draw(_NONEMPTY), draw(st.integers(min_value=0, max_value=2**32 - 1))
    return model.offset_request(cascade_id, offset, offset_name)


def _with_metadata(extra: tuple[tuple[int, str, Any, Any], ...]) -> st.SearchStrategy[model.Request]:
    return metadata_values().map(lambda meta: model.with_metadata(meta, extra))


REQUESTS: dict[str, st.SearchStrategy[model.Request]] = {
    "SendUserCascadeMessage": send_requests(),
    "GetCascadeTrajectorySteps": offset_requests("step_offset"),
    "GetCascadeTrajectoryGeneratorMetadata": offset_requests("generator_metadata_offset"),
    "StartCascade": metadata_values().map(model.start_cascade),
    "InitializeCascadePanelState": _with_metadata(((3, "workspace_trusted", True, True),)),
    "UpdateWorkspaceTrust": _with_metadata(((2, "workspace_trusted", True, True),)),
    "Heartbeat": _with_metadata(()),
    "GetUserStatus": _with_metadata(()),
    "GetCascadeTrajectory": _NONEMPTY.map(lambda c: model.single_string("cascade_id", c)),
    "AddTrackedWorkspace": _NONEMPTY.map(lambda w: model.single_string("workspace", w)),
}


def methods(target: Target) -> list[str]:
    """The methods of the tables that the target's decoder declares (all when it declares none)."""
    declared = target.capabilities("ls.decode_request").get("methods")
    chosen = sorted(REQUESTS if declared is None else set(REQUESTS) & set(declared))
    if not chosen:
        raise ValueError(f"{target.description} decodes none of the methods the WIRE tables cover")
    return chosen


def encoded_requests(target: Target) -> st.SearchStrategy[Case]:
    return st.sampled_from(methods(target)).flatmap(
        lambda method: REQUESTS[method].map(
            lambda pe: {"method": method, "raw_hex": wb.message(pe[0]).hex(), "expected": pe[1]}
        )
    )


def _undeclared_number(declared: set[int]) -> st.SearchStrategy[int]:
    numbers = st.one_of(st.integers(min_value=1, max_value=300), st.integers(min_value=20000, max_value=2**29 - 1))
    return numbers.filter(lambda n: n not in declared and n not in model.RESERVED_NUMBERS)


_VALUES: dict[int, st.SearchStrategy[Any]] = {
    wb.VARINT: st.integers(min_value=0, max_value=2**63 - 1),
    wb.LEN: st.binary(max_size=32),
    wb.FIXED32: st.integers(min_value=0, max_value=2**32 - 1).map(wb.Fixed32),
    wb.FIXED64: st.integers(min_value=0, max_value=2**64 - 1).map(wb.Fixed64),
}


@st.composite
def _with_unknown_field(draw: st.DrawFn, target: Target) -> Case:
    method = draw(st.sampled_from(methods(target)))
    pairs, _ = draw(REQUESTS[method])
    declared = {f.number for f in RPCS[method].request_type.DESCRIPTOR.fields}
    number = draw(_undeclared_number(declared))
    wire_type = draw(st.sampled_from(sorted(_VALUES)))
    position = draw(st.integers(min_value=0, max_value=len(pairs)))
    pairs.insert(position, (number, draw(_VALUES[wire_type])))
    expected = [{"path": "<root>", "number": number, "wire_type": WIRE_TYPE_NAMES[wire_type]}]
    return {"method": method, "raw_hex": wb.message(pairs).hex(), "expected_unknown": expected}


@st.composite
def _mistyped_planner_field(draw: st.DrawFn) -> Case:
    pairs, expected = model.with_mistyped_planner_field(draw(send_requests())[0])
    return {"method": "SendUserCascadeMessage", "raw_hex": wb.message(pairs).hex(), "expected_unknown": [expected]}


def unknown_field_cases(target: Target) -> st.SearchStrategy[Case]:
    strategies = [_with_unknown_field(target)]
    if "SendUserCascadeMessage" in methods(target):
        strategies.append(_mistyped_planner_field())
    return st.one_of(strategies)


@st.composite
def garbage_bodies(draw: st.DrawFn) -> bytes:
    body: bytes = draw(
        st.one_of(
            st.binary(max_size=64),
            st.just(b"\x0a\xff\xff\xff\xff\x0f"),  # LEN prefix far past the end
            st.just(b"\x08\x80\x80\x80"),  # truncated varint
            st.binary(min_size=1, max_size=8).map(lambda b: bytes([0x0E | 0x06]) + b),  # wire type 6
            st.just(b"\x0a\x02\xc3\x28"),  # invalid UTF-8 in a string field
            st.integers(min_value=1, max_value=64).map(lambda depth: b"\x0a\x7f" * depth),
        )
    )
    return body


@st.composite
def garbage_calls(draw: st.DrawFn, target: Target) -> Case:
    names = [*sorted(RPCS), "NoSuchMethod"]
    calls = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "method": st.sampled_from(names),
                    "raw_hex": garbage_bodies().map(bytes.hex),
                    "csrf": st.sampled_from(["right", "right", "right", "wrong", "missing"]),
                }
            ),
            min_size=1,
            max_size=6,
        )
    )
    return {"calls": calls}


#: The reads of one poll of a turn, in the order a client makes them: generator metadata, steps (at
#: offset 0 and at the case's offsets) and the run status. Real clients differ in that order.
POLL_READS = ("metadata", "steps", "status")


@st.composite
def _play(draw: st.DrawFn, chunks: int) -> dict[str, Any]:
    """How the client polls one turn: its reads in some order every poll and, half the time, no run
    status until two polls after the last chunk shows (a client that reads metadata and steps until
    they stop growing): its first status read then meets a complete turn, which must still say RUNNING."""
    order = draw(st.permutations(POLL_READS))
    return {"order": list(order), "status_from": draw(st.sampled_from([0, chunks + 2]))}


@st.composite
def stateful_cases(draw: st.DrawFn, target: Target) -> Case:
    """Scripted turns (each chunk a second apart on the manual clock) and how the client polls each
    (:func:`_play`); the cascade's end: none, expiring after its last turn (``expire_after``), or a
    last Send the scenario answers with the ``expired`` fault, which ends the cascade there."""
    chunk = st.one_of(
        unicode_text(min_size=1, max_size=6).map(lambda t: {"text": t}),
        unicode_text(min_size=1, max_size=6).map(lambda t: {"thinking": t}),
        st.tuples(st.integers(0, 99), unicode_text(min_size=1, max_size=6)).map(
            lambda p: {"tool_call": {"id": f"call_{p[0]}", "name": "lookup", "arguments_json": json.dumps({"q": p[1]})}}
        ),
    ).map(lambda c: {**c, "delay_s": 1.0})
    usage = st.one_of(
        st.none(),
        st.builds(lambda i, o: {"input_tokens": i, "output_tokens": o}, st.integers(0, 9999), st.integers(0, 999)),
    )
    turn = st.fixed_dictionaries(
        {"chunks": st.lists(chunk, min_size=1, max_size=5), "records": st.lists(usage, max_size=3)}
    )
    turns: list[dict[str, Any]] = draw(st.lists(turn, min_size=1, max_size=3))
    plays = [draw(_play(len(t["chunks"]))) for t in turns]
    ending = draw(st.sampled_from(["none", "expire_after", "expired_fault"]))
    if ending == "expire_after":
        turns[-1] = {**turns[-1], "expire_after": True}
    elif ending == "expired_fault":
        turns.append({"chunks": [], "records": [], "fault": {"kind": "expired"}})
    offsets = draw(st.lists(st.integers(0, 12), min_size=1, max_size=4))
    return {"scenario": {"turns": turns}, "offsets": offsets, "plays": plays}

"""WIRE: the language-server side of the protocol (checked on fakels, or any LS implementation).

WIRE-1 and WIRE-2 need ``ls.decode_request``: requests are hand-assembled from wire.md's field
tables with :mod:`conformance.wire_bytes` (not with the kit's generated classes), together with
the field-named JSON a decoder must produce. WIRE-3 and WIRE-4 need a served LS
(``ls.serve``/``ls.journal``/``ls.advance_clock``) and talk to it over real gRPC.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import grpc
from hypothesis import strategies as st

from conformance import wire_bytes as wb
from conformance._ls_client import SERVICE_PREFIX, LsClient
from conformance.properties import Case, Evidence, invariant_property
from conformance.strategies import unicode_text
from conformance.targets import Target
from fakels.rpcs import RPCS

# ---------------------------------------------------------------------------- requests from the tables

_NONEMPTY = unicode_text(min_size=1, max_size=8)
_PLANNER_MODES = {1: "CONVERSATIONAL_PLANNER_MODE_DEFAULT", 3: "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"}

Pairs = list[tuple[int, Any]]


@st.composite
def _metadata(draw: st.DrawFn) -> tuple[Pairs, dict[str, Any]]:
    """codeium_common_pb.Metadata as the client builds it (wire.md section 2.1)."""
    version = draw(st.sampled_from(["2.0.67", "1.48.2", draw(_NONEMPTY)]))
    values: list[tuple[int, str, Any]] = [
        (1, "ide_name", "windsurf"),
        (2, "extension_version", version),
        (3, "api_key", draw(_NONEMPTY)),
        (4, "locale", "en"),
        (5, "os", draw(st.sampled_from(["linux", "macos", "windows"]))),
        (7, "ide_version", version),
        (8, "hardware", draw(st.sampled_from(["x86_64", "arm64"]))),
        (9, "request_id", draw(st.integers(min_value=1, max_value=2**48 - 1))),
        (10, "session_id", draw(st.uuids()).hex),
        (12, "extension_name", "windsurf"),
    ]
    if draw(st.booleans()):
        values.append((21, "user_jwt", draw(_NONEMPTY)))
    return [(n, v) for n, _, v in values], {name: v for _, name, v in values}


@st.composite
def _send(draw: st.DrawFn) -> tuple[Pairs, dict[str, Any]]:
    """SendUserCascadeMessageRequest, fields 1, 2, 3, 5, 6 in the client's order (section 2.3)."""
    cascade_id, prompt = draw(_NONEMPTY), draw(unicode_text(min_size=1, max_size=40))
    meta_pairs, meta = draw(_metadata())
    mode = draw(st.sampled_from(sorted(_PLANNER_MODES)))
    uid = draw(st.sampled_from(["claude-sonnet-4-6", "MODEL_PRIVATE_2", "claude-opus-4-8-high"]))
    planner_pairs: Pairs = [(2, [(4, mode)]), (35, uid), (34, uid), (6, 32768)]
    images = draw(
        st.lists(
            st.tuples(st.binary(min_size=1, max_size=64), st.sampled_from(["image/png", "image/jpeg"])), max_size=3
        )
    )
    pairs: Pairs = [(1, cascade_id), (2, [(1, prompt)]), (3, meta_pairs), (5, [(1, planner_pairs), (7, [(1, 1)])])]
    pairs += [(6, [(1, base64.b64encode(data).decode()), (2, mime)]) for data, mime in images]
    expected: dict[str, Any] = {
        "cascade_id": cascade_id,
        "items": [{"text": prompt}],
        "metadata": meta,
        "cascade_config": {
            "planner_config": {
                "conversational": {"planner_mode": _PLANNER_MODES[mode]},
                "requested_model_uid": uid,
                "plan_model_uid": uid,
                "max_output_tokens": 32768,
            },
            "brain_config": {"enabled": True},
        },
    }
    if images:
        expected["images"] = [{"base64_data": base64.b64encode(d).decode(), "mime_type": m} for d, m in images]
    return pairs, expected


@st.composite
def _offset_request(draw: st.DrawFn, offset_name: str) -> tuple[Pairs, dict[str, Any]]:
    """Steps / generator-metadata requests: field 2 is omitted when the offset is 0."""
    cascade_id, offset = draw(_NONEMPTY), draw(st.integers(min_value=0, max_value=2**32 - 1))
    pairs: Pairs = [(1, cascade_id)] + ([(2, offset)] if offset else [])
    return pairs, {"cascade_id": cascade_id, **({offset_name: offset} if offset else {})}


@st.composite
def _with_metadata(draw: st.DrawFn, extra: tuple[tuple[int, str, Any], ...]) -> tuple[Pairs, dict[str, Any]]:
    meta_pairs, meta = draw(_metadata())
    return [(1, meta_pairs), *[(n, v) for n, _, v in extra]], {"metadata": meta, **{name: v for _, name, v in extra}}


_REQUESTS: dict[str, st.SearchStrategy[tuple[Pairs, dict[str, Any]]]] = {
    "SendUserCascadeMessage": _send(),
    "GetCascadeTrajectorySteps": _offset_request("step_offset"),
    "GetCascadeTrajectoryGeneratorMetadata": _offset_request("generator_metadata_offset"),
    "StartCascade": _with_metadata(
        (
            (4, "source", "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT"),
            (5, "trajectory_type", "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE"),
        )
    ).map(lambda pe: ([(n, 1) if n in (4, 5) else (n, v) for n, v in pe[0]], pe[1])),
    "InitializeCascadePanelState": _with_metadata(((3, "workspace_trusted", True),)),
    "UpdateWorkspaceTrust": _with_metadata(((2, "workspace_trusted", True),)),
    "Heartbeat": _with_metadata(()),
    "GetUserStatus": _with_metadata(()),
    "GetCascadeTrajectory": _NONEMPTY.map(lambda c: ([(1, c)], {"cascade_id": c})),
    "AddTrackedWorkspace": _NONEMPTY.map(lambda w: ([(1, w)], {"workspace": w})),
}


def _methods(target: Target) -> list[str]:
    declared = target.capabilities("ls.decode_request").get("methods")
    methods = sorted(_REQUESTS if declared is None else set(_REQUESTS) & set(declared))
    if not methods:
        raise ValueError(f"{target.description} decodes none of the methods the WIRE tables cover")
    return methods


def _encoded_requests(target: Target) -> st.SearchStrategy[Case]:
    return st.sampled_from(_methods(target)).flatmap(
        lambda method: _REQUESTS[method].map(
            lambda pe: {"method": method, "raw_hex": wb.message(pe[0]).hex(), "expected": pe[1]}
        )
    )


def _decode(target: Target, method: str, raw: bytes, evidence: Evidence) -> dict[str, Any]:
    result = target.call("ls.decode_request", method=method, raw_b64=base64.b64encode(raw).decode("ascii"))
    evidence.add("decoded", result)
    return result


@invariant_property("WIRE-1", needs=("ls.decode_request",), cases=_encoded_requests)
def decodes_field_for_field(target: Target, case: Case, evidence: Evidence) -> None:
    result = _decode(target, case["method"], bytes.fromhex(case["raw_hex"]), evidence)
    assert "rejected" not in result, f"{case['method']}: a valid client encoding was rejected: {result.get('rejected')}"
    assert result["fields"] == case["expected"], (
        f"{case['method']}: decoded fields differ from wire.md's tables\n"
        f"  expected: {case['expected']}\n  decoded:  {result['fields']}"
    )
    assert result["unknown"] == [], f"{case['method']}: declared fields reported as unknown: {result['unknown']}"


# ---------------------------------------------------------------------------- unknown fields

_WIRE_TYPE_NAMES = {wb.VARINT: "varint", wb.LEN: "len", wb.FIXED32: "fixed32", wb.FIXED64: "fixed64"}


def _undeclared_number(declared: set[int]) -> st.SearchStrategy[int]:
    numbers = st.one_of(st.integers(min_value=1, max_value=300), st.integers(min_value=20000, max_value=2**29 - 1))
    return numbers.filter(lambda n: n not in declared and not 19000 <= n <= 19999)


_VALUES: dict[int, st.SearchStrategy[Any]] = {
    wb.VARINT: st.integers(min_value=0, max_value=2**63 - 1),
    wb.LEN: st.binary(max_size=32),
    wb.FIXED32: st.integers(min_value=0, max_value=2**32 - 1).map(wb.Fixed32),
    wb.FIXED64: st.integers(min_value=0, max_value=2**64 - 1).map(wb.Fixed64),
}


@st.composite
def _with_unknown_field(draw: st.DrawFn, target: Target) -> Case:
    method = draw(st.sampled_from(_methods(target)))
    pairs, _ = draw(_REQUESTS[method])
    declared = {f.number for f in RPCS[method].request_type.DESCRIPTOR.fields}
    number = draw(_undeclared_number(declared))
    wire_type = draw(st.sampled_from(sorted(_VALUES)))
    position = draw(st.integers(min_value=0, max_value=len(pairs)))
    pairs.insert(position, (number, draw(_VALUES[wire_type])))
    expected = [{"path": "<root>", "number": number, "wire_type": _WIRE_TYPE_NAMES[wire_type]}]
    return {"method": method, "raw_hex": wb.message(pairs).hex(), "expected_unknown": expected}


def _unknown_cases(target: Target) -> st.SearchStrategy[Case]:
    strategies = [_with_unknown_field(target)]
    if "SendUserCascadeMessage" in _methods(target):
        strategies.append(_mistyped_planner_field())
    return st.one_of(strategies)


@st.composite
def _mistyped_planner_field(draw: st.DrawFn) -> Case:
    """Real clients write a LEN value {1: 1, 2: ""} at planner field 11, an optional bool in the LS schema."""
    pairs, _ = draw(_send())
    planner = dict(pairs)[5][0][1]
    planner.append((11, [(1, 1), (2, "")]))
    return {
        "method": "SendUserCascadeMessage",
        "raw_hex": wb.message(pairs).hex(),
        "expected_unknown": [{"path": "cascade_config.planner_config", "number": 11, "wire_type": "len"}],
    }


@invariant_property("WIRE-2", needs=("ls.decode_request",), cases=_unknown_cases)
def unknown_fields_survive(target: Target, case: Case, evidence: Evidence) -> None:
    result = _decode(target, case["method"], bytes.fromhex(case["raw_hex"]), evidence)
    assert "rejected" not in result, f"{case['method']}: a request with an unknown field was rejected: {result}"
    reported = [{k: u[k] for k in ("path", "number", "wire_type")} for u in result["unknown"]]
    assert reported == case["expected_unknown"], (
        f"{case['method']}: unknown fields not reported as sent\n"
        f"  sent:     {case['expected_unknown']}\n  reported: {reported}"
    )


# ---------------------------------------------------------------------------- garbage in, clean errors out

_CLEAN_REJECTIONS = {
    "INVALID_ARGUMENT",
    "UNIMPLEMENTED",
    "UNAUTHENTICATED",
    "NOT_FOUND",
    "FAILED_PRECONDITION",
    "RESOURCE_EXHAUSTED",
}


@st.composite
def _garbage_body(draw: st.DrawFn) -> bytes:
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
def _garbage_calls(draw: st.DrawFn, target: Target) -> Case:
    names = [*sorted(RPCS), "NoSuchMethod"]
    calls = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "method": st.sampled_from(names),
                    "raw_hex": _garbage_body().map(bytes.hex),
                    "csrf": st.sampled_from(["right", "right", "right", "wrong", "missing"]),
                }
            ),
            min_size=1,
            max_size=6,
        )
    )
    return {"calls": calls}


@invariant_property("WIRE-3", needs=("ls.serve", "ls.journal", "ls.stop"), cases=_garbage_calls, max_examples=25)
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
            assert outcome.code == "OK" or outcome.code in _CLEAN_REJECTIONS, (
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


# ---------------------------------------------------------------------------- stateful semantics

_EXPIRED = [
    r"not_found.*(cascade|trajectory)",
    r"(cascade|trajectory).*not[ _-]?found",
    r"expired.*cascade",
    r"unknown.*cascade",
]
_RUNNING, _IDLE = 2, 1


@st.composite
def _stateful_cases(draw: st.DrawFn, target: Target) -> Case:
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
    if draw(st.booleans()):
        turns[-1] = {**turns[-1], "expire_after": True}
    return {"scenario": {"turns": turns}, "offsets": draw(st.lists(st.integers(0, 12), min_size=1, max_size=4))}


@invariant_property(
    "WIRE-4", needs=("ls.serve", "ls.journal", "ls.advance_clock", "ls.stop"), cases=_stateful_cases, max_examples=20
)
def stateful_semantics(target: Target, case: Case, evidence: Evidence) -> None:
    served = target.call("ls.serve", scenario=case["scenario"], manual_clock=True)
    try:
        with LsClient(served["address"], served["csrf_token"]) as client:
            cascade = client.start()
            records_expected = 0
            for index, turn in enumerate(case["scenario"]["turns"]):
                client.send(cascade, f"turn {index}")
                _play_turn(client, target, cascade, turn, case["offsets"], evidence)
                records_expected += len(turn["records"])
                _check_records(client, cascade, records_expected, case["offsets"])
            if case["scenario"]["turns"][-1].get("expire_after"):
                # The finished turn stayed readable; resuming the expired cascade is refused, and then
                # every call on it is.
                for call in (lambda: client.send(cascade, "resume"), lambda: client.steps(cascade, 0)):
                    with_error = _expect_error(call)
                    evidence.add("after expiry", with_error)
                    assert with_error[0] == "NOT_FOUND", f"an expired cascade answered {with_error}"
                    assert any(re.search(p, with_error[1], re.IGNORECASE) for p in _EXPIRED), (
                        f"the expiry text {with_error[1]!r} is not one real clients classify as an expired cascade"
                    )
    finally:
        target.call("ls.stop")


def _play_turn(
    client: LsClient, target: Target, cascade: str, turn: dict[str, Any], offsets: list[int], evidence: Evidence
) -> None:
    statuses: list[int] = []
    seen_text: dict[int, tuple[str, str]] = {}
    for _ in range(len(turn["chunks"]) * 3 + 6):
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
        statuses.append(client.status(cascade))
        evidence.add("statuses", statuses)
        if statuses[-1] == _IDLE and statuses.count(_IDLE) >= 2:
            break
        target.call("ls.advance_clock", seconds=1.0)
    assert statuses[:1] == [_RUNNING], f"the first status poll after Send was {statuses[:1]}, not RUNNING"
    assert _IDLE in statuses, f"the turn never went IDLE: {statuses}"
    first_idle = statuses.index(_IDLE)
    assert all(s == _IDLE for s in statuses[first_idle:]), f"RUNNING after IDLE within one turn: {statuses}"
    final = "".join(c.get("text", "") for c in turn["chunks"])
    texts = [s.planner_response.response for s in client.steps(cascade, 0) if s.HasField("planner_response")]
    assert final == "" or final in texts, (
        f"at IDLE the planner text is {texts[-1:]!r}, the scripted turn says {final!r}"
    )


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

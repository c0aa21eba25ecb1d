"""WIRE-2: unknown fields survive decoding and the journal reports them (protocol drift).

Bytes are hand-assembled with :mod:`conformance.wire_bytes`. Cases: the planner's mistyped field 11
(wire.md 6.2), future field numbers at the top level and inside nested messages, the reserved
field 2 of InitializeCascadePanelStateRequest, and a Hypothesis property that inserts an
arbitrary undeclared field anywhere at the top level of a request.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from conformance import wire_bytes as wb
from fakels.decoder import UnknownField, decode
from fakels.journal import read_jsonl
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import RPCS
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN

pytestmark = pytest.mark.invariant("WIRE-2")

CSRF = [("x-codeium-csrf-token", CSRF_TOKEN)]
METADATA: wb.Fields = [(1, "windsurf"), (2, "2.0.67"), (3, "sk-ws-01-key"), (9, 123_456_789), (10, "session-1")]
METADATA_DICT: dict[str, Any] = {
    "ide_name": "windsurf",
    "extension_version": "2.0.67",
    "api_key": "sk-ws-01-key",
    "request_id": 123_456_789,
    "session_id": "session-1",
}
PLANNER_HEAD: wb.Fields = [
    (2, [(4, 3), (10, [(1, 1), (2, "No tools are available.")])]),
    (35, "claude-sonnet-4-6"),
    (34, "claude-sonnet-4-6"),
    (6, 32768),
]
PLANNER_DICT: dict[str, Any] = {
    "conversational": {
        "planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL",
        "tool_calling_section": {"mode": "SECTION_OVERRIDE_MODE_OVERRIDE", "content": "No tools are available."},
    },
    "max_output_tokens": 32768,
    "plan_model_uid": "claude-sonnet-4-6",
    "requested_model_uid": "claude-sonnet-4-6",
}
# The client's {1: 1, 2: ""} at planner field 11; with and without the empty string on the wire.
MISTYPED_11 = [pytest.param(b"\x08\x01\x12\x00", id="mode+empty-content"), pytest.param(b"\x08\x01", id="mode-only")]


def _send(cascade_id: str, planner: wb.Fields, *, metadata: wb.Fields = METADATA, tail: wb.Fields = ()) -> bytes:
    return wb.message([(1, cascade_id), (2, [(1, "hello")]), (3, metadata), (5, [(1, planner), (7, [(1, 1)])]), *tail])


def _send_dict(cascade_id: str) -> dict[str, Any]:
    return {
        "cascade_id": cascade_id,
        "items": [{"text": "hello"}],
        "metadata": METADATA_DICT,
        "cascade_config": {"planner_config": PLANNER_DICT, "brain_config": {"enabled": True}},
    }


def _raw_call(fake: FakeLSThread, method: str, raw: bytes) -> bytes:
    with grpc.insecure_channel(fake.address) as channel:
        response: bytes = channel.unary_unary(RPCS[method].path)(raw, metadata=CSRF, timeout=10)
    return response


def _start(fake: FakeLSThread) -> str:
    return ls.StartCascadeResponse.FromString(_raw_call(fake, "StartCascade", wb.message([(1, METADATA)]))).cascade_id


def _reparse_keeps_everything(message_type: type[Message], raw: bytes) -> bytes:
    """Re-serialize the decoded message and check that nothing was lost; returns the new bytes."""
    first = decode(message_type, raw)
    again = first.message.SerializeToString()
    second = decode(message_type, again)
    assert second.fields == first.fields
    assert second.unknown == first.unknown
    assert len(again) == len(raw)
    return again


# ---------------------------------------------------------------- the mistyped planner field 11


@pytest.mark.parametrize("payload", MISTYPED_11)
def test_mistyped_planner_field_11_is_kept_and_reported(payload: bytes) -> None:
    raw = _send("c-1", [*PLANNER_HEAD, (11, payload)])
    decoded = decode(ls.SendUserCascadeMessageRequest, raw)
    assert decoded.fields == _send_dict("c-1")  # everything known still decodes
    assert decoded.unknown == (UnknownField("cascade_config.planner_config", 11, wb.LEN, {"hex": payload.hex()}),)
    assert decoded.unknown[0].to_json() == {
        "path": "cascade_config.planner_config",
        "number": 11,
        "wire_type": "len",
        "value": {"hex": payload.hex()},
    }
    assert isinstance(decoded.message, ls.SendUserCascadeMessageRequest)
    # The bool is not made up from the LEN bytes.
    assert not decoded.message.cascade_config.planner_config.HasField("allow_pending_steps")
    # Nothing is lost: the unknown field's bytes are re-emitted verbatim.
    again = _reparse_keeps_everything(ls.SendUserCascadeMessageRequest, raw)
    assert wb.field(11, payload) in again


@pytest.mark.parametrize("payload", MISTYPED_11)
def test_mistyped_planner_field_11_is_reported_in_the_journal(fake_ls: FakeLSThread, payload: bytes) -> None:
    cascade_id = _start(fake_ls)
    raw = _send(cascade_id, [*PLANNER_HEAD, (11, payload)])
    assert _raw_call(fake_ls, "SendUserCascadeMessage", raw) == b""  # tolerated, as the real LS does

    entry = fake_ls.journal.last("SendUserCascadeMessage")
    assert (entry.status, entry.transport, entry.raw) == ("OK", "grpc", raw)
    assert entry.request == _send_dict(cascade_id)
    assert entry.unknown_fields == (UnknownField("cascade_config.planner_config", 11, wb.LEN, {"hex": payload.hex()}),)
    assert entry.to_json()["unknown_fields"] == [
        {"path": "cascade_config.planner_config", "number": 11, "wire_type": "len", "value": {"hex": payload.hex()}}
    ]


def test_the_jsonl_journal_carries_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with FakeLSThread(csrf_token=CSRF_TOKEN, journal_path=path) as fake:
        cascade_id = _start(fake)
        _raw_call(fake, "SendUserCascadeMessage", _send(cascade_id, [*PLANNER_HEAD, (11, b"\x08\x01\x12\x00")]))
    lines = read_jsonl(path)
    assert [line["method"] for line in lines] == ["StartCascade", "SendUserCascadeMessage"]
    assert lines[0]["unknown_fields"] == []
    assert lines[1]["unknown_fields"] == [
        {"path": "cascade_config.planner_config", "number": 11, "wire_type": "len", "value": {"hex": "08011200"}}
    ]


# ---------------------------------------------------------------- future fields


FUTURE_METADATA: wb.Fields = [*METADATA, (99, "new-metadata-field")]
FUTURE_UNKNOWN = [
    UnknownField("<root>", 200, wb.VARINT, 1_000_000_007),
    UnknownField("metadata", 99, wb.LEN, {"hex": b"new-metadata-field".hex()}),
]


def _sorted(unknown: Iterable[UnknownField]) -> list[UnknownField]:
    """Unknown fields in a stable order (their values are dicts, so they do not hash)."""
    return sorted(unknown, key=lambda u: (u.path, u.number))


def test_future_fields_at_the_top_and_inside_metadata() -> None:
    canonical_planner = sorted(PLANNER_HEAD, key=lambda pair: pair[0])  # the client writes 2, 35, 34, 6
    raw = _send("c-2", canonical_planner, metadata=FUTURE_METADATA, tail=[(200, 1_000_000_007)])
    decoded = decode(ls.SendUserCascadeMessageRequest, raw)
    assert decoded.fields == _send_dict("c-2")
    assert _sorted(decoded.unknown) == FUTURE_UNKNOWN
    # Each unknown field sits last in its message and known fields are in canonical order, so
    # re-serializing gives back the very same bytes.
    assert decoded.message.SerializeToString() == raw


def test_future_fields_are_reported_in_the_journal(fake_ls: FakeLSThread) -> None:
    cascade_id = _start(fake_ls)
    raw = _send(cascade_id, PLANNER_HEAD, metadata=FUTURE_METADATA, tail=[(200, 1_000_000_007)])
    _raw_call(fake_ls, "SendUserCascadeMessage", raw)
    entry = fake_ls.journal.last("SendUserCascadeMessage")
    assert entry.status == "OK"
    assert entry.request == _send_dict(cascade_id)
    assert _sorted(entry.unknown_fields) == FUTURE_UNKNOWN

    _raw_call(fake_ls, "Heartbeat", wb.message([(1, FUTURE_METADATA), (7, b"\x01\x02")]))
    heartbeat = fake_ls.journal.last("Heartbeat")
    assert heartbeat.request == {"metadata": METADATA_DICT}
    assert _sorted(heartbeat.unknown_fields) == [
        UnknownField("<root>", 7, wb.LEN, {"hex": "0102"}),
        UnknownField("metadata", 99, wb.LEN, {"hex": b"new-metadata-field".hex()}),
    ]


def test_unknown_fields_in_repeated_elements_name_the_index() -> None:
    steps: wb.Fields = [
        (9, [(1, 15), (4, 3), (20, [(1, "a")])]),
        (9, [(1, 28), (4, 3), (28, [(23, "ls"), (77, 5)]), (300, "x")]),
    ]
    raw = wb.message([(1, "c-3"), (6, [(1, "iVBO"), (2, "image/png"), (9, wb.Fixed32(3))]), *steps])
    decoded = decode(ls.SendUserCascadeMessageRequest, raw)
    assert _sorted(decoded.unknown) == [
        UnknownField("additional_steps[1]", 300, wb.LEN, {"hex": "78"}),
        UnknownField("additional_steps[1].run_command", 77, wb.VARINT, 5),
        UnknownField("images[0]", 9, wb.FIXED32, 3),
    ]
    assert decoded.fields["additional_steps"][1] == {
        "type": "CORTEX_STEP_TYPE_COMMAND_STATUS",
        "status": "CORTEX_STEP_STATUS_DONE",
        "run_command": {"command_line": "ls"},
    }
    _reparse_keeps_everything(ls.SendUserCascadeMessageRequest, raw)


def test_reserved_panel_field_2_is_reported() -> None:
    # An older client comment writes "ExtensionPanelTab=4" at field 2, which [P] reserves (wire.md 2.9).
    raw = wb.message([(1, METADATA), (2, 4), (3, True)])
    decoded = decode(ls.InitializeCascadePanelStateRequest, raw)
    assert decoded.fields == {"metadata": METADATA_DICT, "workspace_trusted": True}
    assert decoded.unknown == (UnknownField("<root>", 2, wb.VARINT, 4),)
    _reparse_keeps_everything(ls.InitializeCascadePanelStateRequest, raw)


# ---------------------------------------------------------------- no drift, no report


def test_clean_requests_report_no_unknown_fields(fake_ls: FakeLSThread) -> None:
    assert decode(ls.SendUserCascadeMessageRequest, _send("c-4", PLANNER_HEAD)).unknown == ()
    cascade_id = _start(fake_ls)
    _raw_call(fake_ls, "SendUserCascadeMessage", _send(cascade_id, PLANNER_HEAD))
    _raw_call(fake_ls, "GetCascadeTrajectorySteps", wb.message([(1, cascade_id), (2, 0)]))  # explicit 0 is fine
    for entry in fake_ls.journal:
        assert entry.unknown_fields == (), entry.method
        assert entry.to_json()["unknown_fields"] == []


# ---------------------------------------------------------------- property: any undeclared field, anywhere

BASES: dict[str, tuple[type[Message], wb.Fields]] = {
    "send": (ls.SendUserCascadeMessageRequest, [(1, "c-5"), (2, [(1, "hi")]), (3, METADATA), (5, [(1, PLANNER_HEAD)])]),
    "start": (ls.StartCascadeRequest, [(1, METADATA), (4, 1), (5, 1)]),
    "steps": (ls.GetCascadeTrajectoryStepsRequest, [(1, "c-5"), (2, 3)]),
    "panel": (ls.InitializeCascadePanelStateRequest, [(1, METADATA), (3, True)]),
    "metadata": (common.Metadata, METADATA),
    "step": (cortex.CortexTrajectoryStep, [(1, 15), (4, 3), (20, [(1, "a")])]),
}

_MAX_FIELD = (1 << 29) - 1
WireValue = tuple[int, "int | bytes | wb.Fixed32 | wb.Fixed64"]
wire_values: st.SearchStrategy[WireValue] = st.one_of(
    st.tuples(st.just(wb.VARINT), st.integers(0, (1 << 64) - 1)),
    st.tuples(st.just(wb.LEN), st.binary(max_size=64)),
    st.tuples(st.just(wb.FIXED32), st.builds(wb.Fixed32, st.integers(0, (1 << 32) - 1))),
    st.tuples(st.just(wb.FIXED64), st.builds(wb.Fixed64, st.integers(0, (1 << 64) - 1))),
)


@st.composite
def undeclared_insertions(draw: st.DrawFn) -> tuple[str, int, WireValue, int]:
    name = draw(st.sampled_from(sorted(BASES)))
    message_type, base = BASES[name]
    declared = {f.number for f in message_type.DESCRIPTOR.fields}
    numbers = st.one_of(st.integers(1, 120), st.integers(1, _MAX_FIELD))
    number = draw(numbers.filter(lambda n: n not in declared))
    return name, number, draw(wire_values), draw(st.integers(0, len(base)))


def _expected_value(value: int | bytes | wb.Fixed32 | wb.Fixed64) -> Any:
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, wb.Fixed32 | wb.Fixed64):
        return value.bits
    return value


@given(undeclared_insertions())
def test_any_undeclared_top_level_field_is_reported(case: tuple[str, int, WireValue, int]) -> None:
    name, number, (wire_type, value), position = case
    message_type, base = BASES[name]
    raw = wb.message(base[:position]) + wb.field(number, value) + wb.message(base[position:])

    plain = decode(message_type, wb.message(base))
    decoded = decode(message_type, raw)

    assert decoded.fields == plain.fields  # known fields are untouched by the stranger
    assert decoded.unknown == (UnknownField("<root>", number, wire_type, _expected_value(value)),)
    # Nothing lost: known fields in canonical order, then the unknown field verbatim.
    assert decoded.message.SerializeToString() == plain.message.SerializeToString() + wb.field(number, value)


@given(st.sampled_from(["metadata", "cascade_config.planner_config", "items[0]"]), wire_values, st.data())
def test_any_undeclared_nested_field_is_reported_with_its_path(
    path: str, wire_value: WireValue, data: st.DataObject
) -> None:
    wire_type, value = wire_value
    nested: dict[str, tuple[type[Message], wb.Fields]] = {
        "metadata": (common.Metadata, METADATA),
        "cascade_config.planner_config": (cortex.CascadePlannerConfig, PLANNER_HEAD),
        "items[0]": (common.TextOrScopeItem, [(1, "hi")]),
    }
    inner_type, inner = nested[path]
    declared = {f.number for f in inner_type.DESCRIPTOR.fields}
    number = data.draw(st.integers(1, _MAX_FIELD).filter(lambda n: n not in declared), label="number")
    position = data.draw(st.integers(0, len(inner)), label="position")
    spliced = wb.message(inner[:position]) + wb.field(number, value) + wb.message(inner[position:])
    pieces: dict[str, bytes] = {
        "metadata": wb.message(METADATA),
        "cascade_config.planner_config": wb.message(PLANNER_HEAD),
        "items[0]": wb.message([(1, "hi")]),
    }
    pieces[path] = spliced
    config = wb.message([(1, pieces["cascade_config.planner_config"])])
    raw = wb.message([(1, "c-6"), (2, pieces["items[0]"]), (3, pieces["metadata"]), (5, config)])
    decoded = decode(ls.SendUserCascadeMessageRequest, raw)
    assert decoded.unknown == (UnknownField(path, number, wire_type, _expected_value(value)),)
    assert decoded.fields["metadata"] == METADATA_DICT
    assert decoded.fields["cascade_config"] == {"planner_config": PLANNER_DICT}
    assert decoded.fields["items"] == [{"text": "hi"}]
    _reparse_keeps_everything(ls.SendUserCascadeMessageRequest, raw)

"""Response overrides: a scenario turn replaces the call-th answer of a polling RPC with raw bytes
or an error status (a deliberately malformed response). What the client gets (bytes, status,
message), that only that one answer is replaced, and what the journal says about it."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.strategies.scenarios import response_overrides
from fakels.clock import ManualClock
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import SERVICE_NAME
from fakels.scenario import Chunk, ResponseOverride, Scenario, Turn
from fakels.server import FakeLSThread
from fakels.service import Reply
from tests.fakels.core_support import CoreCalls

STEPS = "GetCascadeTrajectorySteps"
STATUS = "GetCascadeTrajectory"
METADATA = "GetCascadeTrajectoryGeneratorMetadata"
POLLS = (STEPS, STATUS, METADATA)
NOTE = "malformed response sent on purpose"
GARBAGE = bytes.fromhex("ff00fe7f")

OVERRIDDEN = Scenario(
    turns=(
        Turn(
            chunks=(Chunk(text="hello"),),
            overrides=(
                # The steps override comes first: a poll of another RPC with index 1 must not take it.
                ResponseOverride(rpc=STEPS, call=1, payload_hex=GARBAGE.hex()),
                ResponseOverride(rpc=STATUS, call=0, error_code="UNAVAILABLE", error_message="try again later"),
                ResponseOverride(rpc=METADATA, call=0, error_code="DATA_LOSS"),
                ResponseOverride(rpc=METADATA, call=1),
            ),
        ),
    )
)


def _poll(lsc: CoreCalls, rpc: str, cascade_id: str) -> Reply:
    requests = {
        STEPS: ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id),
        STATUS: ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id),
        METADATA: ls.GetCascadeTrajectoryGeneratorMetadataRequest(cascade_id=cascade_id),
    }
    return lsc.call(rpc, requests[rpc])


@pytest.fixture
def played() -> Iterator[tuple[CoreCalls, str]]:
    with CoreCalls(OVERRIDDEN) as lsc:
        cascade_id = lsc.start()
        assert lsc.send(cascade_id, "go").ok
        yield lsc, cascade_id


def test_raw_payload_replaces_only_the_call_th_answer(played: tuple[CoreCalls, str]) -> None:
    lsc, cascade_id = played
    first, second, third = (_poll(lsc, STEPS, cascade_id) for _ in range(3))

    assert first.code == grpc.StatusCode.OK
    steps = ls.GetCascadeTrajectoryStepsResponse.FromString(first.payloads[0]).steps
    assert [s.type for s in steps] == [
        cortex.CortexStepType.CORTEX_STEP_TYPE_USER_INPUT,
        cortex.CortexStepType.CORTEX_STEP_TYPE_PLANNER_RESPONSE,
    ]
    assert (second.code, second.message, second.payloads) == (grpc.StatusCode.OK, "", (GARBAGE,))
    assert third.code == grpc.StatusCode.OK
    assert ls.GetCascadeTrajectoryStepsResponse.FromString(third.payloads[0]).steps[-1].planner_response.response == (
        "hello"
    )

    entries = lsc.journal.entries(STEPS)
    assert [e.notes for e in entries] == [(), (NOTE,), ()]
    malformed = entries[1]
    assert (malformed.status, malformed.error, malformed.response) == ("OK", "", None)
    assert malformed.request == {"cascade_id": cascade_id}
    assert malformed.raw == ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id).SerializeToString()
    assert (malformed.transport, malformed.method, malformed.path) == ("grpc", STEPS, f"/{SERVICE_NAME}/{STEPS}")
    assert entries[0].response is not None
    assert entries[2].response is not None


def test_error_override_with_its_message(played: tuple[CoreCalls, str]) -> None:
    lsc, cascade_id = played
    overridden, after = _poll(lsc, STATUS, cascade_id), _poll(lsc, STATUS, cascade_id)

    assert (overridden.code, overridden.message, overridden.payloads) == (
        grpc.StatusCode.UNAVAILABLE,
        "try again later",
        (),
    )
    assert after.code == grpc.StatusCode.OK
    answer = ls.GetCascadeTrajectoryResponse.FromString(after.payloads[0])
    assert answer.trajectory.cascade_id == cascade_id
    entry = lsc.journal.entries(STATUS)[0]
    assert (entry.status, entry.error, entry.notes) == ("UNAVAILABLE", "try again later", ())
    assert entry.request == {"cascade_id": cascade_id}


def test_error_override_without_message_and_empty_payload(played: tuple[CoreCalls, str]) -> None:
    lsc, cascade_id = played
    replies = [_poll(lsc, METADATA, cascade_id) for _ in range(3)]

    assert (replies[0].code, replies[0].message) == (grpc.StatusCode.DATA_LOSS, "fakels: scripted DATA_LOSS")
    # Neither payload_hex nor error_code: an OK answer with an empty body.
    assert (replies[1].code, replies[1].payloads) == (grpc.StatusCode.OK, (b"",))
    assert replies[2].code == grpc.StatusCode.OK
    assert [(e.status, e.notes) for e in lsc.journal.entries(METADATA)] == [
        ("DATA_LOSS", ()),
        ("OK", (NOTE,)),
        ("OK", ()),
    ]


def test_calls_are_counted_within_each_turn() -> None:
    override = ResponseOverride(rpc=STATUS, call=0, error_code="INTERNAL", error_message="scripted")
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="a"),), overrides=(override,)), Turn(overrides=(override,))))
    with CoreCalls(scenario) as lsc:
        cascade_id = lsc.start()
        # Before any Send there is no turn: nothing to override.
        assert _poll(lsc, STATUS, cascade_id).ok
        for prompt in ("one", "two"):
            assert lsc.send(cascade_id, prompt).ok
            assert [_poll(lsc, STATUS, cascade_id).code for _ in range(2)] == [
                grpc.StatusCode.INTERNAL,
                grpc.StatusCode.OK,
            ]


@given(
    overrides=st.lists(response_overrides(), max_size=3),
    polls=st.lists(st.sampled_from(POLLS), max_size=8),
)
def test_each_poll_gets_the_first_override_for_its_rpc_and_index(
    overrides: list[ResponseOverride], polls: list[str]
) -> None:
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="x"),), overrides=tuple(overrides)),))
    with CoreCalls(scenario) as lsc:
        cascade_id = lsc.start()
        assert lsc.send(cascade_id, "prompt").ok
        seen = dict.fromkeys(POLLS, 0)
        for rpc in polls:
            index = seen[rpc]
            seen[rpc] += 1
            reply = _poll(lsc, rpc, cascade_id)
            entry = lsc.journal.last(rpc)
            expected = next((o for o in overrides if o.rpc == rpc and o.call == index), None)
            if expected is None:
                assert reply.code == grpc.StatusCode.OK
                assert entry.notes == ()
                assert entry.response is not None
            elif expected.error_code is not None:
                message = expected.error_message or f"fakels: scripted {expected.error_code}"
                assert (reply.code.name, reply.message, reply.payloads) == (expected.error_code, message, ())
                assert (entry.status, entry.error, entry.notes) == (expected.error_code, message, ())
            else:
                assert (reply.code, reply.payloads) == (
                    grpc.StatusCode.OK,
                    (bytes.fromhex(expected.payload_hex or ""),),
                )
                assert (entry.status, entry.notes, entry.response) == ("OK", (NOTE,), None)


def test_the_grpc_client_receives_the_override_bytes_and_status() -> None:
    """The same overrides through the real gRPC transport: the raw body and the status on the wire."""
    with FakeLSThread(clock=ManualClock(), scenario=OVERRIDDEN) as fake, grpc.insecure_channel(fake.address) as chan:
        start = chan.unary_unary(f"/{SERVICE_NAME}/StartCascade")
        cascade_id = ls.StartCascadeResponse.FromString(start(ls.StartCascadeRequest().SerializeToString())).cascade_id
        send = chan.unary_unary(f"/{SERVICE_NAME}/SendUserCascadeMessage")
        send(ls.SendUserCascadeMessageRequest(cascade_id=cascade_id).SerializeToString())
        steps = chan.unary_unary(f"/{SERVICE_NAME}/{STEPS}")
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id).SerializeToString()
        assert steps(request, timeout=30) != GARBAGE
        assert steps(request, timeout=30) == GARBAGE
        status = chan.unary_unary(f"/{SERVICE_NAME}/{STATUS}")
        with pytest.raises(grpc.RpcError) as info:
            status(ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id).SerializeToString(), timeout=30)
        assert (info.value.code(), info.value.details()) == (
            grpc.StatusCode.UNAVAILABLE,
            "try again later",
        )

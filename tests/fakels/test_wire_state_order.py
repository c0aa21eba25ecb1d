"""WIRE-4 where scripted faults and the order of a client's reads meet (issue 44), over real gRPC:

- a Send the scenario answers with the ``expired`` fault expires the cascade: its polls and the next
  Send are refused with the expired text too (not only that Send);
- reading a turn's generator metadata does not end the turn: a client that reads metadata (and steps)
  before the run status, even once every chunk shows, still sees RUNNING before IDLE, and as many
  RUNNING answers as the turn promises (``min_running_polls``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import pytest

from conformance._ls_client import LsClient
from fakels.scenario import Chunk, Fault, Scenario, Turn, Usage
from tests.support.fake_ls import CSRF_TOKEN
from tests.support.wire_state.client import GrpcFake
from tests.support.wire_state.views import IDLE, RUNNING, error_classes

pytestmark = pytest.mark.invariant("WIRE-4")


@pytest.fixture
def client(grpc_fake: GrpcFake) -> Iterator[LsClient]:
    fake, _clock, _stub = grpc_fake
    with LsClient(fake.address, CSRF_TOKEN) as connected:
        yield connected


def _load(grpc_fake: GrpcFake, *turns: Turn) -> None:
    fake, _clock, _stub = grpc_fake
    fake.reset()
    fake.load_scenario(Scenario(turns=turns))


def _refusal(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    error: grpc.Call = info.value
    return error.code(), error.details() or ""


def _expired(call: Callable[[], object]) -> bool:
    code, details = _refusal(call)
    return code == grpc.StatusCode.NOT_FOUND and error_classes(details) == {"expired"}


def test_a_scripted_expired_send_ends_the_cascade(grpc_fake: GrpcFake, client: LsClient) -> None:
    _load(grpc_fake, Turn(chunks=(Chunk(text="one"),)), Turn(fault=Fault("expired")), Turn(chunks=(Chunk(text="x"),)))
    cascade = client.start()
    client.send(cascade, "first")
    while client.status(cascade) != IDLE:
        client.steps(cascade, 0)
    assert _expired(lambda: client.send(cascade, "second"))
    assert _expired(lambda: client.steps(cascade, 0))
    assert _expired(lambda: client.status(cascade))
    assert _expired(lambda: client.records(cascade, 0))
    assert _expired(lambda: client.send(cascade, "third"))
    fresh = client.start()  # the LS itself lives on: a new cascade plays the next turn
    client.send(fresh, "again")
    assert client.status(fresh) == RUNNING


@pytest.mark.parametrize("running", [1, 2, 3])
def test_metadata_read_before_the_status_does_not_end_a_complete_turn(
    grpc_fake: GrpcFake, client: LsClient, running: int
) -> None:
    _, clock, _ = grpc_fake
    usage = Usage(input_tokens=7, output_tokens=2)
    _load(grpc_fake, Turn(chunks=(Chunk(text="hi", delay_s=1.0),), records=(usage,), min_running_polls=running))
    cascade = client.start()
    client.send(cascade, "q")
    clock.advance(1.0)
    assert client.records(cascade, 0) == []  # this read shows the only chunk: the turn is complete
    assert [s.planner_response.response for s in client.steps(cascade, 0) if s.HasField("planner_response")] == ["hi"]
    statuses = []
    for _ in range(running + 2):
        client.records(cascade, 0)  # metadata first, every poll
        statuses.append(client.status(cascade))
    assert statuses == [RUNNING] * running + [IDLE, IDLE]
    assert [r.chat_model.usage.input_tokens for r in client.records(cascade, 0)] == [7]


def test_a_client_reading_status_only_after_the_steps_stop_growing_sees_running_first(
    grpc_fake: GrpcFake, client: LsClient
) -> None:
    _, clock, _ = grpc_fake
    _load(grpc_fake, Turn(chunks=tuple(Chunk(text=t, delay_s=1.0) for t in ("a", "b", "c"))))
    cascade = client.start()
    client.send(cascade, "q")
    for _ in range(5):  # metadata and steps, no status, until the text stops growing
        clock.advance(1.0)
        client.records(cascade, 0)
        client.steps(cascade, 0)
    assert [client.status(cascade), client.status(cascade), client.status(cascade)] == [RUNNING, IDLE, IDLE]

"""Cascade state that only the control endpoint's ``GET /state`` or a fault shows: counters after
several turns, the flags that faults set and the warm-up calls clear (``false``, never ``null``, in
the JSON), a prompt of several items, the default text of an ``error`` fault, and the TTL boundary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from fakels.cascade import EXPIRED_TEXT, PANEL_MISSING_TEXT, UNTRUSTED_TEXT
from fakels.clock import ManualClock
from fakels.control_client import ControlClient
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import Chunk, Fault, Scenario, Turn, default_answer
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs

SESSION = common.Metadata(session_id="session-1")
IDLE = cortex.CascadeRunStatus.CASCADE_RUN_STATUS_IDLE


class Harness:
    def __init__(self, fake: FakeLSThread, clock: ManualClock, stub: ls_grpc.LanguageServerServiceStub) -> None:
        self.fake = fake
        self.clock = clock
        self.stub = stub
        assert fake.ports.control is not None
        self.control = ControlClient(fake.ports.control)

    def load(self, scenario: Scenario) -> None:
        self.fake.load_scenario(scenario)
        self.fake.reset()

    def start(self) -> str:
        cascade_id: str = self.stub.StartCascade(ls.StartCascadeRequest(metadata=SESSION), timeout=30).cascade_id
        return cascade_id

    def send(self, cascade_id: str, *texts: str) -> None:
        request = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id, items=[common.TextOrScopeItem(text=t) for t in texts], metadata=SESSION
        )
        self.stub.SendUserCascadeMessage(request, timeout=30)

    def send_error(self, cascade_id: str, text: str) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.RpcError) as info:
            self.send(cascade_id, text)
        error: Any = info.value
        return error.code(), error.details()

    def play_out(self, cascade_id: str) -> list[cortex.CortexTrajectoryStep]:
        for _ in range(50):
            status = self.stub.GetCascadeTrajectory(ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), timeout=30)
            if status.status == IDLE:
                break
        else:
            pytest.fail("the turn never went IDLE")
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id)
        return list(self.stub.GetCascadeTrajectorySteps(request, timeout=30).steps)

    def state(self) -> dict[str, Any]:
        return self.control.state()


@pytest.fixture(scope="module")
def shared(start_module_fake_ls: StartFakeLs) -> Iterator[Harness]:
    clock = ManualClock()
    fake = start_module_fake_ls(clock=clock, control_port=0)
    with grpc.insecure_channel(fake.address) as channel:
        yield Harness(fake, clock, ls_grpc.LanguageServerServiceStub(channel))


@pytest.fixture
def h(shared: Harness) -> Harness:
    shared.load(Scenario())
    return shared


def test_state_counts_every_accepted_send_and_played_turn(h: Harness) -> None:
    h.load(Scenario(turns=(Turn(chunks=(Chunk(text="one"),)), Turn(chunks=(Chunk(text="two"),)))))
    cascade_id = h.start()
    for prompt in ("first", "second", "third"):
        h.send(cascade_id, prompt)
        h.play_out(cascade_id)

    state = h.state()
    assert (state["turn_index"], state["sends_accepted"], state["scenario_turns"]) == (3, 3, 2)
    assert state["panel_lost"] is False
    assert state["workspace_untrusted"] is False
    [cascade] = state["cascades"]
    assert (cascade["id"], cascade["turns_played"], cascade["active"], cascade["expired"]) == (
        cascade_id,
        3,
        False,
        False,
    )


def test_error_fault_without_message_uses_the_default_text(h: Harness) -> None:
    h.load(Scenario(turns=(Turn(fault=Fault(kind="error")), Turn(fault=Fault(kind="error", message="boom")))))
    cascade_id = h.start()
    assert h.send_error(cascade_id, "a") == (grpc.StatusCode.INTERNAL, "fakels: scripted send failure")
    assert h.send_error(cascade_id, "b") == (grpc.StatusCode.INTERNAL, "boom")
    state = h.state()
    # A faulted Send consumes its turn but is not accepted.
    assert (state["turn_index"], state["sends_accepted"]) == (2, 0)


def test_panel_lost_fault_is_cleared_by_initialize_panel(h: Harness) -> None:
    h.load(Scenario(turns=(Turn(fault=Fault(kind="panel_lost")),)))
    cascade_id = h.start()
    assert h.send_error(cascade_id, "a") == (grpc.StatusCode.NOT_FOUND, PANEL_MISSING_TEXT)
    assert h.state()["panel_lost"] is True
    assert h.send_error(cascade_id, "b") == (grpc.StatusCode.NOT_FOUND, PANEL_MISSING_TEXT)

    h.stub.InitializeCascadePanelState(ls.InitializeCascadePanelStateRequest(metadata=SESSION), timeout=30)
    assert h.state()["panel_lost"] is False
    h.send(cascade_id, "c")
    assert h.state()["sends_accepted"] == 1


def test_untrusted_fault_is_cleared_by_update_workspace_trust(h: Harness) -> None:
    h.load(Scenario(turns=(Turn(fault=Fault(kind="untrusted")),)))
    cascade_id = h.start()
    assert h.send_error(cascade_id, "a") == (grpc.StatusCode.FAILED_PRECONDITION, UNTRUSTED_TEXT)
    assert h.state()["workspace_untrusted"] is True

    h.stub.UpdateWorkspaceTrust(ls.UpdateWorkspaceTrustRequest(metadata=SESSION, workspace_trusted=False), timeout=30)
    assert h.state()["workspace_untrusted"] is True
    h.stub.UpdateWorkspaceTrust(ls.UpdateWorkspaceTrustRequest(metadata=SESSION, workspace_trusted=True), timeout=30)
    assert h.state()["workspace_untrusted"] is False
    h.send(cascade_id, "b")


def test_prompt_items_are_joined_without_separator(h: Harness) -> None:
    cascade_id = h.start()
    h.send(cascade_id, "ab", "cd ", "ef")
    steps = h.play_out(cascade_id)
    assert steps[0].user_input.user_response == "user: abcd ef"
    assert steps[-1].planner_response.response == default_answer("abcd ef")


def test_cascade_lives_exactly_ttl_seconds_after_its_last_use(h: Harness) -> None:
    h.load(Scenario(cascade_ttl_s=10.0))
    cascade_id = h.start()
    h.clock.advance(10.0)
    status = h.stub.GetCascadeTrajectory(ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), timeout=30)
    assert status.trajectory.cascade_id == cascade_id
    h.clock.advance(10.5)
    with pytest.raises(grpc.RpcError) as info:
        h.stub.GetCascadeTrajectory(ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), timeout=30)
    error: Any = info.value
    assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, EXPIRED_TEXT)
    assert h.state()["cascades"][0]["expired"] is True

"""WIRE-4: the fake language server's stateful semantics, driven through encoded requests.

Hypothesis generates a scenario and a sequence of client actions (:func:`client_actions`);
:class:`WireClient` plays them against the fake: it starts cascades, sends turns, polls steps, run
status and generator metadata at random offsets, moves the ``ManualClock``, re-initialises the
panel, re-trusts the workspace, and plays whole turns the way the real client does (wire.md
section 3), recovering from rejections as it does (section 4). Every answer is checked twice:

* against :class:`Model`, a small reference model of the documented semantics (one chunk
  revealed per poll once its ``delay_s`` has passed; RUNNING while chunks remain or for the first
  ``min_running_polls`` status polls after the Send; records appended when the turn finishes;
  expiry, panel loss and distrust as wire.md section 4 describes). ``Steps(k)`` must equal the
  model's full snapshot ``[k:]`` at that moment, ``GeneratorMetadata(k)`` its records ``[k:]``;
* against what the client itself can rely on, independently of the model
  (:class:`CascadeObservations`): absolute step indices keep their kind, planner text and thinking
  only grow, the run status never goes back to RUNNING after IDLE within a turn, the whole scripted
  turn is present when IDLE is first seen, records never change, an expired cascade stays expired,
  and each rejection's text falls in the error class the real client's regexes give it.

The same client runs in-process (encoded requests into the core, one event loop per example)
and over real gRPC (generated stubs against a FakeLSThread); ``test_wire_state_scripted.py`` spells
out the semantics in two readable examples. The harness is :mod:`tests.support.wire_state`.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings

from conformance.strategies import scenarios
from fakels.scenario import Scenario
from tests.support.wire_state.actions import Action, client_actions
from tests.support.wire_state.client import GrpcDriver, GrpcFake, InProcessDriver, WireClient, play

pytestmark = pytest.mark.invariant("WIRE-4")


def _settings(scale: float) -> settings:
    """The loaded profile with ``scale`` times its examples: in-process examples are cheap (a few
    ms), gRPC ones are not."""
    current = settings.default
    assert current is not None
    # No explain phase: it replays a failure hundreds of times, too slow for these examples.
    phases = tuple(phase for phase in current.phases if phase is not Phase.explain)
    return settings(current, max_examples=max(1, round(current.max_examples * scale)), phases=phases)


@_settings(5)
@given(scenario=scenarios(fault_one_in=3), actions=client_actions())
def test_stateful_semantics_in_process(scenario: Scenario, actions: list[Action]) -> None:
    driver = InProcessDriver(scenario)
    try:
        play(WireClient(driver, scenario), actions)
    finally:
        driver.close()


@_settings(0.5)
@given(scenario=scenarios(max_turns=3, fault_one_in=3), actions=client_actions(max_bursts=4))
def test_stateful_semantics_over_grpc(grpc_fake: GrpcFake, scenario: Scenario, actions: list[Action]) -> None:
    fake, clock, stub = grpc_fake
    fake.load_scenario(scenario)
    play(WireClient(GrpcDriver(fake, clock, stub), scenario), actions)

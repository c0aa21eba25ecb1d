"""additional_steps (field 9): the D3 delta (seed 001; engine.md section 6.B; OFF-5).

The seed's ``test/cascade-native-history-delta.test.js`` arms are here at the steps level: a history
with 3 mapped steps whose newest round holds 1. Counts are taken from encoded
SendUserCascadeMessage requests, field 9.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cascade.steps_delta import (
    AdditionalStepsPlan,
    additional_steps_for,
    delta_start_for,
    last_assistant_index,
    rejected_resume_sends,
)
from engine.cascade.tool_steps import TOOL_KINDS, build_additional_steps
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from tests.engine.cascade.tool_history_support import Msg, three_rounds, tool_round


def field9_count(steps: Sequence[cortex.CortexTrajectoryStep]) -> int:
    """How many additional_steps an encoded Send request carries (decoded from the wire bytes)."""
    wire = ls.SendUserCascadeMessageRequest(cascade_id="c", additional_steps=list(steps)).SerializeToString()
    return len(ls.SendUserCascadeMessageRequest.FromString(wire).additional_steps)


# ------------------------------------------------------------------------------------ the seed's arms (D3)


@pytest.mark.invariant("OFF-5")
def test_control_a_fresh_cascade_sends_the_full_mapped_history() -> None:
    messages = three_rounds()
    plan = AdditionalStepsPlan(build_additional_steps(messages), delta_start_for(messages))
    plan.opened(resumed=False)
    assert field9_count(plan.for_send()) == 3


@pytest.mark.invariant("OFF-5")
def test_control_an_ordinary_reuse_sends_only_the_newest_round() -> None:
    messages = three_rounds()
    full = build_additional_steps(messages)
    plan = AdditionalStepsPlan(full, delta_start_for(messages))
    plan.opened(resumed=True)
    sent = plan.for_send()
    assert field9_count(sent) == 1  # baseline: 3
    assert sent == [full[2]]
    assert sent[0].run_command.combined_output.full == "ok"


@pytest.mark.invariant("OFF-5")
def test_a_rejected_resume_re_sends_the_full_history_on_the_fresh_restart() -> None:
    messages = three_rounds()
    plan = AdditionalStepsPlan(build_additional_steps(messages), delta_start_for(messages))
    plan.opened(resumed=True)
    first = plan.for_send()
    plan.restarted_fresh()  # the LS rejected the resume; the client starts a fresh cascade
    second = plan.for_send()
    assert (field9_count(first), field9_count(second)) == (1, 3)  # baseline: 3, then 3
    assert rejected_resume_sends(plan.full_steps, plan.delta_start) == (first, second)


@pytest.mark.invariant("OFF-5")
def test_without_a_delta_index_the_full_list_is_always_sent() -> None:
    plan = AdditionalStepsPlan(build_additional_steps(three_rounds()), delta_start=None)
    plan.opened(resumed=True)
    assert field9_count(plan.for_send()) == 3


def test_a_panel_missing_restart_at_open_also_sends_the_full_list() -> None:
    # Q6.2: every fresh StartCascade clears the resumed flag, not only the expired-resume one
    plan = AdditionalStepsPlan(build_additional_steps(three_rounds()), delta_start=2)
    plan.opened(resumed=True)
    plan.restarted_fresh()
    assert len(plan.for_send()) == 3


@pytest.mark.parametrize(
    ("delta_start", "sent"), [(2, 1), (0, 3), (3, 0), (9, 0), (-1, 3), (2.0, 3), (True, 3), ("1", 3)]
)
def test_only_an_integer_delta_start_above_0_cuts_the_list(delta_start: object, sent: int) -> None:
    # Q6.3: clamped to the length (nothing is sent past the end); anything else sends the full list
    assert len(additional_steps_for(["a", "b", "c"], delta_start, resumed=True)) == sent
    assert len(additional_steps_for(["a", "b", "c"], delta_start, resumed=False)) == 3


def test_the_delta_start_is_the_step_count_before_the_last_assistant() -> None:
    messages = three_rounds()
    assert last_assistant_index(messages) == 6
    assert delta_start_for(messages) == 2
    # the last assistant answered without tools: the delta is empty
    answered: list[Msg] = [*messages, {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    assert delta_start_for(answered) == len(build_additional_steps(answered)) == 3
    assert additional_steps_for(build_additional_steps(answered), delta_start_for(answered), resumed=True) == []
    # no assistant at all
    assert last_assistant_index([{"role": "user", "content": "hi"}]) == 0
    assert delta_start_for([{"role": "user", "content": "hi"}]) == 0


# ------------------------------------------------------------------------------------ OFF-5

_MAPPED = ["Bash", "Read", "Glob", "Grep", "list_dir", "WebSearch", "shell_command"]
_UNMAPPED = ["apply_patch", "TodoWrite", "update_plan"]
_ROUND = st.lists(
    st.tuples(st.sampled_from(_MAPPED + _UNMAPPED), st.one_of(st.none(), st.text(max_size=8))), min_size=0, max_size=3
)


def _history(rounds: list[list[tuple[str, str | None]]], answered: bool) -> list[Msg]:
    messages: list[Msg] = [{"role": "user", "content": "task"}]
    for r, calls in enumerate(rounds):
        messages += tool_round(
            [(f"r{r}c{c}", name, {"command": "x", "path": "/p"}, out) for c, (name, out) in enumerate(calls)]
        )
    if answered:
        messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    return messages


def _wire(steps: Sequence[cortex.CortexTrajectoryStep]) -> list[bytes]:
    return [step.SerializeToString() for step in steps]


@pytest.mark.invariant("OFF-5")
@given(rounds=st.lists(_ROUND, min_size=1, max_size=5), answered=st.booleans())
def test_off5_fresh_gets_everything_a_resume_the_newest_round_a_rejected_resume_both(
    rounds: list[list[tuple[str, str | None]]], answered: bool
) -> None:
    messages = _history(rounds, answered)
    full = build_additional_steps(messages)
    delta_start = delta_start_for(messages)
    mapped_per_round = [sum(name in TOOL_KINDS for name, _ in calls) for calls in rounds]
    assert len(full) == sum(mapped_per_round)
    # fresh: the whole mapped history
    assert _wire(additional_steps_for(full, delta_start, resumed=False)) == _wire(full)
    # ordinary resume: exactly the newest round (the steps built from the last assistant turn on)
    newest = build_additional_steps(messages[last_assistant_index(messages) :])
    resumed = additional_steps_for(full, delta_start, resumed=True)
    assert _wire(resumed) == _wire(newest if delta_start > 0 else full)
    if not answered and delta_start > 0:
        assert len(resumed) == mapped_per_round[-1]
    assert delta_start + len(newest) == len(full)
    # a rejected resume: the delta first, then the full history on the fresh restart
    first, second = rejected_resume_sends(full, delta_start)
    assert (_wire(first), _wire(second)) == (_wire(resumed), _wire(full))


@pytest.mark.invariant("OFF-5")
@given(rounds=st.lists(_ROUND, min_size=1, max_size=4))
def test_off5_the_delta_is_a_pure_function_of_the_request(rounds: list[list[tuple[str, str | None]]]) -> None:
    messages = _history(rounds, answered=False)
    copy: list[Mapping[str, object]] = json.loads(json.dumps(messages))
    assert delta_start_for(copy) == delta_start_for(messages)
    assert _wire(build_additional_steps(copy)) == _wire(build_additional_steps(messages))

"""Tool-history steps as the LS sees them: encoded in a real Send request, decoded by the fake's decoder.

Every helper here goes through the wire: the step is put in ``SendUserCascadeMessageRequest``
``additional_steps``, serialised, and decoded back with :func:`fakels.decoder.decode` (field names
from the generated modules, enums by name, unknown fields listed). Comparing the whole decoded dict
pins every field a mapping sets and the absence of every field it must not set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.cascade.tool_steps import build_additional_steps
from fakels.decoder import JsonValue, decode
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from tests.engine.cascade.tool_history_support import Msg, tool_round

Decoded = dict[str, JsonValue]

DONE = cortex.CortexStepStatus.Name(cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE)


def oneof_number(kind: str) -> int:
    """The number of the step body ``kind`` in the CortexTrajectoryStep oneof (the bridge's type value)."""
    return int(cortex.CortexTrajectoryStep.DESCRIPTOR.fields_by_name[kind].number)


def type_as_decoded(kind: str) -> JsonValue:
    """How the decoder shows the bridge's type for ``kind``: the enum name the number happens to have, else the int."""
    known = cortex.CortexStepType.DESCRIPTOR.values_by_number.get(oneof_number(kind))
    return known.name if known is not None else oneof_number(kind)


def expected(kind: str, body: Decoded | None) -> Decoded:
    """A decoded step of ``kind``: the bridge's type, status DONE and ``body`` (None: no oneof at all)."""
    step: Decoded = {"type": type_as_decoded(kind), "status": DONE}
    if body is not None:
        step[kind] = body
    return step


def on_the_wire(steps: Sequence[cortex.CortexTrajectoryStep]) -> tuple[list[Decoded], list[Decoded]]:
    """The decoded ``additional_steps`` of a Send carrying ``steps``, and every unknown field in it."""
    raw = ls.SendUserCascadeMessageRequest(cascade_id="c", additional_steps=list(steps)).SerializeToString()
    decoded = decode(ls.SendUserCascadeMessageRequest, raw)
    assert decoded.fields["cascade_id"] == "c"
    got = decoded.fields.get("additional_steps", [])
    assert isinstance(got, list)
    assert len(got) == len(steps)
    # the type value survives as the oneof number whatever the enum calls it
    message = decoded.message
    assert isinstance(message, ls.SendUserCascadeMessageRequest)
    assert [step.type for step in message.additional_steps] == [step.type for step in steps]
    return got, [field.to_json() for field in decoded.unknown]


def decoded_step(step: cortex.CortexTrajectoryStep) -> Decoded:
    """One step's decoded dict; it must carry no unknown field."""
    [got], unknown = on_the_wire([step])
    assert unknown == []
    return dict(got)


def decoded_history(messages: Sequence[Mapping[str, object]]) -> list[Decoded]:
    """All steps the mapping builds for ``messages``, decoded; none may carry an unknown field."""
    got, unknown = on_the_wire(build_additional_steps(messages))
    assert unknown == []
    return [dict(step) for step in got]


def one_call(name: str, args: object, result: object = None) -> Decoded:
    """The decoded step of a single tool call ``name(args)`` with its result (None: no tool message)."""
    steps = decoded_history(tool_round([("call_1", name, args, result)]))
    assert len(steps) == 1
    return steps[0]


__all__ = ["DONE", "Decoded", "Msg", "decoded_history", "decoded_step", "expected", "on_the_wire", "one_call"]

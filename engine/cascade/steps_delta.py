"""How much of the mapped tool history one send carries (seed 001, D3; engine.md section 6.B).

:func:`engine.cascade.tool_steps.build_additional_steps` gives the full list of steps for a request. A
fresh cascade gets all of it; while a trajectory is really resumed only the newest round is sent
(:func:`delta_start_for`, :func:`additional_steps_for`, :class:`AdditionalStepsPlan`), and when a
rejected resume restarts fresh the full list goes again (:func:`rejected_resume_sends`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from engine.cascade.tool_steps import Message, build_additional_steps
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

T = TypeVar("T")


def last_assistant_index(messages: Sequence[Message]) -> int:
    """Index of the last assistant message, 0 when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            return index
    return 0


def delta_start_for(messages: Sequence[Message]) -> int:
    """Where the newest round starts in :func:`build_additional_steps` (Q6.1).

    The steps built from the messages before the last assistant message; the last assistant's
    tool calls (whose results are new since the cascade last ran) form the delta. With no tool
    call in that message the delta is empty. A pure function of the request.
    """
    return len(build_additional_steps(messages[: last_assistant_index(messages)]))


def _valid_delta_start(delta_start: object) -> int | None:
    if isinstance(delta_start, bool) or not isinstance(delta_start, int):
        return None
    return delta_start if delta_start > 0 else None


def additional_steps_for(full_steps: Sequence[T], delta_start: object, resumed: bool) -> list[T]:
    """The steps one send carries.

    Only while the trajectory is really resumed (``resumed``) and ``delta_start`` is an integer
    above 0 (Q6.3: anything else sends the full list; it is clamped to the list length, so past
    the end nothing is sent) is the list cut to ``full_steps[delta_start:]``. A fresh cascade, and
    a caller without a delta index (``None``), get the full list.
    """
    start = _valid_delta_start(delta_start)
    if not resumed or start is None:
        return list(full_steps)
    return list(full_steps[min(start, len(full_steps)) :])


@dataclass
class AdditionalStepsPlan:
    """The per-turn decision of ``cascadeChat`` (``effectiveAdditionalSteps``), made per send.

    Call :meth:`opened` when the cascade is opened (``resumed=True`` when an existing cascade id is
    reused) and :meth:`restarted_fresh` on every fresh StartCascade that replaces it (panel
    missing at open, or any rejected-resume retry: Q6.2). :meth:`for_send` is what the next send
    carries.
    """

    full_steps: Sequence[cortex.CortexTrajectoryStep]
    delta_start: int | None = None
    resumed_trajectory: bool = field(default=False)

    def opened(self, *, resumed: bool) -> None:
        self.resumed_trajectory = resumed

    def restarted_fresh(self) -> None:
        self.resumed_trajectory = False

    def for_send(self) -> list[cortex.CortexTrajectoryStep]:
        return additional_steps_for(self.full_steps, self.delta_start, self.resumed_trajectory)


def rejected_resume_sends(full_steps: Sequence[T], delta_start: object) -> tuple[list[T], list[T]]:
    """The two sends of a resume the LS rejects: the delta first, then the full list on the fresh restart."""
    return additional_steps_for(full_steps, delta_start, True), additional_steps_for(full_steps, delta_start, False)

"""What a client may do to the fake (one dataclass per action) and the Hypothesis strategy that
draws sequences of them."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from conformance.strategies import prompts, unicode_text

SESSIONS = ("session-a", "session-b")
MODEL_UIDS = ("MODEL_SWE_1_5", "claude-sonnet-4", "gpt-5\U0001f680")
CLOCK_STEPS = (0.5, 1.0, 2.5, 6.0, 31.0)


@dataclass(frozen=True)
class StartCascade:
    session: str


@dataclass(frozen=True)
class SendTurn:
    """A Send, then polls of that cascade in any order and mix (not necessarily the real client's):
    ``"steps"`` (at the turn's offset), ``"status"``, ``"metadata"`` (at offset 0) or ``"clock"``
    (half a second passes)."""

    cascade: int  # index into the cascades started so far (modulo their number)
    session: str
    prompt: str
    model_uid: str
    then: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlayTurn:
    """A Send followed by the real client's polling loop (wire.md section 3)."""

    cascade: int
    session: str
    prompt: str
    model_uid: str


@dataclass(frozen=True)
class PollSteps:
    cascade: int
    offset: int  # reduced modulo (steps + 3): any offset in [0, n + 2]


@dataclass(frozen=True)
class PollStatus:
    cascade: int


@dataclass(frozen=True)
class PollMetadata:
    cascade: int
    offset: int  # reduced modulo (records + 3)


@dataclass(frozen=True)
class AdvanceClock:
    seconds: float


@dataclass(frozen=True)
class InitializePanel:
    session: str


@dataclass(frozen=True)
class UpdateTrust:
    trusted: bool


@dataclass(frozen=True)
class UnknownCascade:
    cascade_id: str
    method: str


@dataclass(frozen=True)
class WholeHistory:
    """Run the cascade to IDLE, then read every step and record from offset 0."""

    cascade: int


Action = (
    StartCascade
    | SendTurn
    | PlayTurn
    | PollSteps
    | PollStatus
    | PollMetadata
    | AdvanceClock
    | InitializePanel
    | UpdateTrust
    | UnknownCascade
    | WholeHistory
)

UNKNOWN_CASCADE_IDS = ("", "fakels-cascade-9999", "cascade-of-another-ls")
CASCADE_METHODS = (
    "SendUserCascadeMessage",
    "GetCascadeTrajectory",
    "GetCascadeTrajectorySteps",
    "GetCascadeTrajectoryGeneratorMetadata",
)


def client_actions(max_bursts: int = 12, burst_size: int = 6) -> st.SearchStrategy[list[Action]]:
    """What a client may do, weighted towards playing and polling turns: up to ``max_bursts``
    bursts of 1 to ``burst_size`` actions (about ten on average, yet shrinkable to none)."""
    ref = st.integers(min_value=0, max_value=3)
    offset = st.integers(min_value=0, max_value=40)
    session = st.sampled_from(SESSIONS)
    model_uid = st.sampled_from(MODEL_UIDS)
    send_args = {"cascade": ref, "session": session, "prompt": prompts(), "model_uid": model_uid}
    polls = st.lists(st.sampled_from(("steps", "status", "metadata", "clock")), max_size=8).map(tuple)
    choices: list[tuple[int, st.SearchStrategy[Action]]] = [
        (3, st.builds(PlayTurn, **send_args)),
        (3, st.builds(SendTurn, **send_args, then=polls)),
        (3, st.builds(PollSteps, cascade=ref, offset=offset)),
        (3, st.builds(PollStatus, cascade=ref)),
        (2, st.builds(PollMetadata, cascade=ref, offset=offset)),
        (2, st.builds(AdvanceClock, seconds=st.sampled_from(CLOCK_STEPS))),
        (1, st.builds(StartCascade, session=session)),
        (1, st.builds(InitializePanel, session=session)),
        (1, st.builds(UpdateTrust, trusted=st.booleans())),
        (1, st.builds(WholeHistory, cascade=ref)),
        (
            1,
            st.builds(
                UnknownCascade,
                cascade_id=st.one_of(st.sampled_from(UNKNOWN_CASCADE_IDS), unicode_text()),
                method=st.sampled_from(CASCADE_METHODS),
            ),
        ),
    ]
    weighted = [strategy for weight, strategy in choices for _ in range(weight)]
    # sampled_from over the strategies (not one_of) keeps the weights and shrinks towards PlayTurn.
    action: st.SearchStrategy[Action] = st.sampled_from(weighted).flatmap(lambda strategy: strategy)
    bursts = st.lists(st.lists(action, min_size=1, max_size=burst_size), max_size=max_bursts)
    return bursts.map(lambda groups: [a for group in groups for a in group])

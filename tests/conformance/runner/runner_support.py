"""An in-memory target and toy properties for fast tests of the runner: real catalogue invariants,
tiny strategies of JSON cases, and checks written by the test, with no fake LS or engine behind them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from conformance.catalogue import CATALOGUE
from conformance.errors import PreconditionNotMet
from conformance.properties import Case, CaseStrategy, Evidence, Property
from conformance.targets import Target

ToyCheck = Callable[["ToyTarget", Case, Evidence], None]


class ToyTarget:
    """A target that implements ``ops`` and answers nothing; it keeps every case the runner handed
    a toy property (``seen``, in order), split into those its check judged (``judged``) and those whose
    precondition was not met (``unmet``)."""

    kind = "python"

    def __init__(self, ops: frozenset[str] = frozenset()) -> None:
        self._ops = ops
        self.seen: list[Case] = []
        self.judged: list[Case] = []
        self.unmet: list[Case] = []

    @property
    def description(self) -> str:
        return "toy"

    def operations(self) -> frozenset[str]:
        return self._ops

    def capabilities(self, op: str) -> Mapping[str, Any]:
        return {}

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def numbers(low: int = -100, high: int = 100) -> st.SearchStrategy[Case]:
    """Cases ``{"n": <int in [low, high]>}``: they shrink towards ``n`` closest to 0."""
    return st.integers(low, high).map(lambda n: {"n": n})


def toy_property(
    check: ToyCheck,
    cases: st.SearchStrategy[Case] | CaseStrategy | None = None,
    *,
    invariant: str = "WIRE-1",
    needs: tuple[str, ...] = (),
    max_examples: int | None = None,
) -> Property:
    """The property of catalogue invariant ``invariant`` that runs ``check`` on ``cases`` (a strategy,
    or a function of the target giving one; default: ``numbers()``) against a ToyTarget, recording
    what the runner handed it."""

    def recorded(target: Target, case: Case, evidence: Evidence) -> None:
        assert isinstance(target, ToyTarget), "toy properties run against a ToyTarget"
        target.seen.append(case)
        try:
            check(target, case, evidence)
        except PreconditionNotMet:
            target.unmet.append(case)
            raise
        except BaseException:
            target.judged.append(case)
            raise
        target.judged.append(case)

    if cases is None or isinstance(cases, st.SearchStrategy):
        strategy = numbers() if cases is None else cases
        return Property(CATALOGUE[invariant], frozenset(needs), lambda target: strategy, recorded, max_examples)
    return Property(CATALOGUE[invariant], frozenset(needs), cases, recorded, max_examples)


def passes(target: ToyTarget, case: Case, evidence: Evidence) -> None:
    """A check every case passes."""

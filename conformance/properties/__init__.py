"""Every invariant's property, registered by ID.

A property is a Hypothesis strategy of JSON-serialisable cases plus a check that runs one case
against a target. Cases being plain JSON is what lets a shrunk counterexample become a static
case file that replays against any target.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from conformance.catalogue import CATALOGUE, Invariant
from conformance.errors import PreconditionNotMet
from conformance.targets import Target

Case = dict[str, Any]
CaseStrategy = Callable[[Target], st.SearchStrategy[Case]]
Check = Callable[[Target, Case, "Evidence"], None]

_FAMILY_MODULES = (
    "conformance.properties.wire",
    "conformance.properties.img",
    "conformance.properties.off",
    "conformance.properties.so",
    "conformance.properties.acc",
    "conformance.properties.store",
    "conformance.properties.att",
    "conformance.properties.req",
    "conformance.properties.turn",
    "conformance.properties.scope",
    "conformance.properties.scope_history",
)


# Why a black box may show no cache hit or resume: real gateways share their cache and pooled cascades only
# with callers that send a per-user signal.
SCOPE_HINT = (
    "a gateway may cache answers and resume cascades only for callers that send a per-user signal (--caller-scope)"
)


def require(condition: bool, reason: str) -> None:
    """Judge this example only when ``condition`` holds; otherwise it counts as not checkable.

    For a precondition the target legitimately may not meet (it never resumed a cascade, so a
    rebuild cannot be judged): the runner reports ``not checkable`` with ``reason`` when no
    example met it, never ``fail``. Not for conditions the kit controls: those are assertions.
    """
    if not condition:
        raise PreconditionNotMet(reason)


@dataclass
class Evidence:
    """What a check saw, kept for the report when the case fails (e.g. the journal it read), and
    the parts of the statement it could not judge because the target does not expose them."""

    items: dict[str, Any] = field(default_factory=dict)
    unobserved: set[str] = field(default_factory=set)

    def add(self, name: str, value: Any) -> None:
        self.items[name] = value

    def not_observed(self, what: str) -> None:
        """Record that ``what`` (e.g. "drop counters") was not judged: the target does not give it.
        A property that passes with such parts is reported as a partial pass, naming them."""
        self.unobserved.add(what)


@dataclass(frozen=True)
class OverHttp:
    """What a black-box HTTP target needs, beyond the operations it offers, to be judged on a property:
    ``given``, the options its run must be given (``--native-bridge``); or ``hidden``, what the property
    judges and a black box never shows (then no HTTP target can check it)."""

    given: str | None = None
    hidden: str | None = None


@dataclass(frozen=True)
class Property:
    """``needs``: the operations the check calls; an entry ``"a|b"`` is met by either (e.g. a
    conversation played through ``engine.play_turns`` or through ``gateway.chat``). ``over_http``:
    what a black-box HTTP target needs besides (``cascade-conformance list`` and the docs say it)."""

    invariant: Invariant
    needs: frozenset[str]
    cases: CaseStrategy
    check: Check
    max_examples: int | None = None
    over_http: OverHttp = OverHttp()

    def missing(self, operations: frozenset[str]) -> list[str]:
        """The needs ``operations`` does not meet, sorted."""
        return sorted(need for need in self.needs if not set(need.split("|")) & operations)

    def needs_text(self) -> str:
        return ", ".join(need.replace("|", " or ") for need in sorted(self.needs))


_REGISTRY: dict[str, Property] = {}


def invariant_property(
    invariant_id: str,
    *,
    needs: tuple[str, ...],
    cases: CaseStrategy,
    max_examples: int | None = None,
    over_http: OverHttp = OverHttp(),
) -> Callable[[Check], Check]:
    """Register ``check`` as the property of ``invariant_id``."""

    def register(check: Check) -> Check:
        if invariant_id not in CATALOGUE:
            raise KeyError(f"{invariant_id} is not in the catalogue")
        if invariant_id in _REGISTRY:
            raise KeyError(f"{invariant_id} already has a property: {_REGISTRY[invariant_id].check.__qualname__}")
        _REGISTRY[invariant_id] = Property(
            CATALOGUE[invariant_id], frozenset(needs), cases, check, max_examples, over_http
        )
        return check

    return register


def properties() -> dict[str, Property]:
    """All registered properties, in catalogue order."""
    for module in _FAMILY_MODULES:
        importlib.import_module(module)
    return {inv_id: _REGISTRY[inv_id] for inv_id in CATALOGUE if inv_id in _REGISTRY}

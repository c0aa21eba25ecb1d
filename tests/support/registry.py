"""The catalogue invariants without a property yet (the twelve from the defects the public gateways
fixed: issues 41 and 42 build them); tests of what the kit says about one without a property take a
family's properties away for the test."""

from __future__ import annotations

import pytest

import conformance.properties as registry
from conformance.properties import properties

NOT_YET_IMPLEMENTED = frozenset(
    {
        "SCOPE-1",
        "SCOPE-2",
        "SCOPE-3",
        "SCOPE-4",
    }
)


def without_family(monkeypatch: pytest.MonkeyPatch, family: str) -> None:
    """The registry as if ``family`` had no properties yet (restored by ``monkeypatch``)."""
    properties()  # every family module imported, so none registers again later
    kept = {inv_id: prop for inv_id, prop in registry._REGISTRY.items() if prop.invariant.family != family}
    monkeypatch.setattr(registry, "_REGISTRY", kept)

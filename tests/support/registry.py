"""Tests of what the kit says about an invariant without a property take a family's properties away for the
test (every catalogue invariant has one)."""

from __future__ import annotations

import pytest

import conformance.properties as registry
from conformance.properties import properties


def without_family(monkeypatch: pytest.MonkeyPatch, family: str) -> None:
    """The registry as if ``family`` had no properties yet (restored by ``monkeypatch``)."""
    properties()  # every family module imported, so none registers again later
    kept = {inv_id: prop for inv_id, prop in registry._REGISTRY.items() if prop.invariant.family != family}
    monkeypatch.setattr(registry, "_REGISTRY", kept)

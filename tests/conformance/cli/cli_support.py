"""Toy properties for the ``cascade-conformance`` command-line tests: each one ends in a known verdict
at once, so a run through the real CLI, runner and report writers prints a known page in well under
a second. They stand in for a catalogue invariant's property (the registry is patched for one test)."""

from __future__ import annotations

import json
import logging
import re

import pytest
from hypothesis import configuration
from hypothesis import strategies as st

import conformance.properties as registry
from conformance.catalogue import CATALOGUE
from conformance.errors import TargetError
from conformance.properties import Case, Check, Evidence, Property, properties, require
from conformance.targets import Target

NOTHING = "python:tests.support.broken_targets:implements_nothing"  # offers no operation at all
REFERENCE = "python:conformance.targets.reference:make_target"


def _passes(target: Target, case: Case, evidence: Evidence) -> None:
    pass


def _fails(target: Target, case: Case, evidence: Evidence) -> None:
    evidence.add("seen", case["n"])
    raise AssertionError(f"n is {case['n']}")


def _fails_twice(target: Target, case: Case, evidence: Evidence) -> None:
    if case["k"] == "a":
        raise AssertionError("a is wrong")
    raise AssertionError("b is wrong too")


def _unmet(target: Target, case: Case, evidence: Evidence) -> None:
    require(False, "the target never resumed")


def _partial(target: Target, case: Case, evidence: Evidence) -> None:
    evidence.not_observed("drop counters")


def _target_error(target: Target, case: Case, evidence: Evidence) -> None:
    raise TargetError("it hung up")


def toy(
    inv_id: str, check: Check, *, needs: tuple[str, ...] = (), cases: st.SearchStrategy[Case] | None = None
) -> Property:
    """A property of ``inv_id`` that runs ``check`` on ``cases`` (by default the one case ``{"n": 1}``)."""
    strategy = cases if cases is not None else st.just({"n": 1})
    return Property(CATALOGUE[inv_id], frozenset(needs), lambda target: strategy, check)


def fails_twice(inv_id: str) -> Property:
    """Two distinct failures, one for each of its two cases."""
    both = st.sampled_from([{"k": "a"}, {"k": "b"}])
    return Property(CATALOGUE[inv_id], frozenset(), lambda target: both, _fails_twice)


PASSES, FAILS, UNMET, PARTIAL, TARGET_ERROR = _passes, _fails, _unmet, _partial, _target_error


def only_these(monkeypatch: pytest.MonkeyPatch, *props: Property) -> None:
    """The registry holds exactly ``props`` for this test (restored by ``monkeypatch``)."""
    properties()  # every family module imported, so none registers again later
    monkeypatch.setattr(registry, "_REGISTRY", {prop.invariant.id: prop for prop in props})


def timeless(text: str) -> str:
    """``text`` with every duration (``0.0s``, ``0.12s``) as ``Ts``: the pages are otherwise exact."""
    return re.sub(r"\d+\.\d+s", "Ts", text)


def _tells_where(target: Target, case: Case, evidence: Evidence) -> None:
    """Fails with what the run was set to: Hypothesis's storage folder and the kit's loggers' levels."""
    storage = vars(configuration).get("__hypothesis_home_directory")
    levels = {name: logging.getLogger(name).level for name in ("engine", "fakels")}
    raise AssertionError(f"storage {storage}; levels {levels}")


TELLS_WHERE = _tells_where


def _tells_target(target: Target, case: Case, evidence: Evidence) -> None:
    """Fails with what an http:// target was loaded with: its keys, model and bridge, its operations, its
    store limits."""
    facts = {
        "defaults": target.gateway_defaults(),  # type: ignore[attr-defined]
        "operations": sorted(target.operations()),
        "store.open": dict(target.capabilities("store.open")) if "store.open" in target.operations() else None,
    }
    raise AssertionError(json.dumps(facts, sort_keys=True))


TELLS_TARGET = _tells_target

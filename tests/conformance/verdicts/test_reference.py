"""Every catalogue property, run against the reference target: the kit's own implementations
must keep every invariant they define. One test per invariant, so mutation runs name the
property that caught a defect.

Each property runs on its first 20 examples of the ci profile: the whole profile is the main job
(``cascade-conformance run``, the README's first command), and the test run has a time budget."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.properties import properties
from conformance.runner import RunOptions, Status, run_property
from conformance.targets import Target, load_target


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    target = load_target(None)
    yield target
    target.close()


@pytest.mark.parametrize("invariant_id", [pytest.param(i, marks=pytest.mark.invariant(i), id=i) for i in properties()])
def test_property_holds_on_the_reference(invariant_id: str, reference: Target) -> None:
    result = run_property(properties()[invariant_id], reference, RunOptions(profile="ci", max_examples=20))
    assert result.status == Status.PASS, f"{invariant_id} on the reference: {result.message}\ncase: {result.case}"
    assert result.examples > 0

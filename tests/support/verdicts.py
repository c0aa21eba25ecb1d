"""The verdict meta-tests' one way to judge a target: load it, run one property, close it."""

from __future__ import annotations

from conformance.properties import properties
from conformance.runner import Result, RunOptions, run_property
from conformance.targets import load_target


def run_on(target_spec: str, invariant: str) -> Result:
    """``invariant``'s property run through the real runner (the ``ci`` profile) on ``target_spec``."""
    target = load_target(target_spec)
    try:
        return run_property(properties()[invariant], target, RunOptions(profile="ci"))
    finally:
        target.close()

"""The verdict meta-tests' one way to judge a target: load it, run one property, close it."""

from __future__ import annotations

from conformance.properties import properties
from conformance.runner import Result, RunOptions, run_property
from conformance.targets import load_target


def run_on(target_spec: str, invariant: str, *, shrink: bool = False, max_examples: int | None = None) -> Result:
    """``invariant``'s property run through the real runner (the ``ci`` profile) on ``target_spec``.

    Unshrunk unless asked: these meta-tests judge the verdict, which shrinking never changes, and
    shrinking a failure replays the target hundreds of times (20 s of a 21 s ATT-6 run). Shrinking
    itself is pinned by test_runner_units.py and the CLI's distinct-failure tests."""
    target = load_target(target_spec)
    try:
        options = RunOptions(profile="ci", shrink=shrink, max_examples=max_examples)
        return run_property(properties()[invariant], target, options)
    finally:
        target.close()

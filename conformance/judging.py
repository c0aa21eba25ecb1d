"""One invariant judged, the same way on every front: a case pinned by the known-failures list is replayed
alone; else the example database's kept failures for this target are replayed first, and when one still
fails that is the verdict (in seconds, as Hypothesis does with its own database); else the property runs
afresh and the database keeps what it found."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from conformance.example_db import ExampleDatabase
from conformance.properties import Case, Property
from conformance.runner import Result, RunOptions, Status, replay_case, run_property
from conformance.targets import Target


def judge(
    prop: Property,
    target: Target,
    options: RunOptions,
    *,
    pinned: Case | None = None,
    examples: ExampleDatabase | None = None,
    checkpoint: Callable[[], None] | None = None,
) -> Result:
    """The verdict on ``prop`` (before the known-failures list is read)."""
    if pinned is not None:
        return replay_case(prop, target, pinned)
    if examples is None:
        return run_property(prop, target, options, checkpoint=checkpoint)
    again = _kept_failures(prop, target, examples, checkpoint)
    if again is not None:
        return again
    result = run_property(prop, target, options, checkpoint=checkpoint)
    examples.record(result)
    return result


def _kept_failures(
    prop: Property, target: Target, examples: ExampleDatabase, checkpoint: Callable[[], None] | None
) -> Result | None:
    """The kept failures that fail again, as one verdict; None when there are none (or none fails now)."""
    kept = examples.cases(prop.invariant.id)
    if not kept:
        return None
    started = time.perf_counter()
    failing: list[Result] = []
    for item in kept:
        if checkpoint is not None:
            checkpoint()
        replayed = replay_case(prop, target, item.case)
        if replayed.status in (Status.FAIL, Status.ERROR):
            failing.append(replayed)
    if not failing:
        return None
    note = (
        f" (from the example database: {len(failing)} of {len(kept)} kept failing example(s) failed again; "
        "the property was not searched afresh)"
    )
    found = [failure for replayed in failing for failure in replayed.failures]
    failures = [replace(failure, message=failure.message + note) for failure in found]
    status = Status.ERROR if any(f.kind == Status.ERROR for f in failures) else Status.FAIL
    first = failures[0]
    return Result(
        prop.invariant,
        status,
        first.message,
        case=first.case,
        evidence=first.evidence,
        seconds=time.perf_counter() - started,
        examples=len(kept),
        failures=failures,
    )

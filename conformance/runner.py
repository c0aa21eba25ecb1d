"""Run the catalogue's properties against a target and collect one result per invariant."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from conformance.catalogue import CATALOGUE, Invariant
from conformance.properties import Case, Evidence, PreconditionNotMet, Property, properties
from conformance.targets import Target, TargetError

PROFILES = ("ci", "thorough")


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    KNOWN_FAILURE = "known failure"
    UNEXPECTED_PASS = "known failure passed"
    NOT_CHECKABLE = "not checkable"

    @property
    def ok(self) -> bool:
        return self in (Status.PASS, Status.KNOWN_FAILURE, Status.NOT_CHECKABLE)


@dataclass
class Result:
    invariant: Invariant
    status: Status
    message: str = ""
    case: Case | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    examples: int = 0


@dataclass(frozen=True)
class RunOptions:
    profile: str = "ci"
    seed: int | None = None
    database: Path | None = None


def select(only: Iterable[str] | None) -> list[Property]:
    """The properties named by IDs or families (``WIRE-1``, ``WIRE``); all when ``only`` is empty."""
    registered = properties()
    wanted = [w.strip() for w in (only or []) if w.strip()]
    if not wanted:
        return list(registered.values())
    chosen: dict[str, Property] = {}
    for item in wanted:
        ids = [item] if item in CATALOGUE else [i for i, inv in CATALOGUE.items() if inv.family == item]
        if not ids:
            families = sorted({inv.family for inv in CATALOGUE.values()})
            raise KeyError(f"{item!r} is neither an invariant ID nor a family (families: {', '.join(families)})")
        for inv_id in ids:
            if inv_id not in registered:
                raise KeyError(f"{inv_id} has no property yet")
            chosen[inv_id] = registered[inv_id]
    return [registered[i] for i in CATALOGUE if i in chosen]


def hypothesis_settings(options: RunOptions, prop: Property) -> settings:
    if options.profile not in PROFILES:
        raise ValueError(f"unknown profile {options.profile!r}; use one of {', '.join(PROFILES)}")
    thorough = options.profile == "thorough"
    examples = 300 if thorough else (prop.max_examples or 40)
    derandomize = not thorough and options.seed is None
    # A derandomized run needs no database: the same inputs come back every time.
    database = DirectoryBasedExampleDatabase(str(options.database)) if options.database and not derandomize else None
    return settings(
        max_examples=examples,
        derandomize=derandomize,
        database=database,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    )


def run_property(prop: Property, target: Target, options: RunOptions) -> Result:
    missing = sorted(prop.needs - target.operations())
    if missing:
        return Result(
            prop.invariant, Status.NOT_CHECKABLE, f"not checkable on this target: it lacks {', '.join(missing)}"
        )
    last_failure: dict[str, Any] = {}
    counter = {"examples": 0, "unmet": 0}
    unmet_reasons: dict[str, int] = {}

    def attempt(case: Case) -> None:
        counter["examples"] += 1
        evidence = Evidence()
        try:
            prop.check(target, case, evidence)
        except PreconditionNotMet as exc:
            counter["unmet"] += 1
            unmet_reasons[exc.reason] = unmet_reasons.get(exc.reason, 0) + 1
        except BaseException:
            last_failure["case"], last_failure["evidence"] = case, evidence.items
            raise

    started = time.perf_counter()
    test = given(prop.cases(target))(attempt)
    test = hypothesis_settings(options, prop)(test)
    if options.seed is not None:
        test = seed(options.seed)(test)
    try:
        test()
    except TargetError as exc:
        return _failed(prop, f"the target misbehaved: {exc}", last_failure, started, counter["examples"])
    except AssertionError as exc:
        return _failed(prop, str(exc) or "assertion failed", last_failure, started, counter["examples"])
    except Exception as exc:  # a crash inside the check is a failure too, reported with its type
        return _failed(prop, f"{type(exc).__name__}: {exc}", last_failure, started, counter["examples"])
    seconds = time.perf_counter() - started
    if counter["examples"] and counter["unmet"] == counter["examples"]:
        return Result(
            prop.invariant,
            Status.NOT_CHECKABLE,
            f"not checkable on this target: in all {counter['examples']} examples {_reasons(unmet_reasons)}",
            seconds=seconds,
            examples=counter["examples"],
        )
    return Result(prop.invariant, Status.PASS, seconds=seconds, examples=counter["examples"] - counter["unmet"])


def _reasons(counts: dict[str, int]) -> str:
    return "; ".join(reason if n == 1 else f"{reason} ({n} examples)" for reason, n in counts.items())


def replay_case(prop: Property, target: Target, case: Case) -> Result:
    """Run one saved case, without Hypothesis."""
    missing = sorted(prop.needs - target.operations())
    if missing:
        return Result(
            prop.invariant, Status.NOT_CHECKABLE, f"not checkable on this target: it lacks {', '.join(missing)}"
        )
    evidence = Evidence()
    started = time.perf_counter()
    try:
        prop.check(target, case, evidence)
    except PreconditionNotMet as exc:
        return Result(prop.invariant, Status.NOT_CHECKABLE, f"not checkable on this case: {exc.reason}", case)
    except (AssertionError, TargetError, Exception) as exc:
        message = str(exc) if isinstance(exc, AssertionError) else f"{type(exc).__name__}: {exc}"
        return Result(prop.invariant, Status.FAIL, message, case, evidence.items, time.perf_counter() - started, 1)
    return Result(prop.invariant, Status.PASS, case=case, seconds=time.perf_counter() - started, examples=1)


def _failed(prop: Property, message: str, failure: dict[str, Any], started: float, examples: int) -> Result:
    return Result(
        prop.invariant,
        Status.FAIL,
        message,
        failure.get("case"),
        failure.get("evidence", {}),
        time.perf_counter() - started,
        examples,
    )


def run(
    props: list[Property],
    target: Target,
    options: RunOptions,
    progress: Callable[[int, int, Property], None] | None = None,
) -> list[Result]:
    results = []
    for index, prop in enumerate(props, start=1):
        if progress is not None:
            progress(index, len(props), prop)
        results.append(run_property(prop, target, options))
    return results

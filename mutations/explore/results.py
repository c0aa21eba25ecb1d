"""mutmut's results as this kit reads them: the status of each mutant exit code, the counts, the score.

Pure functions over mutmut 3.8.1's on-disk results (``mutants/**/*.py.meta`` and
``mutmut-cicd-stats.json``); running mutmut is :mod:`mutations.explore.score`'s job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

_Parsed = TypeVar("_Parsed")

MUTANTS_DIR = "mutants"
CICD_STATS = "mutmut-cicd-stats.json"

# mutmut 3.8.1 ``mutmut.stats.status_by_exit_code`` (the pinned version), mirrored so the per-file
# results can be read without importing mutmut. Any other exit code is "suspicious".
STATUS_BY_EXIT_CODE: dict[int | None, str] = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    2: "check was interrupted by user",
    None: "not checked",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "caught by type check",
    -11: "segfault",
    -9: "segfault",
}

# The fields of mutmut-cicd-stats.json and the status each counts.
CICD_FIELDS: dict[str, str] = {
    "killed": "killed",
    "survived": "survived",
    "no_tests": "no tests",
    "skipped": "skipped",
    "suspicious": "suspicious",
    "timeout": "timeout",
    "check_was_interrupted_by_user": "check was interrupted by user",
    "segfault": "segfault",
}


class NoScore(Exception):
    """mutmut produced no results a score could be computed from."""


def load_document(path: Path, what: str, parse: Callable[[Any], _Parsed]) -> _Parsed:
    """``parse`` of the JSON document at ``path``; NoScore naming ``what`` and the file when it cannot be read,
    and the file when ``parse`` refuses it (ValueError)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise NoScore(f"cannot read {what} {path}: {exc}") from None
    try:
        return parse(data)
    except ValueError as exc:
        raise NoScore(f"{path}: {exc}") from None


@dataclass(frozen=True)
class Counts:
    killed: int = 0
    survived: int = 0
    no_tests: int = 0
    timeout: int = 0
    caught_by_type_check: int = 0
    skipped: int = 0
    suspicious: int = 0
    segfault: int = 0
    interrupted: int = 0
    not_checked: int = 0

    @property
    def total(self) -> int:
        return (
            self.killed
            + self.survived
            + self.no_tests
            + self.timeout
            + self.caught_by_type_check
            + self.skipped
            + self.suspicious
            + self.segfault
            + self.interrupted
            + self.not_checked
        )

    @property
    def detected(self) -> int:
        """Mutants the tests (or the type checker) noticed; a timeout is a hang the suite would show."""
        return self.killed + self.timeout + self.caught_by_type_check

    @property
    def without_verdict(self) -> int:
        """Mutants with no trustworthy outcome: never run, interrupted, crashed or unclassifiable."""
        return self.not_checked + self.interrupted + self.segfault + self.suspicious

    def rows(self) -> list[tuple[str, int]]:
        return [
            ("killed", self.killed),
            ("timeout", self.timeout),
            ("caught by type check", self.caught_by_type_check),
            ("survived", self.survived),
            ("no tests", self.no_tests),
            ("skipped", self.skipped),
            ("suspicious", self.suspicious),
            ("segfault", self.segfault),
            ("interrupted", self.interrupted),
            ("not checked", self.not_checked),
            ("total", self.total),
        ]


def counts_from_statuses(statuses: Iterable[str]) -> Counts:
    """Count per-mutant statuses (the values of :data:`STATUS_BY_EXIT_CODE`)."""
    field_by_status = {
        "killed": "killed",
        "survived": "survived",
        "no tests": "no_tests",
        "timeout": "timeout",
        "caught by type check": "caught_by_type_check",
        "skipped": "skipped",
        "suspicious": "suspicious",
        "segfault": "segfault",
        "check was interrupted by user": "interrupted",
        "not checked": "not_checked",
    }
    tally = dict.fromkeys(field_by_status.values(), 0)
    for status in statuses:
        tally[field_by_status.get(status, "suspicious")] += 1
    return Counts(**tally)


def counts_from_cicd(stats: Mapping[str, Any], not_checked: int = 0) -> Counts:
    """Counts from a ``mutmut-cicd-stats.json`` dict.

    That file's ``total`` includes mutants it has no field for (caught by type check, not checked);
    ``not_checked`` comes from the per-file results and the rest of the gap is type-caught.
    """
    values: dict[str, int] = {}
    for key in (*CICD_FIELDS, "total"):
        value = stats.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise NoScore(f"{CICD_STATS}: {key!r} is {value!r}, not a count")
        values[key] = value
    listed = sum(values[key] for key in CICD_FIELDS)
    implicit = values["total"] - listed
    if implicit < 0 or not_checked < 0 or not_checked > implicit:
        raise NoScore(
            f"{CICD_STATS}: total {values['total']} does not add up (listed {listed}, not checked {not_checked})"
        )
    return Counts(
        killed=values["killed"],
        survived=values["survived"],
        no_tests=values["no_tests"],
        timeout=values["timeout"],
        caught_by_type_check=implicit - not_checked,
        skipped=values["skipped"],
        suspicious=values["suspicious"],
        segfault=values["segfault"],
        interrupted=values["check_was_interrupted_by_user"],
        not_checked=not_checked,
    )


def mutation_score(counts: Counts) -> float | None:
    """``detected / (total - skipped)``: survivors and "no tests" both count against it.

    None when there is nothing to score, or when some mutants have no verdict (the run is not
    complete, so no number may be reported for it).
    """
    scored = counts.total - counts.skipped
    if scored <= 0 or counts.without_verdict:
        return None
    return counts.detected / scored


def covered_score(counts: Counts) -> float | None:
    """The same, among mutants that had at least one covering test (no-tests left out)."""
    scored = counts.total - counts.skipped - counts.no_tests
    if scored <= 0 or counts.without_verdict:
        return None
    return counts.detected / scored

"""pytest plugin (entry point ``pytest11``): ``pytest --cascade-target T`` adds one test per
invariant of the catalogue to the user's own run.

    pytest --cascade-target python:mygateway.conformance:make_target --cascade-only WIRE
    pytest --cascade-target "exec:node adapter.mjs" --cascade-known-failures known.yaml

Without ``--cascade-target`` the plugin adds nothing. An invariant the target cannot check is
reported as skipped (with the missing operations), a listed known failure as xfail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.known_failures import KnownFailure, load_known_failures
from conformance.properties import Property
from conformance.runner import PROFILES, Result, RunOptions, Status, select
from conformance.targets import Target, load_target


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cascade-conformance")
    group.addoption(
        "--cascade-target",
        help="run the Cascade conformance suite against this target "
        "(python:PKG.MODULE:FACTORY, exec:COMMAND, or 'reference')",
    )
    group.addoption("--cascade-only", help="comma-separated invariant IDs or families")
    group.addoption("--cascade-profile", choices=PROFILES, default="ci", help="Hypothesis profile for the suite")
    group.addoption("--cascade-known-failures", help="JSON/YAML list of invariants expected to fail")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "invariant(id): the catalogue invariant (e.g. WIRE-1) a test pins")


class CascadeFailure(AssertionError):
    pass


class _Suite(pytest.Collector):
    def collect(self) -> list[pytest.Item]:
        return []


class InvariantItem(pytest.Item):
    def __init__(self, *, prop: Property, known: KnownFailure | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prop = prop
        self.known = known
        self.add_marker(pytest.mark.invariant(prop.invariant.id))

    def runtest(self) -> None:
        from conformance.cases import read_case
        from conformance.runner import replay_case, run_property

        target = _session_target(self.config)
        options = RunOptions(profile=self.config.getoption("--cascade-profile"))
        if self.known is not None and self.known.case is not None:
            result = replay_case(self.prop, target, read_case(self.known.case).case)
        else:
            result = run_property(self.prop, target, options)
        _judge(result, self.known)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CascadeFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return Path("cascade-conformance"), None, f"{self.prop.invariant.id}: {self.prop.invariant.statement}"


def _judge(result: Result, known: KnownFailure | None) -> None:
    if result.status == Status.NOT_CHECKABLE:
        pytest.skip(result.message)
    if result.status == Status.FAIL:
        if known is not None:
            pytest.xfail(f"known failure ({known.reason}): {result.message.splitlines()[0] if result.message else ''}")
        case = json.dumps(result.case, indent=2, ensure_ascii=False)[:8000] if result.case is not None else "(none)"
        inv = result.invariant
        raise CascadeFailure(f"{inv.id}: {inv.statement}\n\n{result.message}\n\nminimal counterexample:\n{case}")
    if result.status == Status.PASS and known is not None:
        raise CascadeFailure(
            f"{result.invariant.id} is listed as a known failure ({known.reason}) but passes: remove it from the list"
        )


_TARGET_KEY = pytest.StashKey[Target]()


def _session_target(config: pytest.Config) -> Target:
    if _TARGET_KEY not in config.stash:
        spec = config.getoption("--cascade-target")
        target = load_target(None if spec == "reference" else spec)
        config.stash[_TARGET_KEY] = target
        config.add_cleanup(target.close)
    return config.stash[_TARGET_KEY]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--cascade-target"):
        return
    only = config.getoption("--cascade-only")
    chosen = select(only.split(",") if only else None)
    known_path = config.getoption("--cascade-known-failures")
    known = load_known_failures(Path(known_path)) if known_path else {}
    suite = _Suite.from_parent(session, name="cascade-conformance")
    for prop in chosen:
        items.append(
            InvariantItem.from_parent(suite, name=prop.invariant.id, prop=prop, known=known.get(prop.invariant.id))
        )

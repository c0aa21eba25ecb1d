"""A derandomized run draws the same examples in any process: what the host has imported (the test
order, an xdist worker, a user's own modules) does not change them, so a verdict found in one run
comes back in the next."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from conformance.runner import RunOptions, run_property
from conformance.targets import load_target
from tests.conformance.cli.cli_support import NOTHING, toy

# Constants of the kind Hypothesis mines from local source and mixes into what it draws.
_LOCAL_MODULE = """
NAME = "zq-kit-mined-constant"
OTHER = "another-mined-constant-xy"
COUNT = 987654321
SIZE = 4242
RATIO = 0.4242
"""


def _drawn(seen: list[Any]) -> list[Any]:
    cases = st.fixed_dictionaries({"text": st.text(max_size=30), "n": st.integers(), "x": st.floats()})
    prop = toy("WIRE-1", lambda target, case, evidence: seen.append(case), cases=cases)
    target = load_target(NOTHING)
    try:
        run_property(prop, target, RunOptions())
    finally:
        target.close()
    return list(seen)


def test_the_examples_do_not_depend_on_the_local_modules_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _drawn([])
    path = tmp_path / "a_users_module.py"
    path.write_text(_LOCAL_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("a_users_module", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "a_users_module", module)

    after = _drawn([])
    assert after == before
    assert len(before) == 40  # the ci profile

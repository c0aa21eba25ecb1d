"""The one way tests start a fake LS in a fixture (a pytest plugin, registered by tests/conftest.py).

``start_fake_ls(**options)`` starts a :class:`FakeLSThread` with those options and returns it, started; every
fake it started stops when the test ends. ``start_module_fake_ls`` does the same for a module's fixtures:
its fakes stop when the module's tests are done, so a module pays the start-up once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs


def _starter() -> Iterator[StartFakeLs]:
    with ExitStack() as running:

        def start(**options: Any) -> FakeLSThread:
            return running.enter_context(FakeLSThread(**options))

        yield start


@pytest.fixture
def start_fake_ls() -> Iterator[StartFakeLs]:
    """Starts fake LSs that stop at the end of the test."""
    yield from _starter()


@pytest.fixture(scope="module")
def start_module_fake_ls() -> Iterator[StartFakeLs]:
    """Starts fake LSs that stop once the module's tests are done."""
    yield from _starter()

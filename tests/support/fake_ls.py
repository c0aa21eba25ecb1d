"""What tests share about the fake LS they start: the CSRF token the ``fake_ls`` fixture expects, and the
type of the ``start_fake_ls`` fixtures (tests/support/fake_ls_fixtures.py)."""

from __future__ import annotations

from typing import Any, Protocol

from fakels.server import FakeLSThread

CSRF_TOKEN = "windsurf-api-csrf-fixed-token"


class StartFakeLs(Protocol):
    """Starts a fake LS with the given :class:`FakeLSThread` options; the fixture stops it."""

    def __call__(self, **options: Any) -> FakeLSThread: ...

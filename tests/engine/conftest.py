"""Fixtures shared by the engine tests: one loopback image server per module, a fake LS and a client on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.session_log import SessionLog
from fakels.server import FakeLSThread
from tests.engine.cascade_support import CSRF, Harness
from tests.support.image_server import ImageServer, serve_images


@pytest.fixture(scope="module")
def server() -> Iterator[ImageServer]:
    with serve_images() as srv:
        yield srv


@pytest.fixture
def fresh(server: ImageServer) -> ImageServer:
    """The module's image server with its request log cleared."""
    server.requests.clear()
    return server


@pytest.fixture
def fake() -> Iterator[FakeLSThread]:
    """A fake LS with no script (modules that script one define their own ``fake``)."""
    with FakeLSThread(csrf_token=CSRF) as server:
        yield server


@pytest.fixture
def harness(fake: FakeLSThread) -> Iterator[Harness]:
    """A Cascade client on ``fake``, closed after the test."""
    h = Harness(fake)
    yield h
    h.client.close()


# The session tests' SQLite log file, and a log open on it.
@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def log(db: Path) -> Iterator[SessionLog]:
    with SessionLog(db) as opened:
        yield opened

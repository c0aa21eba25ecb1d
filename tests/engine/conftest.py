"""Fixtures shared by the engine tests: one loopback image server per module, a fake LS and a client on it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cascade import spawn as ls_spawn
from engine.sessions.log import SessionLog
from fakels.server import FakeLSThread
from tests.engine.cascade_support import CSRF, Harness
from tests.engine.process_support import kill_group_left_running
from tests.support.fake_ls import StartFakeLs
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
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    """A fake LS with no script (modules that script one define their own ``fake``)."""
    return start_fake_ls(csrf_token=CSRF)


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


@pytest.fixture(scope="session", autouse=True)
def _no_ls_left_running() -> Iterator[None]:
    """Every LS process group spawned in this process (by tests and module fixtures alike) is killed
    at the end of the session if it still runs. The code under test stops its LS itself, and tests
    check that; this catches a broken stop path (a mutant under mutmut, a failed test) that would
    otherwise leave the LS serving after pytest exits."""
    started: list[subprocess.Popen[bytes]] = []
    real_popen = ls_spawn._popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ls_spawn, "_popen", recorded)
        yield
    for proc in started:
        kill_group_left_running(proc)

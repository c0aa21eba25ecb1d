"""Shared fixtures: a fake LS per test on loopback ports chosen by the OS, gRPC stubs, and
the Hypothesis profiles (``ci`` is the default: derandomized, bounded, no deadline)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import grpc
import pytest
from hypothesis import HealthCheck, settings

from conformance.catalogue import invariant
from conformance.jobs import JOBS_ENV
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.server import FakeLSThread
from tests.support.fake_ls import CSRF_TOKEN, StartFakeLs

# The fake-LS fixtures every test tree uses (start_fake_ls, start_module_fake_ls).
pytest_plugins = ["tests.support.fake_ls_fixtures"]

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=40,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``cascade-engine serve`` keeps its default session log under $XDG_STATE_HOME: a temporary one for
    the whole run (in-process and in every child process, module-scoped launches included), so no test
    writes to the real state directory."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        yield


def pytest_configure(config: pytest.Config) -> None:
    """In-process runs of the command judge serially unless a test asks for workers (--jobs): many tests swap
    toy properties into this process's registry, which a worker process would not see, and the suite's own
    workers already fill the machine. Subprocesses inherit it too."""
    os.environ.setdefault(JOBS_ENV, "1")
    _keep_bytecode_apart(config)


def _keep_bytecode_apart(config: pytest.Config) -> None:
    """With PYTHONDONTWRITEBYTECODE set (some CI images set it), each of the hundreds of Python processes the
    suite starts (xdist workers, launched gateways, adapters, the command line) compiled the kit from source: a
    fifth of the suite's CPU. The session then keeps bytecode in a private temporary folder of its own, never
    beside the sources, and removes it at the end; the workers and every child process inherit the setting.
    The mutation runner's test runs set their own environment and still write none."""
    if not sys.dont_write_bytecode:
        return
    prefix = tempfile.mkdtemp(prefix="cascade-kit-pycache-")
    config.add_cleanup(lambda: shutil.rmtree(prefix, ignore_errors=True))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. Most of the suite waits on loopback sockets, launched gateways and
    their timers, so one worker per core left a 2-core machine half idle (9 min against 5 min, with the
    ``--dist worksteal`` of pyproject.toml)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * max(1, cores)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers("invariant"):
            invariant(marker.args[0])  # fails collection on an unknown ID


@pytest.fixture
def fake_ls(start_fake_ls: StartFakeLs) -> FakeLSThread:
    """A fresh fake LS with CSRF checking, gRPC on an OS-chosen loopback port."""
    return start_fake_ls(csrf_token=CSRF_TOKEN)


@pytest.fixture
def channel(fake_ls: FakeLSThread) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(fake_ls.address) as chan:
        yield chan


@pytest.fixture
def stub(channel: grpc.Channel) -> ls_grpc.LanguageServerServiceStub:
    return ls_grpc.LanguageServerServiceStub(channel)


@pytest.fixture
def csrf() -> list[tuple[str, str]]:
    """Call metadata carrying the CSRF token the fake expects."""
    return [("x-codeium-csrf-token", CSRF_TOKEN)]

"""Fixtures shared by the fakels tests."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from fakels.clock import ManualClock
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from tests.support.fake_ls import CSRF_TOKEN, StartFakeLs
from tests.support.wire_state.client import GrpcFake


@pytest.fixture(scope="module")
def grpc_fake(start_module_fake_ls: StartFakeLs) -> Iterator[GrpcFake]:
    """One fake LS per test module on a ManualClock, with a stub on a real gRPC channel; tests
    load their own scenario into it."""
    clock = ManualClock()
    fake = start_module_fake_ls(csrf_token=CSRF_TOKEN, clock=clock)
    with grpc.insecure_channel(fake.address) as channel:
        yield fake, clock, ls_grpc.LanguageServerServiceStub(channel)

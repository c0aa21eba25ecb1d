"""The LS channel, exactly: the CSRF header, client-side timers that cancel the call, and how
failures and wrong answers become LsCallError texts.

The fake LS answers ordinary calls; a bare in-process gRPC server on loopback plays an LS that
never answers or fails without a message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from engine.cascade.channel import CSRF_HEADER, LsChannel
from engine.cascade.errors import LsCallError
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.server import FakeLSThread
from tests.engine.cascade_support import CSRF

SERVICE = "exa.language_server_pb.LanguageServerService"


class SilentLs:
    """Heartbeat never answers (until released); GetUserStatus fails PERMISSION_DENIED with no message."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancelled = threading.Event()
        self.csrf: list[str | bytes] = []

        def never(request: bytes, context: grpc.ServicerContext) -> bytes:
            context.add_callback(self.cancelled.set)
            self.csrf.extend(v for k, v in context.invocation_metadata() if k == CSRF_HEADER)
            self.release.wait(5.0)
            return b""

        def refuse(request: bytes, context: grpc.ServicerContext) -> bytes:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "")
            return b""  # pragma: no cover - abort raises

        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Heartbeat": grpc.unary_unary_rpc_method_handler(never),
                "GetUserStatus": grpc.unary_unary_rpc_method_handler(refuse),
            },
        )
        self.server = grpc.server(ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")


@pytest.fixture
def silent() -> Iterator[SilentLs]:
    ls_server = SilentLs()
    ls_server.server.start()
    yield ls_server
    ls_server.release.set()
    ls_server.server.stop(None)


@pytest.fixture
def silent_channel(silent: SilentLs) -> Iterator[LsChannel]:
    channel = LsChannel(f"127.0.0.1:{silent.port}", CSRF)
    yield channel
    channel.close()


def test_a_call_carries_the_csrf_token_and_no_grpc_timeout(fake: FakeLSThread) -> None:
    channel = LsChannel(fake.address, CSRF)
    try:
        response = channel.call("Heartbeat", ls.HeartbeatRequest(), ls.HeartbeatResponse, 5.0)
    finally:
        channel.close()
    assert isinstance(response, ls.HeartbeatResponse)
    assert channel.address == fake.address
    (entry,) = fake.journal.entries()
    assert entry.method == "Heartbeat"
    assert entry.headers[CSRF_HEADER] == f"<redacted: matches, {len(CSRF)} characters>"
    assert "grpc-timeout" not in entry.headers


def test_an_expired_timer_cancels_the_call_on_the_server(silent: SilentLs, silent_channel: LsChannel) -> None:
    with pytest.raises(LsCallError) as info:
        silent_channel.call("Heartbeat", ls.HeartbeatRequest(), ls.HeartbeatResponse, 0.2)
    assert (info.value.method, info.value.code) == ("Heartbeat", "DEADLINE_EXCEEDED")
    assert info.value.details == "no answer within 0.2 s (cancelled)"
    assert str(info.value) == "Heartbeat failed: no answer within 0.2 s (cancelled)"
    assert silent.cancelled.wait(2.0)  # RST_STREAM CANCEL reached the server while its handler still waits
    assert not silent.release.is_set()
    assert silent.csrf == [CSRF]


@pytest.mark.parametrize("timeout_s", [0.0, -1.0])
def test_a_spent_or_negative_budget_still_makes_a_call_that_expires_at_once(
    silent_channel: LsChannel, timeout_s: float
) -> None:
    began = time.monotonic()
    with pytest.raises(LsCallError) as info:
        silent_channel.call("Heartbeat", ls.HeartbeatRequest(), ls.HeartbeatResponse, timeout_s)
    assert time.monotonic() - began < 0.5
    assert info.value.details == f"no answer within {timeout_s:g} s (cancelled)"


def test_a_failure_without_a_message_names_its_status(silent_channel: LsChannel) -> None:
    with pytest.raises(LsCallError) as info:
        silent_channel.call("GetUserStatus", ls.GetUserStatusRequest(), ls.GetUserStatusResponse, 2.0)
    assert (info.value.method, info.value.code, info.value.details) == ("GetUserStatus", "PERMISSION_DENIED", "")
    assert str(info.value) == "GetUserStatus failed: gRPC status PERMISSION_DENIED"


def test_an_answer_of_another_type_than_expected_is_an_internal_error(fake: FakeLSThread) -> None:
    channel = LsChannel(fake.address, CSRF)
    try:
        with pytest.raises(LsCallError) as info:
            channel.call("Heartbeat", ls.HeartbeatRequest(), ls.StartCascadeResponse, 5.0)
    finally:
        channel.close()
    assert (info.value.method, info.value.code, info.value.details) == (
        "Heartbeat",
        "INTERNAL",
        "unexpected response type HeartbeatResponse",
    )

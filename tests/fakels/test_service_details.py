"""Service details a client sees but no wire test asserted: the scenario's user status, the texts of
UNIMPLEMENTED and CANCELLED, a :path without any '/', and the legacy chat stream's final frame."""

from __future__ import annotations

import grpc
from google.protobuf import json_format

from fakels.proto.exa.chat_pb import chat_pb2 as chat
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import SERVICE_NAME
from fakels.scenario import Scenario, default_answer
from tests.fakels.core_support import SESSION, CoreCalls

KNOWN_METHODS = (
    "AddTrackedWorkspace, CancelCascadeInvocation, CancelCascadeInvocationAndWait, CancelCascadeSteps, "
    "GetCascadeTrajectory, GetCascadeTrajectoryGeneratorMetadata, GetCascadeTrajectorySteps, GetUserStatus, "
    "HandleCascadeUserInteraction, Heartbeat, InitializeCascadePanelState, RawGetChatMessage, "
    "SendUserCascadeMessage, StartCascade, UpdatePanelStateWithUserStatus, UpdateWorkspaceTrust"
)


def test_get_user_status_answers_the_scenario_user_status() -> None:
    status = {"user_status": {"pro": False, "name": "scripted user", "email": "u@example.invalid"}}
    with CoreCalls(Scenario(user_status=status)) as lsc:
        reply = lsc.call("GetUserStatus", ls.GetUserStatusRequest(metadata=common.Metadata(session_id=SESSION)))
    with CoreCalls() as default:
        default_reply = default.call("GetUserStatus", ls.GetUserStatusRequest())
    answer = ls.GetUserStatusResponse.FromString(reply.payloads[0])
    assert json_format.MessageToDict(answer, preserving_proto_field_name=True) == {
        "user_status": {"name": "scripted user", "email": "u@example.invalid"}
    }
    default_answer_message = ls.GetUserStatusResponse.FromString(default_reply.payloads[0])
    assert (default_answer_message.user_status.pro, default_answer_message.user_status.name) == (True, "fakels user")


def test_unknown_method_lists_the_service_methods() -> None:
    with CoreCalls() as lsc:
        reply = lsc.raw(f"/{SERVICE_NAME}/NoSuchMethod", [b""])
        entry = lsc.journal.last("NoSuchMethod")
    assert (reply.code, reply.message) == (
        grpc.StatusCode.UNIMPLEMENTED,
        f"fakels: unknown method '/{SERVICE_NAME}/NoSuchMethod'; the service {SERVICE_NAME} has: {KNOWN_METHODS}",
    )
    assert (entry.status, entry.request) == ("UNIMPLEMENTED", None)


def test_a_path_without_slash_is_journaled_whole() -> None:
    with CoreCalls() as lsc:
        reply = lsc.raw("StartCascade", [b""])
        entry = lsc.journal.last("StartCascade")
    assert reply.code == grpc.StatusCode.UNIMPLEMENTED
    assert reply.message.startswith("fakels: unknown method 'StartCascade'; the service ")
    assert (entry.method, entry.path, entry.status) == ("StartCascade", "StartCascade", "UNIMPLEMENTED")


def test_cancelled_call_text() -> None:
    with CoreCalls() as lsc:
        reply = lsc.raw(f"/{SERVICE_NAME}/StartCascade", [b"", b""], cancelled=True)
        entry = lsc.journal.last("StartCascade")
    message = (
        "fakels: the client cancelled the call or closed the connection before the request was complete "
        "(2 complete request messages received)"
    )
    assert (reply.code, reply.message) == (grpc.StatusCode.CANCELLED, message)
    assert (entry.status, entry.error) == ("CANCELLED", message)


def test_legacy_chat_stream_frames_on_the_wire() -> None:
    message = chat.ChatMessage()
    message.intent.generic.text = "first"
    other = chat.ChatMessage()
    other.action.generic.text = "second"
    request = chat.RawGetChatMessageRequest(chat_messages=[message, other])
    with CoreCalls() as lsc:
        reply = lsc.call("RawGetChatMessage", request)
    frames = [chat.RawGetChatMessageResponse.FromString(p) for p in reply.payloads]
    # Two in-progress pieces (where the answer is cut is the fake's free choice), then the final frame.
    assert [f.delta_message.in_progress for f in frames] == [True, True, False]
    assert all(f.delta_message.text for f in frames[:2])
    assert "".join(f.delta_message.text for f in frames) == default_answer("first\nsecond")
    # The final frame carries an empty delta_message (field 1, length 0): clients wait for it.
    assert reply.payloads[-1] == b"\x0a\x00"


def test_csrf_tokens_with_lone_surrogates_are_compared_not_crashed_on() -> None:
    """A --csrf-token argument that is not UTF-8 reaches Python as lone surrogates (surrogateescape);
    transports decode header bytes as latin-1, and Python callers of handle() may pass any str. Either
    side with a surrogate must give a clean verdict, never an exception out of handle()."""
    request = ls.HeartbeatRequest().SerializeToString()
    path = f"/{SERVICE_NAME}/Heartbeat"
    with CoreCalls(csrf_token="token-\udcff") as lsc:
        from_wire = lsc.raw(path, [request], headers={"x-codeium-csrf-token": "token-\xff"})
        exact = lsc.raw(path, [request], headers={"x-codeium-csrf-token": "token-\udcff"})
    assert (from_wire.code, from_wire.message) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "fakels: invalid CSRF token in x-codeium-csrf-token",
    )
    assert exact.code == grpc.StatusCode.OK
    with CoreCalls(csrf_token="token") as lsc:
        surrogate = lsc.raw(path, [request], headers={"x-codeium-csrf-token": "tok\udcffen"})
        entry = lsc.journal.last("Heartbeat")
    assert surrogate.code == grpc.StatusCode.UNAUTHENTICATED
    assert entry.headers["x-codeium-csrf-token"] == "<redacted: does not match, 6 characters>"

"""The fake language server's request pipeline, shared by every transport.

A transport (gRPC over grpcio, Connect over h2) hands over an :class:`IncomingCall` with the raw
request messages it framed; :meth:`FakeLanguageServer.handle` checks it (method, framing, size,
CSRF token, protobuf), answers it from the cascade state, records it in the journal, and returns
a :class:`Reply` the transport frames back. Nothing here raises to the transport: every problem
becomes a status code with a clear message and a journal entry.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from fakels.cascade import DEFAULT_MAX_CASCADES, LanguageServerState, LsError, RawPayload, TransportFault
from fakels.clock import Clock, SystemClock
from fakels.decoder import Decoded, RequestDecodeError, decode, message_to_dict
from fakels.journal import Journal, JournalEntry
from fakels.proto.exa.chat_pb import chat_pb2 as chat
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import RPCS, SERVICE_NAME, Rpc, rpc_for_path
from fakels.scenario import Scenario, default_answer

CSRF_HEADER = "x-codeium-csrf-token"
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class IncomingCall:
    transport: str
    path: str
    headers: Mapping[str, str]
    messages: Sequence[bytes]
    framing_error: str | None = None
    # The client went away (RST_STREAM, closed connection) before the request was complete.
    cancelled: bool = False


@dataclass(frozen=True)
class Reply:
    code: grpc.StatusCode = grpc.StatusCode.OK
    message: str = ""
    payloads: tuple[bytes, ...] = ()
    # An HTTP-level failure: the h2 gRPC port sends it as such, every other port answers ``code``.
    transport_fault: TransportFault | None = None

    @property
    def ok(self) -> bool:
        return bool(self.code == grpc.StatusCode.OK)


@dataclass
class ServerConfig:
    csrf_token: str | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    scenario: Scenario = field(default_factory=Scenario)
    # Journal the CSRF token's value (False: only whether it matched and its length, the default).
    record_secrets: bool = False
    # Cascade ids are fakels-cascade-<prefix>-0001, ...: None draws a random prefix per server, so
    # ids differ across processes; give one where a test needs predictable ids.
    cascade_id_prefix: str | None = None
    # At most this many cascades are kept; past it the one used longest ago is forgotten (it answers
    # as expired). The journal has bounds of its own (fakels.journal).
    max_cascades: int = DEFAULT_MAX_CASCADES


def _same_secret(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


def redacted_token(given: str, expected: str | None) -> str:
    """What the journal shows for a CSRF token: ``<redacted: matches, 32 characters>``."""
    if expected is None:
        return f"<redacted: not checked, {len(given)} characters>"
    verdict = "matches" if _same_secret(given, expected) else "does not match"
    return f"<redacted: {verdict}, {len(given)} characters>"


class FakeLanguageServer:
    """Transport-independent core: state, journal, checks and per-RPC answers."""

    def __init__(self, config: ServerConfig, journal: Journal | None = None, clock: Clock | None = None) -> None:
        self.config = config
        self.journal = journal if journal is not None else Journal()
        self.clock = clock if clock is not None else SystemClock()
        self.state = LanguageServerState(
            config.scenario, self.clock, id_prefix=config.cascade_id_prefix, max_cascades=config.max_cascades
        )

    def load_scenario(self, scenario: Scenario) -> None:
        self.config.scenario = scenario
        self.state.reset(scenario)

    def reset(self) -> None:
        self.state.reset(self.config.scenario)
        self.journal.clear()

    async def handle(self, call: IncomingCall) -> Reply:
        rpc = rpc_for_path(call.path)
        method = call.path.rsplit("/", 1)[-1] if rpc is None else rpc.name
        raw = b"".join(call.messages)
        base = {
            "transport": call.transport,
            "method": method,
            "path": call.path,
            "headers": self._journaled_headers(call.headers),
            "raw": raw,
        }

        rejection = self._check_call(call, rpc, raw)
        if rejection is not None:
            return self._record(base, None, rejection)
        assert rpc is not None
        try:
            decoded = decode(rpc.request_type, raw)
        except RequestDecodeError as exc:
            return self._record(base, None, Reply(grpc.StatusCode.INVALID_ARGUMENT, str(exc)))
        token_problem = self._csrf_problem(call.headers)
        if token_problem is not None:
            return self._record(base, decoded, Reply(grpc.StatusCode.UNAUTHENTICATED, token_problem))
        try:
            answer = self._answer(rpc, decoded.message)
        except LsError as exc:
            return self._record(base, decoded, Reply(exc.code, exc.message))
        if isinstance(answer, RawPayload) and answer.fault is not None:
            fault = answer.fault
            failed = Reply(fault.code, f"fakels: scripted {fault.describe()}", (answer.data,), fault)
            return self._record(base, decoded, failed, note=f"{fault.describe()} sent on purpose")
        if isinstance(answer, RawPayload):
            return self._record(
                base, decoded, Reply(payloads=(answer.data,)), note="malformed response sent on purpose"
            )
        replies = answer if isinstance(answer, list) else [answer]
        reply = self._record(
            base,
            decoded,
            Reply(payloads=tuple(m.SerializeToString() for m in replies)),
            response=message_to_dict(replies[0])
            if len(replies) == 1
            else {"stream": [message_to_dict(m) for m in replies]},
        )
        # Yield only once the call is journaled: a cancellation arriving here cannot lose the entry.
        await asyncio.sleep(0)
        return reply

    # ------------------------------------------------------------------ checks

    def _check_call(self, call: IncomingCall, rpc: Rpc | None, raw: bytes) -> Reply | None:
        if rpc is None:
            known = ", ".join(sorted(RPCS))
            return Reply(
                grpc.StatusCode.UNIMPLEMENTED,
                f"fakels: unknown method {call.path!r}; the service {SERVICE_NAME} has: {known}",
            )
        if call.cancelled:
            return Reply(
                grpc.StatusCode.CANCELLED,
                "fakels: the client cancelled the call or closed the connection before the request was complete "
                f"({len(call.messages)} complete request messages received)",
            )
        if call.framing_error is not None:
            return Reply(grpc.StatusCode.INVALID_ARGUMENT, f"fakels: malformed request framing: {call.framing_error}")
        if len(call.messages) != 1:
            what = (
                "no complete request message (empty body or truncated frame)"
                if not call.messages
                else (f"{len(call.messages)} request messages")
            )
            return Reply(
                grpc.StatusCode.INVALID_ARGUMENT, f"fakels: {rpc.name} takes exactly one request message, got {what}"
            )
        if len(raw) > self.config.max_request_bytes:
            return Reply(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"fakels: request of {len(raw)} bytes exceeds the limit of {self.config.max_request_bytes} bytes",
            )
        return None

    def _csrf_problem(self, headers: Mapping[str, str]) -> str | None:
        expected = self.config.csrf_token
        if expected is None:
            return None
        got = headers.get(CSRF_HEADER)
        if got is None:
            return f"fakels: missing CSRF token: send the {CSRF_HEADER} header"
        if not _same_secret(got, expected):
            return f"fakels: invalid CSRF token in {CSRF_HEADER}"
        return None

    def _journaled_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The call's headers as the journal keeps them: the CSRF token's value is replaced by whether
        it matched and its length (a journal readable over the control endpoint must not leak it),
        unless ``record_secrets`` is set."""
        kept = dict(headers)
        got = kept.get(CSRF_HEADER)
        if got is not None and not self.config.record_secrets:
            kept[CSRF_HEADER] = redacted_token(got, self.config.csrf_token)
        return kept

    def _record(
        self,
        base: dict[str, Any],
        decoded: Decoded | None,
        reply: Reply,
        *,
        response: dict[str, Any] | None = None,
        note: str | None = None,
    ) -> Reply:
        self.journal.append(
            JournalEntry(
                seq=-1,
                time=self.clock.now(),
                request=decoded.fields if decoded is not None else None,
                unknown_fields=decoded.unknown if decoded is not None else (),
                status=reply.code.name,
                error=reply.message,
                response=response,
                notes=(note,) if note else (),
                **base,
            )
        )
        return reply

    # ------------------------------------------------------------------ answers

    def _answer(self, rpc: Rpc, request: Message) -> Message | list[Message] | RawPayload:
        state = self.state
        match request:
            case ls.InitializeCascadePanelStateRequest():
                state.initialize_panel(request.metadata.session_id)
            case ls.UpdateWorkspaceTrustRequest():
                state.update_workspace_trust(request.workspace_trusted)
            case ls.StartCascadeRequest():
                return ls.StartCascadeResponse(cascade_id=state.start_cascade(request.metadata.session_id))
            case ls.SendUserCascadeMessageRequest():
                state.send(request)
            case ls.GetCascadeTrajectoryStepsRequest():
                steps = state.steps(request.cascade_id, request.step_offset)
                return self._override(request.cascade_id, rpc.name, ls.GetCascadeTrajectoryStepsResponse(steps=steps))
            case ls.GetCascadeTrajectoryRequest():
                cascade, status = state.run_status(request.cascade_id)
                answer = ls.GetCascadeTrajectoryResponse(
                    trajectory=cortex.CortexTrajectory(
                        trajectory_id=cascade.trajectory_id, cascade_id=cascade.cascade_id
                    ),
                    status=status,  # type: ignore[arg-type]
                    num_total_steps=len(cascade.steps),
                    num_total_generator_metadata=len(cascade.records),
                )
                return self._override(request.cascade_id, rpc.name, answer)
            case ls.GetCascadeTrajectoryGeneratorMetadataRequest():
                records = state.generator_metadata(request.cascade_id, request.generator_metadata_offset)
                usage = ls.GetCascadeTrajectoryGeneratorMetadataResponse(generator_metadata=records)
                return self._override(request.cascade_id, rpc.name, usage)
            case ls.GetUserStatusRequest():
                return json_format.ParseDict(dict(state.scenario.user_status), ls.GetUserStatusResponse())
            case chat.RawGetChatMessageRequest():
                return _legacy_chat_stream(request)
        return rpc.response_type()

    def _override(self, cascade_id: str, rpc_name: str, answer: Message) -> Message | RawPayload:
        """``answer``, unless the turn scripts another for this call of ``rpc_name``."""
        item = self.state.override_for(cascade_id, rpc_name)
        if item is None:
            return answer
        if item.http_status is not None or item.cut_frame:
            return RawPayload(answer.SerializeToString(), TransportFault(item.http_status, item.cut_frame))
        if item.error_code is not None:
            raise LsError(grpc.StatusCode[item.error_code], item.error_message or f"fakels: scripted {item.error_code}")
        return RawPayload(bytes.fromhex(item.payload_hex or ""))


def _legacy_chat_stream(request: chat.RawGetChatMessageRequest) -> list[Message]:
    prompt = "\n".join(
        m.intent.generic.text if m.HasField("intent") else m.action.generic.text for m in request.chat_messages
    )
    answer = default_answer(prompt)
    half = len(answer) // 2
    frames: list[Message] = [
        chat.RawGetChatMessageResponse(delta_message=chat.RawChatMessage(text=part, in_progress=True))
        for part in (answer[:half], answer[half:])
    ]
    frames.append(chat.RawGetChatMessageResponse(delta_message=chat.RawChatMessage(in_progress=False)))
    return frames

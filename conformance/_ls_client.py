"""A small gRPC client for a served language server, as a gateway would call it."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import grpc

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc

SERVICE_PREFIX = "/exa.language_server_pb.LanguageServerService/"


@dataclass(frozen=True)
class RawOutcome:
    code: str
    details: str


class LsClient:
    def __init__(self, address: str, csrf_token: str, session_id: str = "conformance-session") -> None:
        self._channel = grpc.insecure_channel(address)
        self.stub = ls_grpc.LanguageServerServiceStub(self._channel)
        self.csrf_token = csrf_token
        self.md = [("x-codeium-csrf-token", csrf_token)]
        self.meta = common.Metadata(ide_name="windsurf", api_key="conformance-key", session_id=session_id)

    def __enter__(self) -> LsClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._channel.close()

    def raw_call(self, path: str, body: bytes, csrf: str | None, streaming: bool = False) -> RawOutcome:
        """Send ``body`` unmodified to ``path``; the status the server answered."""
        metadata = [("x-codeium-csrf-token", csrf)] if csrf is not None else []
        try:
            if streaming:
                call = self._channel.unary_stream(path, request_serializer=None, response_deserializer=None)
                list(call(body, metadata=metadata, timeout=30))
            else:
                self._channel.unary_unary(path, request_serializer=None, response_deserializer=None)(
                    body, metadata=metadata, timeout=30
                )
        except grpc.RpcError as exc:
            return RawOutcome(exc.code().name, exc.details() or "")
        return RawOutcome("OK", "")

    def start(self) -> str:
        request = ls.StartCascadeRequest(metadata=self.meta, source=1, trajectory_type=1)  # type: ignore[arg-type]
        return str(self.stub.StartCascade(request, metadata=self.md, timeout=30).cascade_id)

    def send(self, cascade_id: str, text: str) -> None:
        request = ls.SendUserCascadeMessageRequest(
            cascade_id=cascade_id, items=[common.TextOrScopeItem(text=text)], metadata=self.meta
        )
        self.stub.SendUserCascadeMessage(request, metadata=self.md, timeout=30)

    def steps(self, cascade_id: str, offset: int) -> list[cortex.CortexTrajectoryStep]:
        request = ls.GetCascadeTrajectoryStepsRequest(cascade_id=cascade_id, step_offset=offset)
        return list(self.stub.GetCascadeTrajectorySteps(request, metadata=self.md, timeout=30).steps)

    def status(self, cascade_id: str) -> int:
        request = ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id)
        return int(self.stub.GetCascadeTrajectory(request, metadata=self.md, timeout=30).status)

    def records(self, cascade_id: str, offset: int) -> list[cortex.CortexStepGeneratorMetadata]:
        request = ls.GetCascadeTrajectoryGeneratorMetadataRequest(
            cascade_id=cascade_id, generator_metadata_offset=offset
        )
        return list(
            self.stub.GetCascadeTrajectoryGeneratorMetadata(request, metadata=self.md, timeout=30).generator_metadata
        )

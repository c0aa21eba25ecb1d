"""The RPC table of ``exa.language_server_pb.LanguageServerService``, read from the proto.

Every method, its request and response classes and its streaming kind come from the service
descriptor in the generated module, so the ``.proto`` files stay the only source of field and
method facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from fakels.proto.exa.language_server_pb import language_server_pb2

SERVICE_NAME = "exa.language_server_pb.LanguageServerService"


@dataclass(frozen=True)
class Rpc:
    """One method of the language-server service."""

    name: str
    request_type: type[Message]
    response_type: type[Message]
    server_streaming: bool

    @property
    def path(self) -> str:
        return f"/{SERVICE_NAME}/{self.name}"


def _load_rpcs() -> dict[str, Rpc]:
    service = language_server_pb2.DESCRIPTOR.services_by_name["LanguageServerService"]
    assert service.full_name == SERVICE_NAME
    return {
        method.name: Rpc(
            name=method.name,
            request_type=GetMessageClass(method.input_type),
            response_type=GetMessageClass(method.output_type),
            server_streaming=method.server_streaming,
        )
        for method in service.methods
    }


RPCS: dict[str, Rpc] = _load_rpcs()


def rpc_for_path(path: str) -> Rpc | None:
    """The RPC named by an HTTP/2 ``:path``, or None for anything outside the service."""
    prefix = f"/{SERVICE_NAME}/"
    if not path.startswith(prefix):
        return None
    return RPCS.get(path[len(prefix) :])

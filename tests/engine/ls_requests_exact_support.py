"""Requests read back by field number, as wire.md's tables list them, and a conversation engine on fakels.

``numbered`` serialises a message, parses the bytes with the real generated class and returns every
field present on the wire keyed by its field number: sub-messages become dicts, repeated fields lists,
enums their integer. Comparing a whole ``numbered`` dict with a wire.md table pins both the values the
builder sets and the absence of every field it must leave off.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from PIL import Image

from engine.cascade.client import CascadeClient, LsEndpoint
from engine.cascade.polling import PollSettings
from engine.conversation import ConversationEngine, TurnOptions
from engine.media.gate import ImageSettings
from engine.prompt.extract import Fetcher
from engine.prompt.metrics import ImageHistoryMetrics
from engine.reuse.fingerprint import FingerprintOptions, fingerprint_after
from engine.reuse.pool import ConversationPool
from fakels.clock import ManualClock
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import Scenario
from fakels.server import FakeLSThread

Numbered = dict[int, Any]


def _value(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return _fields(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return int(value)
    return value


def _fields(message: Message) -> Numbered:
    assert len(UnknownFieldSet(message)) == 0, "a builder must write only fields the schema declares"
    out: Numbered = {}
    for field, value in message.ListFields():
        if field.is_repeated:
            out[field.number] = [_value(field, item) for item in value]
        else:
            out[field.number] = _value(field, value)
    return out


def numbered(message: Message) -> Numbered:
    """``message`` as the receiver sees it: serialised, parsed by its class, keyed by field number."""
    return _fields(type(message).FromString(message.SerializeToString()))


def chat_call(call_id: str, name: str, arguments_json: str) -> common.ChatToolCall:
    return common.ChatToolCall(id=call_id, name=name, arguments_json=arguments_json)


def error_details(user: str = "", short: str = "", full: str = "") -> cortex.CortexErrorDetails:
    return cortex.CortexErrorDetails(user_error_message=user, short_error=short, full_error=full)


# ---------------------------------------------------------------------------- a conversation engine on fakels
# The fake LS and the client share a clock the client's poll sleeps move: chunk delays cost no wall time.

TOKEN = "conversation-exact-token"
MODEL = "claude-sonnet-4-6"
FP_OPTIONS = FingerprintOptions(route="responses")
POLL = PollSettings(poll_interval_s=0.05, max_wait_s=60.0)

Chat = list[dict[str, Any]]


@dataclass
class Rig:
    fake: FakeLSThread
    client: CascadeClient
    pool: ConversationPool
    engine: ConversationEngine
    metrics: ImageHistoryMetrics

    def options(self, **kwargs: Any) -> TurnOptions:
        defaults: dict[str, Any] = {
            "api_key": "k",
            "model_uid": MODEL,
            "caller_key": "caller-a",
            "fingerprint": FP_OPTIONS,
        }
        return TurnOptions(**{**defaults, **kwargs})

    def mark(self) -> int:
        return len(self.fake.journal)

    def sends(self, since: int = 0) -> list[ls.SendUserCascadeMessageRequest]:
        """The accepted Sends since ``since``, parsed from their raw bytes."""
        return [
            ls.SendUserCascadeMessageRequest.FromString(e.raw)
            for e in self.fake.journal.entries("SendUserCascadeMessage", since=since)
            if not e.rejected
        ]

    def offsets(self, method: str, since: int) -> list[int]:
        field = "step_offset" if method == "GetCascadeTrajectorySteps" else "generator_metadata_offset"
        return [
            int(e.request.get(field, 0))
            for e in self.fake.journal.entries(method, since=since)
            if e.request is not None
        ]


@contextmanager
def rig(
    scenario: Scenario | None = None,
    *,
    pool: ConversationPool | None = None,
    poll: PollSettings = POLL,
    fetcher: Fetcher | None = None,
    image_settings: ImageSettings | None = None,
) -> Iterator[Rig]:
    clock = ManualClock()
    with FakeLSThread(csrf_token=TOKEN, scenario=scenario or Scenario(), clock=clock) as fake:
        client = CascadeClient(LsEndpoint(fake.address, TOKEN), poll=poll, clock=clock.now, sleep=clock.advance)
        metrics = ImageHistoryMetrics()
        shared = pool if pool is not None else ConversationPool()
        engine = ConversationEngine(client, shared, fetcher=fetcher, image_settings=image_settings, metrics=metrics)
        with client:
            yield Rig(fake, client, shared, engine, metrics)


def stored_fp(messages: Chat, answer: dict[str, Any], caller: str = "caller-a") -> str:
    fp = fingerprint_after([*messages, answer], model_key=MODEL, caller_key=caller, options=FP_OPTIONS)
    assert fp is not None
    return fp


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def png(size: int = 8) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


def image_block(data: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{base64.b64encode(data).decode()}"}}


def image_size(b64: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(b64))) as image:
        return image.size

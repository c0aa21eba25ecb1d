"""fakels: a fake Cascade language server that decodes the real proto.

The public API, for tests, the conformance kit and benchmarks (other packages import these
names or the public modules below, never an underscored module of fakels):

- servers: :class:`FakeLS` (asyncio), :class:`FakeLSThread` (a context manager for tests);
- the journal: :class:`Journal`, :class:`JournalEntry`, :func:`read_jsonl`;
- scenarios: :class:`Scenario`, :class:`Turn`, :class:`Chunk` and friends,
  :func:`parse_scenario`, :func:`load_scenario`, :func:`scenario_schema` (the JSON Schema);
- the protocol: :data:`RPCS` (the service's RPC table read from the proto), :class:`Rpc`,
  :data:`SERVICE_NAME`, :func:`decode` (bytes to fields by name plus unknown fields),
  :func:`message_to_dict`; the messages themselves live in :mod:`fakels.proto`;
- the control endpoint's client: :class:`ControlClient`; clocks: :class:`ManualClock`.

Public modules: ``server``, ``journal``, ``scenario``, ``rpcs``, ``decoder``, ``steps`` (the
Cascade step builders the fake answers with), ``cascade``, ``clock``, ``control_client``,
``standin``, ``demo``, ``proto``.
"""

from fakels.clock import ManualClock
from fakels.control_client import ControlClient, ControlError
from fakels.decoder import Decoded, RequestDecodeError, UnknownField, decode, message_to_dict
from fakels.journal import Journal, JournalEntry, read_jsonl
from fakels.rpcs import RPCS, SERVICE_NAME, Rpc
from fakels.scenario import (
    Chunk,
    Fault,
    NativeStep,
    ResponseOverride,
    Scenario,
    ScenarioError,
    ToolCall,
    Turn,
    Usage,
    load_scenario,
    parse_scenario,
    scenario_schema,
)
from fakels.server import FakeLS, FakeLSThread

__all__ = [
    "RPCS",
    "SERVICE_NAME",
    "Chunk",
    "ControlClient",
    "ControlError",
    "Decoded",
    "FakeLS",
    "FakeLSThread",
    "Fault",
    "Journal",
    "JournalEntry",
    "ManualClock",
    "NativeStep",
    "RequestDecodeError",
    "ResponseOverride",
    "Rpc",
    "Scenario",
    "ScenarioError",
    "ToolCall",
    "Turn",
    "UnknownField",
    "Usage",
    "decode",
    "load_scenario",
    "message_to_dict",
    "parse_scenario",
    "read_jsonl",
    "scenario_schema",
]

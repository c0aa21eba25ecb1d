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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each public name and the module it lives in: importing ``fakels`` (or ``fakels.distribution``, which every
# console script loads first) costs nothing until a name is used; the server pulls in grpc.
_LAZY: dict[str, str] = {
    "Chunk": "fakels.scenario",
    "ControlClient": "fakels.control_client",
    "ControlError": "fakels.control_client",
    "Decoded": "fakels.decoder",
    "FakeLS": "fakels.server",
    "FakeLSThread": "fakels.server",
    "Fault": "fakels.scenario",
    "Journal": "fakels.journal",
    "JournalEntry": "fakels.journal",
    "ManualClock": "fakels.clock",
    "NativeStep": "fakels.scenario",
    "RPCS": "fakels.rpcs",
    "RequestDecodeError": "fakels.decoder",
    "ResponseOverride": "fakels.scenario",
    "Rpc": "fakels.rpcs",
    "SERVICE_NAME": "fakels.rpcs",
    "Scenario": "fakels.scenario",
    "ScenarioError": "fakels.scenario",
    "ToolCall": "fakels.scenario",
    "Turn": "fakels.scenario",
    "UnknownField": "fakels.decoder",
    "Usage": "fakels.scenario",
    "decode": "fakels.decoder",
    "load_scenario": "fakels.scenario",
    "message_to_dict": "fakels.decoder",
    "parse_scenario": "fakels.scenario",
    "read_jsonl": "fakels.journal",
    "scenario_schema": "fakels.scenario",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fakels' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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

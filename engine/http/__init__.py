"""The HTTP front: an OpenAI-compatible server (chat completions, Responses, sessions, models, ledger,
metrics) in front of the Cascade turn.

:class:`Gateway` wires a whole gateway from a :class:`GatewayConfig` (engine, pool, cache, ledger, store,
sessions) and serves it on a loopback port (:class:`ServedGateway`); :class:`HttpSettings` holds the front's
keys and limits; :func:`run_serve` is ``cascade-engine serve``. The route modules stand on
:mod:`engine.http.front` (:class:`Caller`, :class:`ChatEvent`, :class:`FrontHooks`) and never import each
other or :mod:`engine.http.app`.
"""

from __future__ import annotations

from engine.http.app import (
    DEFAULT_HEARTBEAT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT_TURNS,
    HttpSettings,
    build_app,
    caller_id_for_key,
)
from engine.http.front import Caller, ChatEvent, FrontHooks, Sink
from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from engine.http.responses_items import stored_output
from engine.http.responses_shapes import OutputBuilder
from engine.http.serve import PROG, ServeOptions, run_serve

__all__ = [
    "DEFAULT_HEARTBEAT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENT_TURNS",
    "PROG",
    "Caller",
    "ChatEvent",
    "FrontHooks",
    "Gateway",
    "GatewayConfig",
    "HttpSettings",
    "OutputBuilder",
    "ServeOptions",
    "ServedGateway",
    "Sink",
    "build_app",
    "caller_id_for_key",
    "run_serve",
    "stored_output",
]

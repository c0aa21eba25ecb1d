"""The gRPC client to the Cascade language server: one turn from warm-up to usage (wire.md).

:class:`CascadeClient` runs a turn (:class:`CascadeTurnRequest` in, :class:`CascadeTurnResult` out) against
an :class:`LsEndpoint`; :class:`PollSettings` paces its polling; :func:`spawn_ls` starts a language server
the way real gateways do. Requests are built in :mod:`engine.cascade.requests`, tool history becomes
Cascade steps in :mod:`engine.cascade.tool_steps`, usage is read in :mod:`engine.cascade.usage`, and every
failure is a :class:`CascadeError`.
"""

from __future__ import annotations

from engine.cascade.client import CascadeClient, CascadeTurnRequest, CascadeTurnResult, LsEndpoint, ResumeState
from engine.cascade.errors import CascadeError
from engine.cascade.polling import CascadeDelta, PollSettings
from engine.cascade.requests import ClientIdentity, ModelRef, PlannerOptions, build_metadata, send_request
from engine.cascade.spawn import LsSpawnError, spawn_ls
from engine.cascade.steps_delta import delta_start_for
from engine.cascade.tool_steps import build_additional_steps
from engine.cascade.usage import GeneratorUsage, parse_generator_metadata

__all__ = [
    "CascadeClient",
    "CascadeDelta",
    "CascadeError",
    "CascadeTurnRequest",
    "CascadeTurnResult",
    "ClientIdentity",
    "GeneratorUsage",
    "LsEndpoint",
    "LsSpawnError",
    "ModelRef",
    "PlannerOptions",
    "PollSettings",
    "ResumeState",
    "build_additional_steps",
    "build_metadata",
    "delta_start_for",
    "parse_generator_metadata",
    "send_request",
    "spawn_ls",
]

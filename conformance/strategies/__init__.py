"""Hypothesis strategies: the shared ones re-exported here, one module per family beside them.

- :mod:`conformance.strategies.text`: unicode texts, JSON values, tool-call arguments;
- :mod:`conformance.strategies.scenarios`: fakels scenarios (turns, chunks, faults, records);
- ``wire``, ``img``, ``off``, ``so``, ``acc``, ``store``, ``att``: the cases each family's properties
  draw, one module per family of the catalogue.

Strategies are small and composable; a family's cases are plain JSON, so a shrunk counterexample
is a case file that replays without Hypothesis.
"""

from conformance.strategies.scenarios import (
    DELAYS,
    EXPIRED_MESSAGES,
    NATIVE_KINDS,
    PANEL_MESSAGES,
    UNTRUSTED_MESSAGES,
    chunks,
    faults,
    native_bodies,
    native_steps,
    records,
    response_overrides,
    scenarios,
    tool_calls,
    turns,
    usages,
)
from conformance.strategies.text import (
    SPECIAL_CHARS,
    SPECIAL_TEXTS,
    identifiers,
    json_arguments,
    json_values,
    large_json_arguments,
    prompts,
    unicode_text,
)

__all__ = [
    "DELAYS",
    "EXPIRED_MESSAGES",
    "NATIVE_KINDS",
    "PANEL_MESSAGES",
    "SPECIAL_CHARS",
    "SPECIAL_TEXTS",
    "UNTRUSTED_MESSAGES",
    "chunks",
    "faults",
    "identifiers",
    "json_arguments",
    "json_values",
    "large_json_arguments",
    "native_bodies",
    "native_steps",
    "prompts",
    "records",
    "response_overrides",
    "scenarios",
    "tool_calls",
    "turns",
    "unicode_text",
    "usages",
]

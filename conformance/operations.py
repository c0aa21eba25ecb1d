"""The component operations a target exposes to the suite.

An operation has a dotted name, a one-line contract, and JSON Schemas for its arguments and its
result; the same schemas type the adapter protocol (``exec:`` targets) on the wire. Adding an
operation is one entry here plus the methods implementing it on the reference target.

Bytes travel as base64 strings (``*_b64``) so every operation is plain JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class Operation:
    """``optional`` names result fields a target may not observe (a gateway without drop counters):
    a target declares the ones it gives (capability ``observes``), omits the others, and a property
    judges what was given and reports the rest as partial. ``capabilities`` types the other facts a
    target may declare for this operation."""

    name: str
    summary: str
    params: dict[str, Any]
    result: dict[str, Any]
    optional: tuple[str, ...] = ()
    capabilities: dict[str, Any] = field(default_factory=dict)

    @property
    def method_name(self) -> str:
        """The Python method implementing it on an in-process target: dots become underscores."""
        return self.name.replace(".", "_")


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": required if required is not None else list(properties),
    }


_UNKNOWN_FIELD = _object(
    {
        "path": {"type": "string"},
        "number": {"type": "integer", "minimum": 1},
        "wire_type": {"enum": ["varint", "fixed64", "len", "start-group", "end-group", "fixed32"]},
        "value": {},
    }
)

_OPERATIONS = (
    Operation(
        name="ls.decode_request",
        summary="Decode the raw protobuf request of a language-server method into field-named JSON, "
        "reporting every unknown field with its path.",
        params=_object({"method": {"type": "string"}, "raw_b64": {"type": "string"}}),
        result={
            "oneOf": [
                _object({"fields": {"type": "object"}, "unknown": {"type": "array", "items": _UNKNOWN_FIELD}}),
                _object({"rejected": {"type": "string"}}),
            ]
        },
        capabilities={
            "methods": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "description": "the language-server methods the decoder knows (default: every method the suite has)",
            }
        },
    ),
    Operation(
        name="ls.serve",
        summary="Start a fresh language server on loopback playing the given scenario document; "
        "answers its gRPC address and CSRF token.",
        params=_object({"scenario": {"type": "object"}, "manual_clock": {"type": "boolean"}}),
        result=_object({"address": {"type": "string"}, "csrf_token": {"type": "string"}}),
    ),
    Operation(
        name="ls.journal",
        summary="The requests the served language server received since sequence number `since`, "
        "as journal entries (method, status, request fields, unknown fields, raw_b64).",
        params=_object({"since": {"type": "integer", "minimum": 0}}),
        result=_object({"entries": {"type": "array", "items": {"type": "object"}}}),
    ),
    Operation(
        name="ls.advance_clock",
        summary="Move the served language server's manual clock forward.",
        params=_object({"seconds": {"type": "number", "minimum": 0}}),
        result=_object({}),
    ),
    Operation(
        name="ls.stop",
        summary="Stop the served language server.",
        params=_object({}),
        result=_object({}),
    ),
)

_DROPS = _object(
    {k: {"type": "integer", "minimum": 0} for k in ("cap", "bytes", "truncated", "no_vision", "unextractable")}
)
_MESSAGES = {"type": "array", "items": {"type": "object", "required": ["role"]}}
_ENV = {"type": "object", "additionalProperties": {"type": "string"}}
_USAGE = _object(
    {
        k: {"type": "integer", "minimum": 0}
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "entry_count")
    }
    | {"has_usage": {"type": "boolean"}}
)
_OFFSET = {"type": ["integer", "null"], "minimum": 0}

_ENGINE_OPERATIONS = (
    Operation(
        name="engine.build_send_request",
        summary="Build the SendUserCascadeMessage a gateway sends for an OpenAI-style conversation "
        "(fresh cascade, or the newest turn of a resume), with the history-image counters of that build.",
        params=_object(
            {
                "messages": _MESSAGES,
                "model_uid": {"type": "string", "minLength": 1},
                "tool_preamble": {"type": "string"},
                "native_mode": {"type": "boolean"},
                "is_resume": {"type": "boolean"},
                "env": _ENV,
            }
        ),
        result=_object(
            {"request_b64": {"type": "string"}, "attached": {"type": "integer", "minimum": 0}, "drops": _DROPS}
        ),
        optional=("attached", "drops"),
    ),
    Operation(
        name="engine.parse_generator_metadata",
        summary="Parse a GetCascadeTrajectoryGeneratorMetadataResponse: null only when it has no records.",
        params=_object({"raw_b64": {"type": "string"}}),
        result=_object({"usage": {"oneOf": [{"type": "null"}, _USAGE]}}),
    ),
    Operation(
        name="engine.store_offsets",
        summary="Check a pool entry with these offsets in and out again; answer the offsets it comes back with.",
        params=_object({"step_offset": {"type": "integer", "minimum": 0}, "generator_offset": _OFFSET}),
        result=_object({"step_offset": {"type": "integer", "minimum": 0}, "generator_offset": _OFFSET}),
    ),
    Operation(
        name="engine.play_turns",
        summary="Play a conversation through a fresh engine (empty pool) against the language server at "
        "ls_address: each turn appends its messages (usually one user message) to the conversation, runs it, and "
        "appends the engine's answer as the assistant message. Answers per turn what the engine ended with.",
        params=_object(
            {
                "ls_address": {"type": "string"},
                "csrf_token": {"type": "string"},
                "model_uid": {"type": "string", "minLength": 1},
                "native_mode": {"type": "boolean"},
                "turns": {"type": "array", "items": _MESSAGES},
            }
        ),
        result=_object(
            {
                "turns": {
                    "type": "array",
                    "items": _object(
                        {
                            "text": {"type": "string"},
                            "cascade_id": {"type": "string"},
                            "resumed": {"type": "boolean"},
                            "step_offset_next": {"type": "integer", "minimum": 0},
                            "generator_offset_next": _OFFSET,
                            "reuse_entry_invalidated": {"type": "boolean"},
                        }
                    ),
                }
            }
        ),
        # What the engine says about each turn is evidence for the report; verdicts come from the wire.
        optional=(
            "text",
            "cascade_id",
            "resumed",
            "step_offset_next",
            "generator_offset_next",
            "reuse_entry_invalidated",
        ),
    ),
)

_COUNT = {"type": "integer", "minimum": 0}
# The kit's ledger document: what a gateway exposes (reference: GET /v1/ledger) for ACC to judge.
# Token categories are the wire's generator-metadata categories, summed over turns that ran upstream.
LEDGER_SCHEMA = _object(
    {
        "tokens": _object({k: _COUNT for k in ("input", "output", "cache_read", "cache_write")}),
        "credits": {"type": "number", "minimum": 0},
        "served": _COUNT,
        "cache_served": _COUNT,
        "account_spend": {"type": "object", "additionalProperties": _COUNT},
        "row_count": _COUNT,
        "rows": {
            "type": "array",
            "items": _object(
                {
                    "model": {"type": "string"},
                    "success": {"type": "boolean"},
                    "cache_served": {"type": "boolean"},
                    "credit": {"type": "number", "minimum": 0},
                }
            ),
        },
    }
)

_GATEWAY_OPERATIONS = (
    Operation(
        name="gateway.start",
        summary="Start a fresh gateway (empty cache, ledger and pool) whose language server is the one at "
        "ls_address; answers the API keys (each a caller identity), the model name to use in requests and, "
        "optionally, where its usage counts the LS's cache-write tokens (prompt: in prompt_tokens; apart: not), "
        "after how many seconds it stops waiting on a running turn (wait_limit_s), its longest silence in a "
        "stream (heartbeat_s), another model it serves (other_model) and whether a resumed cascade gets the whole "
        "history again by design (resends_history).",
        params=_object({"ls_address": {"type": "string"}, "csrf_token": {"type": "string"}}),
        result=_object(
            {
                "api_keys": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                "model": {"type": "string", "minLength": 1},
                "cache_writes": {"enum": ["prompt", "apart"]},
                "wait_limit_s": {"type": "number", "exclusiveMinimum": 0},
                "heartbeat_s": {"type": "number", "exclusiveMinimum": 0},
                "other_model": {"type": "string", "minLength": 1},
                "resends_history": {"type": "boolean"},
            },
            required=["api_keys", "model"],
        ),
    ),
    Operation(
        name="gateway.chat",
        summary="Send one OpenAI chat-completions request (the body as given, `stream` included) with "
        "`Authorization: Bearer api_key`; answers the HTTP status and either the JSON body or, for an event "
        "stream, the data of every event in order (`[DONE]` included, heartbeat comments left out) and, "
        "optionally, the longest time the stream was silent (no line at all, comments included). With "
        "hang_up_after (capability hang_up), the client closes a stream's connection once it has read that many "
        "events, and answers the events it read.",
        params=_object(
            {
                "request": {"type": "object"},
                "api_key": {"type": "string"},
                "hang_up_after": {"type": "integer", "minimum": 1},
            },
            required=["request", "api_key"],
        ),
        capabilities={"hang_up": {"type": "boolean"}},
        result={
            "oneOf": [
                _object({"status": {"type": "integer"}, "body": {}}),
                _object(
                    {
                        "status": {"type": "integer"},
                        "events": {"type": "array", "items": {"type": "string"}},
                        "longest_silence_s": {"type": "number", "minimum": 0},
                    },
                    required=["status", "events"],
                ),
            ]
        },
    ),
    Operation(
        name="gateway.respond",
        summary="Send one OpenAI Responses request (POST /v1/responses, the body as given, `stream` included) "
        "with `Authorization: Bearer api_key`; answers the HTTP status and either the JSON body or, for an event "
        "stream, the data of every event in order (heartbeat comments left out).",
        params=_object({"request": {"type": "object"}, "api_key": {"type": "string"}}),
        result={
            "oneOf": [
                _object({"status": {"type": "integer"}, "body": {}}),
                _object({"status": {"type": "integer"}, "events": {"type": "array", "items": {"type": "string"}}}),
            ]
        },
    ),
    Operation(
        name="gateway.retrieve",
        summary="Read a stored response back (GET /v1/responses/{response_id}) as the caller of api_key, with the "
        "end user's per-user signal where the gateway reads one on a bodyless request (signal; null: none; "
        "absent: the signal the target's own caller with that key sends); answers the HTTP status and the JSON body.",
        params=_object(
            {
                "response_id": {"type": "string", "minLength": 1},
                "api_key": {"type": "string"},
                "signal": {"type": ["string", "null"]},
            },
            required=["response_id", "api_key"],
        ),
        result=_object({"status": {"type": "integer"}, "body": {}}),
    ),
    Operation(
        name="gateway.ledger",
        summary="The gateway's accounting ledger in the kit's ledger document (tokens by wire category, "
        "credits, served and cache-served counts, spend per upstream account, recent request rows).",
        params=_object({}),
        result=_object({"ledger": LEDGER_SCHEMA}),
    ),
    Operation(
        name="gateway.stop",
        summary="Stop the gateway started by gateway.start.",
        params=_object({}),
        result=_object({}),
    ),
)

_STORE_LIMITS = _object(
    {"max_messages": {"type": "integer", "minimum": 1}, "max_entry_bytes": {"type": "integer", "minimum": 1}}
)
_CALLER = {"type": "integer", "minimum": 0, "maximum": 1}
_ITEMS = {"type": "array", "items": {"type": "object"}}
_ANSWER = {
    "oneOf": [
        _object({"text": {"type": "string"}}),
        _object({"tool_call": _object({"name": {"type": "string", "minLength": 1}, "arguments": {"type": "string"}})}),
    ]
}

_STORE_OPERATIONS = (
    Operation(
        name="store.open",
        summary="Open a fresh, empty response store trimming to these limits (the most messages an entry keeps, "
        "and the entry byte budget its trimming works to).",
        params=_object({"limits": _STORE_LIMITS}),
        result=_object({}),
        capabilities={
            "fixed_limits": {
                **_STORE_LIMITS,
                "description": "the limits this store always has (a gateway launched with them): examples are "
                "drawn for these, and store.open is only called with them",
            },
            "shapes": {
                "type": "array",
                "items": {"enum": ["chat", "responses"]},
                "uniqueItems": True,
                "minItems": 1,
                "description": "the conversation shapes store.put takes: Chat messages, Responses items "
                "(default: both)",
            },
        },
    ),
    Operation(
        name="store.put",
        summary="Store a Responses turn for caller 0 or 1: the conversation in (Chat messages or Responses items) "
        "and the model's answer out (a text, or one tool call), as the target's Responses front stores a turn. "
        "Answers the entry's id and the output items the target appended after the conversation (as the client "
        "got them), or why the write was rejected.",
        params=_object({"messages": _ITEMS, "caller": _CALLER, "answer": _ANSWER}),
        result={
            "oneOf": [
                _object(
                    {
                        "id": {"type": "string", "minLength": 1},
                        "appended": _ITEMS,
                        "warnings": {"type": "array", "items": {"type": "string"}},
                    }
                ),
                _object({"rejected": {"type": "string", "minLength": 1}}),
            ]
        },
        optional=("warnings",),
    ),
    Operation(
        name="store.get",
        summary="Read an entry as `caller`: the stored conversation verbatim (notices included) and the answer "
        "text the target serves back from it as model output (null: none); or not found. A target that cannot "
        "give the stored items answers `replayed` instead: the prompt text of the Send it puts on the wire for "
        "a turn continuing the entry (what it replays is what it stored).",
        params=_object({"id": {"type": "string"}, "caller": _CALLER}),
        result={
            "oneOf": [
                _object({"messages": _ITEMS, "answer": {"type": ["string", "null"]}}),
                _object({"replayed": {"type": "string"}, "answer": {"type": ["string", "null"]}}),
                _object({"not_found": {"const": True}}),
            ]
        },
    ),
    Operation(
        name="store.delete",
        summary="Delete an entry as `caller`; answers whether an entry was deleted.",
        params=_object({"id": {"type": "string"}, "caller": _CALLER}),
        result=_object({"deleted": {"type": "boolean"}}),
    ),
)

_B64 = {"type": "string", "contentEncoding": "base64"}
_SESSION_ITEM = {
    "oneOf": [
        _object(
            {
                "type": {"const": "message"},
                "role": {"enum": ["system", "user", "assistant"]},
                "text": {"type": "string"},
            }
        ),
        _object(
            {
                "type": {"const": "tool_call"},
                "call_id": {"type": "string", "minLength": 1},
                "name": {"type": "string", "minLength": 1},
                "arguments": {"type": "string"},
            }
        ),
        _object(
            {
                "type": {"const": "tool_result"},
                "call_id": {"type": "string", "minLength": 1},
                "summary": {"type": "string"},
                "content": {"type": "string"},
                "is_error": {"type": "boolean"},
                "attachments": {
                    "type": "array",
                    "items": _object(
                        {
                            "type": {"const": "image"},
                            "payload": _object({"mime_type": {"type": "string"}, "data": _B64}),
                        }
                    ),
                },
            },
            required=["type", "call_id", "summary"],
        ),
    ]
}
_PRUNE = {
    "oneOf": [
        {"type": "null"},
        _object(
            {"protected_tokens": {"type": "integer", "minimum": 0}, "min_savings": {"type": "integer", "minimum": 0}}
        ),
    ]
}

_SESSION_OPERATIONS = (
    Operation(
        name="session.open",
        summary="Open a fresh session (empty history, its own session log) for a model with or without vision.",
        params=_object({"vision": {"type": "boolean"}}),
        result=_object({}),
    ),
    Operation(
        name="session.commit",
        summary="Commit items (messages, tool calls, tool results with image attachments, bytes as base64) to the "
        "session's history, as the engine commits a tool round: durably, before anything is built. With "
        "`fail_log_write` (a target declaring that capability) this commit's session-log write fails: answers why "
        "(`failed`), and the history must be left as it was.",
        params=_object(
            {"items": {"type": "array", "items": _SESSION_ITEM}, "fail_log_write": {"type": "boolean"}},
            required=["items"],
        ),
        result={"oneOf": [_object({}), _object({"failed": {"type": "string", "minLength": 1}})]},
        capabilities={
            "fail_log_write": {
                "type": "boolean",
                "description": "session.commit takes `fail_log_write: true`: the durable session-log write of that "
                "commit fails for real, the commit answers `failed` and leaves the history unchanged (ATT-1 "
                "judges it; without this capability that part of ATT-1 is reported as not judged)",
            }
        },
    ),
    Operation(
        name="session.build",
        summary="Build the next request's input from the session's history for an upstream (OpenAI Responses "
        "`input` items, or Chat `messages`), pruning with this configuration first when one is given "
        "(null: no new prune; earlier decisions still apply).",
        params=_object({"upstream": {"enum": ["responses", "chat"]}, "prune": _PRUNE}),
        result=_object({"request": {"type": "array", "items": {"type": "object"}}}),
    ),
    Operation(
        name="session.restore",
        summary="Drop the session's in-memory state and restore it from its session log (a restart).",
        params=_object({}),
        result=_object({}),
    ),
    Operation(
        name="session.compact",
        summary="An explicit compaction boundary: the history before item `retain_from` becomes one summary; "
        "prune decisions end.",
        params=_object({"summary": {"type": "string"}, "retain_from": {"type": "integer", "minimum": 0}}),
        result=_object({}),
    ),
    Operation(
        name="session.views",
        summary="What the session shows besides requests: the exploration view and the compaction input, as "
        "the text a reader (or the summarising model) gets.",
        params=_object({}),
        result=_object({"exploration": {"type": "string"}, "compaction_input": {"type": "string"}}),
    ),
)

# What a black-box gateway over HTTP can offer (conformance/targets/_http.py): chat, the Responses API (a
# gateway without it answers 404 there), the ledger when it exposes one (--ledger-path), the Send it builds
# for a conversation, read from the fake's wire, and its
# response store through the Responses API.
HTTP_TARGET_OPERATIONS = frozenset(
    {"gateway.chat", "gateway.respond", "gateway.retrieve", "gateway.ledger", "engine.build_send_request"}
    | {"store.open", "store.put", "store.get", "store.delete"}
)

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (*_OPERATIONS, *_ENGINE_OPERATIONS, *_GATEWAY_OPERATIONS, *_STORE_OPERATIONS, *_SESSION_OPERATIONS)
}


def capability_schema(op: Operation) -> dict[str, Any]:
    """What a target may declare for ``op``: ``observes`` (a subset of its optional result fields)
    and the operation's own facts; nothing else."""
    properties = dict(op.capabilities)
    if op.optional:
        properties["observes"] = {"type": "array", "items": {"enum": list(op.optional)}, "uniqueItems": True}
    return {"type": "object", "additionalProperties": False, "properties": properties}


def result_schema(op: Operation, observes: frozenset[str]) -> dict[str, Any]:
    """``op``'s result schema for a target observing ``observes``: each optional field it observes
    is required, each other optional field is not allowed (an undeclared field is an error)."""
    restricted: dict[str, Any] = _restrict(op.result, frozenset(op.optional), observes)
    return restricted


def _restrict(schema: Any, optional: frozenset[str], observes: frozenset[str]) -> Any:
    if isinstance(schema, list):
        return [_restrict(item, optional, observes) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _restrict(value, optional, observes) for key, value in schema.items()}
    properties = out.get("properties")
    if isinstance(properties, dict) and optional & set(properties):
        out["properties"] = {k: v for k, v in properties.items() if k not in optional or k in observes}
        out["required"] = [k for k in out.get("required", []) if k in out["properties"]]
    return out


def operation(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"unknown operation {name!r}; the protocol has: {', '.join(sorted(OPERATIONS))}") from None

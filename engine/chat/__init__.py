"""What a chat completion adds around the Cascade turn, without HTTP: tool markup for emulated
tools, structured output (schemas and the check of an answer), the response cache and the accounting
ledger.
"""

from __future__ import annotations

from engine.chat.cache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_MAX_BYTES
from engine.chat.cache import DEFAULT_MAX_ENTRIES as DEFAULT_CACHE_MAX_ENTRIES
from engine.chat.cache import DEFAULT_TTL_S as DEFAULT_CACHE_TTL_S
from engine.chat.cache import CachedAnswer, ResponseCache, cache_key
from engine.chat.ledger import DEFAULT_MAX_MODELS, DEFAULT_MAX_ROWS, Ledger
from engine.chat.structured_output import (
    ResponseFormatError,
    extract_json_payload,
    requested_schema,
    structured_output_violation,
    violation_error_body,
)
from engine.chat.tool_markup import (
    ParsedToolCall,
    ToolMarkupParser,
    ToolSpecError,
    parse_tool_markup,
    tool_preamble,
    validate_tools,
)

__all__ = [
    "DEFAULT_CACHE_MAX_BYTES",
    "DEFAULT_CACHE_MAX_ENTRIES",
    "DEFAULT_CACHE_TTL_S",
    "DEFAULT_MAX_MODELS",
    "DEFAULT_MAX_ROWS",
    "CachedAnswer",
    "Ledger",
    "ParsedToolCall",
    "ResponseCache",
    "ResponseFormatError",
    "ToolMarkupParser",
    "ToolSpecError",
    "cache_key",
    "extract_json_payload",
    "parse_tool_markup",
    "requested_schema",
    "structured_output_violation",
    "tool_preamble",
    "validate_tools",
    "violation_error_body",
]

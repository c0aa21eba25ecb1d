"""The system text that heads a Cascade prompt: system messages, compaction, and the context line.

client.js joins the ``system`` messages' contents with ``\\n``, trims the result, runs
``compactSystemPromptForCascade`` on it when it is non-empty, and then appends the line
``[Context: The underlying model serving this request is <model>, developed by <provider>.]``
when the model label names a known provider.

Only the documented parts of ``compactSystemPromptForCascade`` are implemented: removing
``x-anthropic-billing-header:`` lines and rewriting the sentence-initial ``You are `` to
``The assistant is `` (``neutralizeIdentityForCascade``). The Claude Code synopsis, its title-generation
exception, ``CASCADE_COMPACT_CLAUDE_SYSTEM`` and the brand/injection-word rewrites are not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.js import JS_SPACE_CLASS, js_trim
from engine.prompt.extract import content_to_string
from engine.prompt.messages import Message

# /^x-anthropic-billing-header:[^\n]*(?:\n|$)/gmi. With the m flag a JS ^ also matches after \r,
# U+2028 and U+2029; its /i (no u flag) never folds a non-ASCII character onto ASCII, hence re.ASCII.
_BILLING_HEADER = re.compile(
    r"(?:^|(?<=[\r\u2028\u2029]))x-anthropic-billing-header:[^\n]*(?:\n|\Z)",
    re.IGNORECASE | re.MULTILINE | re.ASCII,
)
# /(^|[\n.!?]\s*)You are /g with JS's \s; no m flag, so ^ is the start of the text only.
_YOU_ARE = re.compile(f"(\\A|[\\n.!?]{JS_SPACE_CLASS}*)You are ")

# client.js providerMap, in its key order: the first key the model label contains wins.
PROVIDERS: tuple[tuple[str, str], ...] = (
    ("claude", "Anthropic"),
    ("gpt", "OpenAI"),
    ("gemini", "Google"),
    ("deepseek", "DeepSeek"),
    ("grok", "xAI"),
    ("qwen", "Alibaba"),
    ("kimi", "Moonshot"),
    ("glm", "Zhipu"),
    ("swe", "Windsurf"),
)

_MODEL_PREFIX = re.compile(r"\AMODEL_", re.IGNORECASE | re.ASCII)


def strip_billing_headers(text: str) -> str:
    return _BILLING_HEADER.sub("", text)


def neutralize_identity(text: str) -> str:
    """Rewrites each sentence-initial ``You are `` to ``The assistant is ``."""
    return _YOU_ARE.sub(r"\1The assistant is ", text)


def compact_system_prompt(sys_text: str) -> str:
    """The documented part of ``compactSystemPromptForCascade`` (see the module docstring)."""
    if not sys_text:
        return sys_text
    return neutralize_identity(js_trim(strip_billing_headers(sys_text)))


def model_label(model_uid: str) -> str:
    """``MODEL_`` prefix removed, ``_`` turned into spaces, lower-cased."""
    return _MODEL_PREFIX.sub("", model_uid).replace("_", " ").lower()


def provider_for(label: str) -> str | None:
    return next((provider for key, provider in PROVIDERS if key in label), None)


def context_line(model_uid: str, display_model: str | None = None) -> str | None:
    label = model_label(model_uid)
    provider = provider_for(label)
    if provider is None:
        return None
    return f"[Context: The underlying model serving this request is {display_model or label}, developed by {provider}.]"


def build_system_text(system_messages: Sequence[Message], *, model_uid: str, display_model: str | None = None) -> str:
    """``sysText``: the system contents joined and compacted, then the context line (if any)."""
    sys_text = js_trim("\n".join(content_to_string(m.content) for m in system_messages))
    if sys_text:
        sys_text = compact_system_prompt(sys_text)
    context = context_line(model_uid, display_model)
    if context is not None:
        sys_text = f"{sys_text}\n{context}" if sys_text else context
    return sys_text

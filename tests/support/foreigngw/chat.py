"""``POST /v1/chat/completions``: refusals, then one turn, answered as a ``chat.completion`` or as
``chat.completion.chunk`` events (live when the text is delivered as is, buffered with tools or a
schema)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.foreigngw.entries import ASSISTANT, CALL, chat_conversation, has_text
from tests.support.foreigngw.http_io import GatewayError, Reply, bad_request, dumps, not_implemented
from tests.support.foreigngw.knobs import chat_knobs
from tests.support.foreigngw.lsclient import OnGrowth
from tests.support.foreigngw.markup import parse_tools
from tests.support.foreigngw.polling import PollWindows
from tests.support.foreigngw.runner import Answer, Runner, TurnRequest
from tests.support.foreigngw.settings import Settings
from tests.support.foreigngw.structured import CODE as NOT_CONFORMING
from tests.support.foreigngw.structured import chat_schema

UNSUPPORTED = ("seed", "logit_bias", "logprobs", "top_logprobs", "n")
PENALTIES = ("frequency_penalty", "presence_penalty")
MODELS = ("claude-sonnet-4-6", "claude-opus-4-7-medium", "gpt-5", "swe-1-5")
EMPTY_CONTENT = "The last user message has empty content; send text with images"


def _stop(settings: Settings, value: Any) -> tuple[str, ...]:
    """The stop sequences asked for; the lean personality serves none (400)."""
    if value is None:
        return ()
    if not settings.full:
        raise bad_request("stop is not supported by this gateway", "unsupported_parameter", param="stop")
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not 0 < len(stops) <= 4 or not all(isinstance(s, str) and s for s in stops):
        raise bad_request("stop must be a string or up to 4 strings", param="stop")
    return tuple(stops)


def cut_at_stop(settings: Settings, text: str, stops: tuple[str, ...]) -> str:
    """``text`` before the earliest stop sequence."""
    if settings.defect("stop-ignored"):
        return text  # the defect: accepted, then ignored
    ends = [text.find(s) for s in stops if s in text]
    return text[: min(ends)] if ends else text


def usage_document(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": answer.cached_tokens},
    }


def _finish(settings: Settings, answer: Answer) -> str:
    cut = answer.cut and not settings.defect("wait-limit-as-stop")  # the defect: a cut turn ends as a stop
    return "length" if cut else "tool_calls" if answer.calls else "stop"


def _tool_calls(answer: Answer) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in answer.calls
    ]


def turn_request(settings: Settings, caller: str | None, body: Any) -> TurnRequest:
    """The turn a chat body asks for, or the refusal it gets (nothing is sent upstream)."""
    if not isinstance(body, Mapping):
        raise bad_request("the request body must be a JSON object")
    given = [name for name in UNSUPPORTED if body.get(name) is not None]
    given += [name for name in PENALTIES if body.get(name) not in (None, 0)]
    if given:
        raise bad_request(f"Unsupported sampling parameter(s): {', '.join(given)}", "unsupported_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    if model not in MODELS:
        raise GatewayError(404, f"unknown model {model!r}", "invalid_request_error", "model_not_found")
    stop = _stop(settings, body.get("stop"))
    tools = parse_tools(body.get("tools"))
    conversation = chat_conversation(body.get("messages"))
    if not settings.full and (tools or conversation.has_tool_traffic()):
        raise not_implemented()
    current = conversation.current_index()
    if current < 0 or not has_text(conversation.entries[current].content):
        raise bad_request(EMPTY_CONTENT, "empty_user_content", param="messages")
    if conversation.entries[-1].kind in (ASSISTANT, CALL):
        raise bad_request("the conversation must end with a user or tool message", param="messages")
    schema = chat_schema(body.get("response_format"))
    return TurnRequest(caller, model, conversation, tools, schema, stop=stop, knobs=chat_knobs(body))


def handle(settings: Settings, runner: Runner, caller: str | None, body: Any, reply: Reply) -> None:
    request = turn_request(settings, caller, body)
    assert isinstance(body, Mapping)
    completion_id = f"chatcmpl-{secrets.token_hex(12)}"
    if body.get("stream") is not True:
        answer = runner.run(request)
        content = cut_at_stop(settings, answer.content, request.stop)
        message: dict[str, Any] = {"role": "assistant", "content": content or (None if answer.calls else "")}
        if answer.calls:
            message["tool_calls"] = _tool_calls(answer)
        choice = {"index": 0, "message": message, "finish_reason": _finish(settings, answer)}
        document = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [choice],
            "usage": usage_document(answer),
        }
        reply.json(200, document)
        return
    options = body.get("stream_options")
    include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
    _stream(settings, runner, request, _Chunks(reply, completion_id, request.model), include_usage)


@dataclass
class _Chunks:
    """The event stream of one completion; opened (with the role delta) at the first frame."""

    reply: Reply
    completion_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))
    opened: bool = False
    sent: str = ""

    def frame(self, delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> None:
        if not self.opened:
            self.opened = True
            self.reply.start_events()
            self.frame({"role": "assistant", "content": ""})
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        chunk = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **extra,
        }
        self.reply.event(dumps(chunk))

    def text(self, piece: str) -> None:
        self.frame({"content": piece})
        self.sent += piece

    def reasoning(self, piece: str) -> None:
        self.frame({"reasoning_content": piece})


def _holder(held: list[tuple[str, str]]) -> OnGrowth:
    return lambda thinking, text: held.append((thinking, text))


def _stream(settings: Settings, runner: Runner, request: TurnRequest, chunks: _Chunks, include_usage: bool) -> None:
    live = not request.tools and request.schema is None and not request.stop
    windows = PollWindows(chunks.text, chunks.reasoning, settings.polling)
    # With a schema (and no tools) what the polls found is held until the answer validates, then sent as it came.
    held: list[tuple[str, str]] = []
    on_growth = windows.found if live else (_holder(held) if not request.tools and not request.stop else None)
    try:
        answer = runner.run(request, on_growth, chunks.reply.connected)
    except GatewayError as exc:
        if exc.code == NOT_CONFORMING or chunks.opened:
            if not chunks.opened:
                chunks.reply.start_events()
            chunks.reply.event(dumps(exc.document))  # the one event; no [DONE]
            return
        raise
    if settings.defect("schema-stream-merged") and held:
        # The defect: the held answer released as one frame per channel, not as the polls found it.
        held = [("".join(thinking for thinking, _ in held), "".join(text for _, text in held))]
        windows.polling = False
        if settings.polling and held[0][0]:
            chunks.reasoning(held[0][0])
    for thinking, text in held:
        windows.found(thinking, text)
    windows.flush()
    content = cut_at_stop(settings, answer.content, request.stop)
    if content.startswith(chunks.sent) and len(content) > len(chunks.sent):
        chunks.text(content[len(chunks.sent) :])
    if answer.calls:
        deltas = [{"index": i, **call} for i, call in enumerate(_tool_calls(answer))]
        chunks.frame({"tool_calls": deltas})
    finish = _finish(settings, answer)
    if include_usage and settings.defect("usage-twice"):
        chunks.frame({}, finish, usage=usage_document(answer))  # the defect: usage on the finish frame too
    else:
        chunks.frame({}, finish)
    if include_usage:
        chunks.frame(None, usage=usage_document(answer))
    chunks.reply.event("[DONE]")

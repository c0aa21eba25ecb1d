"""One chat completion behind the HTTP front: cache, Cascade turn, tool calls, structured output, ledger.

:meth:`ChatService.run` is synchronous (the Cascade client is) and reports the answer as a sequence
of :class:`ChatEvent` values, which the HTTP layer turns into a completion body or SSE frames.

The rules it keeps (seed 001 D2 and D4, engine.md §4.B and §5.B):

* A cache hit adds no tokens, credits or spend; its row is flagged cache-served and still counts as
  served; the cached usage goes to the client.
* A request with a JSON Schema has its events buffered; a turn whose answer violates the schema
  ends as one typed error (no role, content or finish events), and is neither cached nor committed
  to the pool, while the usage it consumed upstream is recorded. A turn that delivered tool calls
  is not judged. Conforming buffered events are released in their original order.
* A turn that failed upstream or whose client went away is neither cached nor committed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.cascade.errors import CascadeError, LsCallError
from engine.cascade.polling import CascadeDelta
from engine.chat.cache import CachedAnswer, ResponseCache, cache_key
from engine.chat.ledger import Ledger
from engine.chat.stop import StopCut
from engine.chat.structured_output import extract_json_payload, structured_output_violation, violation_error_body
from engine.chat.tool_markup import ParsedToolCall, ToolMarkupParser, tool_preamble
from engine.conversation import ConversationEngine, PendingTurn, TurnOptions
from engine.http.chat_request import ChatRequest
from engine.http.errors import ApiError, upstream_error, upstream_rate_limited
from engine.http.front import Caller, ChatEvent, Sink
from engine.http.session_bridge import cascade_messages, session_items
from engine.http.sessions import Sessions, session_error
from engine.http.shapes import openai_usage, tool_call_object
from engine.js import js_stringify
from engine.reuse.fingerprint import FingerprintOptions

log = logging.getLogger("engine.http")

# How a turn ends when the gateway stopped waiting on it while the LS still ran.
CUT_END_REASONS = frozenset({"max_wait", "warm_stall"})
_JSON_HINT = "Respond with valid JSON only. No markdown, no code fences, no prose before or after the JSON value."


@dataclass
class _Turn:
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ParsedToolCall] = field(default_factory=list)


class ChatService:
    def __init__(
        self,
        engine: ConversationEngine,
        *,
        ledger: Ledger,
        cache: ResponseCache,
        account: str,
        upstream_api_key: str,
        native_mode: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sessions: Sessions | None = None,
    ) -> None:
        self.engine = engine
        self.sessions = sessions
        self.ledger = ledger
        self.cache = cache
        self.account = account
        self._upstream_api_key = upstream_api_key
        self._native_mode = native_mode
        self._clock = clock

    def run(
        self,
        request: ChatRequest,
        caller: Caller,
        emit: Sink,
        abort: threading.Event | None = None,
        *,
        use_cache: bool = True,
    ) -> None:
        """Run one turn, reporting it through ``emit``. ``use_cache=False`` neither reads nor fills the
        response cache (Responses turns: their answer is stored under a response id instead); neither does
        a turn in a durable session, whose committed history is part of what it sends."""
        started = self._clock()
        model = request.model.name
        use_cache = use_cache and request.session_id is None
        key = cache_key(caller.id, request.body) if use_cache and caller.scoped and self.cache.enabled else None
        cached = self.cache.get(key) if key is not None else None
        if cached is not None:
            self.ledger.record_request(model, True, 0, self.account, cache_served=True)
            _replay(cached, emit)
            return

        try:
            lowered = self._lowered(request, caller)  # commit before build: the session log first
        except ApiError as exc:
            self.ledger.record_request(model, False, self._ms(started), self.account)
            emit(ChatEvent("error", error=exc))
            return

        buffered: list[ChatEvent] | None = [] if request.schema is not None else None
        out: Sink = emit if buffered is None else buffered.append
        turn = _Turn()
        parser = ToolMarkupParser(id_seed=uuid.uuid4().hex) if request.tools else None
        stop = StopCut(request.stop)

        def emit_text(text: str) -> None:
            if text:
                turn.text.append(text)
                out(ChatEvent("content", text=text))

        def deliver_text(text: str) -> None:
            emit_text(stop.feed(text))

        def deliver_segments(segments: list[str | ParsedToolCall]) -> None:
            for segment in segments:
                if stop.hit:
                    return  # the answer ended at the stop sequence: nothing after it is delivered
                if isinstance(segment, ParsedToolCall):
                    turn.calls.append(segment)
                    out(ChatEvent("tool_call", call=segment))
                else:
                    deliver_text(segment)

        def on_delta(delta: CascadeDelta) -> None:
            if delta.kind == "thinking" and delta.text:
                turn.thinking.append(delta.text)
                out(ChatEvent("reasoning", text=delta.text))
            elif delta.kind == "text":
                if parser is not None:
                    deliver_segments(parser.feed(delta.text))
                else:
                    deliver_text(delta.text)
            elif (
                delta.kind == "tool_call"
                and delta.tool_call is not None
                and not delta.tool_call.native
                and not stop.hit
            ):
                call = delta.tool_call
                parsed = ParsedToolCall(id=call.id, name=call.name, arguments=call.arguments_json or "{}")
                turn.calls.append(parsed)
                out(ChatEvent("tool_call", call=parsed))

        out(ChatEvent("role"))
        try:
            pending = self.engine.run_uncommitted(
                request.messages,
                self._options(request, caller),
                on_delta=on_delta,
                abort=abort,
                lowered=lowered,
            )
        except CascadeError as exc:
            self.ledger.record_request(model, False, self._ms(started), self.account)
            emit(ChatEvent("error", error=_ls_failure(exc)))
            return
        if parser is not None:
            deliver_segments(parser.finish())
        emit_text(stop.finish())
        result = pending.outcome.result
        self.ledger.record_token_usage(result.usage)
        self.ledger.record_account_spend(self.account, result.usage)
        if abort is not None and abort.is_set():
            self.ledger.record_request(model, False, self._ms(started), self.account)
            return
        text = "".join(turn.text)
        if request.schema is not None and not turn.calls and text.strip():
            reason = structured_output_violation(extract_json_payload(text), request.schema)
            if reason is not None:
                self.ledger.record_request(model, False, self._ms(started), self.account)
                body = violation_error_body(reason)["error"]
                emit(ChatEvent("error", error=ApiError(502, body["message"], type=body["type"], code=body["code"])))
                return
        # The gateway stopped waiting while the LS still ran (its wait cap or a stall rule): the answer is cut
        # (TURN-5), and a cut turn is neither cached nor committed (TURN-2).
        cut = result.end_reason in CUT_END_REASONS
        finish = "length" if cut else "tool_calls" if turn.calls else "stop"
        usage = openai_usage(
            result.usage,
            prompt_chars=sum(len(str(m.get("content") or "")) for m in request.messages),
            completion_chars=len(text),
        )
        if not stop.hit and not cut:  # a cut answer is not what the cascade holds: the next turn must not resume it
            self._commit(pending, text, turn.calls)
        thinking = "".join(turn.thinking)
        if key is not None and not cut and not turn.calls and (text or thinking):
            self.cache.put(
                key, CachedAnswer(text=text, thinking=thinking, usage=usage, finish_reason=finish, model=model)
            )
        self.ledger.record_request(model, True, self._ms(started), self.account)
        for event in buffered or ():
            emit(event)
        emit(ChatEvent("finish", text=finish))
        emit(ChatEvent("usage", usage=usage))

    def _lowered(self, request: ChatRequest, caller: Caller) -> list[dict[str, Any]]:
        """What the prompt builder replays. In a durable session the request's new tool results are
        committed first and every tool result is lowered from the session (engine.http.sessions)."""
        vision = request.model.vision
        sessions = self.sessions
        if request.session_id is None or sessions is None or not sessions.enabled:
            return _with_json_hint(cascade_messages(request.messages, vision=vision), request)
        try:
            durable = sessions.commit(caller.id, request.session_id, session_items(request.messages))
        except Exception:
            log.exception("sessions: committing to %r failed", request.session_id)
            raise session_error("this request's tool results could not be committed") from None
        messages = cascade_messages(request.messages, vision=vision, durable=durable.results, pruned=durable.pruned)
        return _with_json_hint(messages, request)

    def _options(self, request: ChatRequest, caller: Caller) -> TurnOptions:
        preamble = "" if self._native_mode else tool_preamble(request.tools, request.tool_choice)
        return TurnOptions(
            api_key=self._upstream_api_key,
            model_uid=request.model.uid,
            tool_preamble=preamble,
            native_mode=self._native_mode,
            caller_key=caller.id,
            fingerprint=FingerprintOptions(
                emulate_tools=bool(preamble),
                tools=request.tools,
                tool_choice=request.tool_choice,
                tool_preamble=preamble,
            ),
        )

    @staticmethod
    def _commit(pending: PendingTurn, text: str, calls: list[ParsedToolCall]) -> None:
        """Check in under every shape a client may echo the answer in: text only, and with its tool
        calls with the text, null or empty content (clients differ; the cascade must resume for all).
        Null content stands for empty content too: the fingerprint reads both as no text."""
        shapes: list[dict[str, Any]] = [{"role": "assistant", "content": text}]
        if calls:
            tool_calls = [tool_call_object(call) for call in calls]
            shapes += [{"role": "assistant", "content": c, "tool_calls": tool_calls} for c in (text, None)]
        pending.commit(*shapes)

    def _ms(self, started: float) -> float:
        return (self._clock() - started) * 1000.0


def _ls_failure(exc: CascadeError) -> ApiError:
    """What the client gets when the LS failed the turn: its rate limit as a rate limit, else a 502."""
    message = f"The language server failed this turn: {exc}"
    if isinstance(exc, LsCallError) and exc.code == "RESOURCE_EXHAUSTED":
        return upstream_rate_limited(message)
    return upstream_error(message)


def _replay(cached: CachedAnswer, emit: Sink) -> None:
    emit(ChatEvent("role"))
    if cached.thinking:
        emit(ChatEvent("reasoning", text=cached.thinking))
    if cached.text:
        emit(ChatEvent("content", text=cached.text))
    emit(ChatEvent("finish", text=cached.finish_reason))
    emit(ChatEvent("usage", usage=dict(cached.usage)))


def _with_json_hint(messages: list[dict[str, Any]], request: ChatRequest) -> list[dict[str, Any]]:
    """applyJsonResponseHint: one system message ahead of the conversation for JSON requests."""
    if not request.wants_json:
        return messages
    hint = _JSON_HINT
    if request.schema is not None:
        hint += " Conform to this JSON Schema:\n" + (js_stringify(request.schema) or "{}")
    return [{"role": "system", "content": hint}, *messages]

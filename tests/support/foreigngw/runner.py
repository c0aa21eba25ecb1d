"""One turn of a conversation: the cool-down, the response cache, the conversation pool (resume
or fresh cascade), the LS calls, tool markup, the structured-output check and usage.

``full`` keeps a pool and a cache and reads usage from generator metadata; ``lean`` plays every
request on a fresh cascade and estimates usage from text lengths.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tests.support.foreigngw.entries import ASSISTANT, CALL, USER, Conversation, Entry
from tests.support.foreigngw.http_io import GatewayError, log
from tests.support.foreigngw.knobs import canonical
from tests.support.foreigngw.lsclient import LsClient, ModelError, OnGrowth, Polled, UpstreamError
from tests.support.foreigngw.markup import ToolCall, ToolSpec, split_calls
from tests.support.foreigngw.prompt import Limits, build_fresh, build_resume
from tests.support.foreigngw.settings import Settings
from tests.support.foreigngw.structured import not_conforming, violation

POOL_SIZE = 500
CACHE_SIZE = 500
IMAGE_KEY = "[image]"  # what the defect image-placeholder-key puts in the cache key for a data: image URL


@dataclass(frozen=True)
class TurnRequest:
    caller: str | None  # None: anonymous (scoped personality), never cached nor pooled
    model: str
    conversation: Conversation
    tools: tuple[ToolSpec, ...] = ()
    schema: Mapping[str, Any] | None = None
    resumable: bool = True
    stop: tuple[str, ...] = ()
    knobs: str = ""  # canonical JSON of the other fields that can change the answer (knobs.py)


@dataclass(frozen=True)
class Answer:
    content: str
    calls: tuple[ToolCall, ...]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    cut: bool = False  # the wait cap ended the turn (finish_reason length)


@dataclass(frozen=True)
class _Pooled:
    cascade_id: str
    step_offset: int
    generator_offset: int


def _as_objects(content: Any) -> Any:
    """A parts list as a JavaScript gateway concatenates one: each part '[object Object]'."""
    return "".join("[object Object]" for _ in content) if isinstance(content, list) else content


def _tools_key(tools: tuple[ToolSpec, ...]) -> list[Any]:
    return [[t.name, t.description, t.parameters] for t in tools]


def _data_url(value: Any) -> bool:
    return isinstance(value, str) and value.strip()[:5].lower() == "data:"


def _image_placeholders(content: Any) -> Any:
    """``content`` with every ``data:`` image URL (a string ``image_url`` or its ``url``) as IMAGE_KEY."""
    if not isinstance(content, list):
        return content
    parts: list[Any] = []
    for block in content:
        reference = block.get("image_url") if isinstance(block, Mapping) else None
        if _data_url(reference):
            block = {**block, "image_url": IMAGE_KEY}
        elif isinstance(reference, Mapping) and _data_url(reference.get("url")):
            block = {**block, "image_url": {**reference, "url": IMAGE_KEY}}
        parts.append(block)
    return parts


class Runner:
    def __init__(self, settings: Settings, ls: LsClient) -> None:
        self._settings = settings
        self._ls = ls
        self._lock = threading.Lock()
        self._cool_until = 0.0
        self._pool: OrderedDict[str, _Pooled] = OrderedDict()
        self._cache: OrderedDict[str, Answer] = OrderedDict()
        self._call_ids = itertools.count(1)
        self._limits = Limits(settings.max_history_images, settings.max_history_image_bytes, settings.max_history_bytes)

    # ------------------------------------------------------------------ cool-down

    def check_cooldown(self) -> None:
        """429 while the gateway cools down after its LS's rate limit."""
        with self._lock:
            remaining = self._cool_until - time.monotonic()
        if remaining > 0:
            raise GatewayError(
                429,
                "account cooling down",
                "rate_limit_error",
                "rate_limited",
                retry_after_ms=max(1, math.ceil(remaining * 1000)),
            )

    def _cool_down(self, failure: UpstreamError) -> None:
        with self._lock:
            self._cool_until = time.monotonic() + self._settings.cooldown_s
        log(f"upstream failure ({failure}); cooling down for {self._settings.cooldown_s:g} s")

    def _unbilled(self) -> bool:
        return self._settings.defect("cache-hit-without-usage")

    # ------------------------------------------------------------------ one turn

    def run(
        self, request: TurnRequest, on_growth: OnGrowth | None = None, still_wanted: Callable[[], bool] | None = None
    ) -> Answer:
        """Play the request's turn (or replay it from the cache). ``on_growth`` gets what each poll
        found (only pass it when the text is delivered as is: no tools, no schema). A turn whose client
        left (``still_wanted`` says no once it is played) is neither cached nor resumed."""
        full = self._settings.full and request.caller is not None
        cache_key = self._cache_key(request) if full else None
        if cache_key is not None:
            with self._lock:
                hit = self._cache.get(cache_key)
            if hit is not None:
                return replace(hit, prompt_tokens=0, completion_tokens=0, cached_tokens=0) if self._unbilled() else hit
        pooled = self._take_pooled(request) if full and request.resumable else None
        try:
            self._ls.warm_up()
            polled, cascade_id, generator_offset, prompt = self._play_keeping_failures(
                request, pooled, on_growth, cache_key
            )
        except UpstreamError as exc:
            if self._settings.defect("error-as-empty-200") and exc.method != "SendUserCascadeMessage":
                return Answer("", (), 0, 0)  # the defect: a failed poll taken as the end of an empty answer
            if exc.code == "RESOURCE_EXHAUSTED":  # its account is rate limited: it rests it a while
                self._cool_down(exc)
                raise GatewayError(
                    429, f"upstream rate limited: {exc}", "rate_limit_error", "rate_limited", retry_after_ms=1000
                ) from exc
            raise GatewayError(
                502, f"upstream language server error: {exc}", "upstream_error", "upstream_error"
            ) from exc
        except ModelError as exc:
            raise GatewayError(502, f"upstream model error: {exc}", "upstream_error", "model_error") from exc
        content = polled.text
        calls: tuple[ToolCall, ...] = ()
        if request.tools:
            content, calls = split_calls(polled.text, lambda: f"call_{next(self._call_ids)}")
        answer, records = self._with_usage(content, calls, prompt, polled.text, cascade_id, generator_offset)
        answer = replace(answer, cut=polled.cut)
        if request.schema is not None and not calls and not self._settings.defect("no-schema-validation"):
            reason = violation(content, request.schema)
            if reason is not None:
                log(f"structured output not conforming: {reason}")
                raise not_conforming(reason)
        # A cut turn is neither cached nor resumed (the chat defect wait-limit-as-stop takes it for a stop).
        kept = not answer.cut or self._settings.defect("wait-limit-as-stop")
        if full and kept and (still_wanted is None or still_wanted()):
            self._commit(
                request, answer, _Pooled(cascade_id, polled.step_offset, generator_offset + records), cache_key
            )
        return answer

    def _play(
        self, request: TurnRequest, pooled: _Pooled | None, on_growth: OnGrowth | None
    ) -> tuple[Polled, str, int, str]:
        tools = bool(request.tools)
        if pooled is not None:
            built = build_resume(request.conversation)
            try:
                self._ls.send(pooled.cascade_id, built.text, built.images, request.model, tools=tools)
            except UpstreamError as exc:
                if exc.method != "SendUserCascadeMessage" or not exc.expired:
                    raise
                log(f"resume of {pooled.cascade_id} rejected ({exc.details}); fresh cascade with the full history")
            else:
                # The defect resume-from-zero polls the resumed cascade from its first step.
                offset = 0 if self._settings.defect("resume-from-zero") else pooled.step_offset
                polled = self._ls.run_turn(pooled.cascade_id, offset, on_growth)
                return polled, pooled.cascade_id, pooled.generator_offset, built.text
        attach = not tools and not self._settings.defect("history-image-placeholder")
        built = build_fresh(
            request.model,
            self._as_sent(request.conversation),
            request.tools,
            self._limits,
            attach_history=attach,
            one_line=self._settings.framing == "one-line",
        )
        if any(built.dropped.values()) or built.attached:
            counts = " ".join(f"{k}={v}" for k, v in built.dropped.items())
            log(f"history images attached={built.attached} dropped: {counts}")
        cascade_id = self._ls.start()
        self._ls.send(cascade_id, built.text, built.images, request.model, tools=tools)
        return self._ls.run_turn(cascade_id, 0, on_growth), cascade_id, 0, built.text

    def _as_sent(self, conversation: Conversation) -> Conversation:
        """The conversation a fresh Send is built from; the REQ-1 defects lose parts of it."""
        entries = conversation.entries
        if self._settings.defect("last-user-only"):
            entries = entries[conversation.current_index() :]
        if self._settings.defect("parts-as-objects"):
            entries = [replace(entry, content=_as_objects(entry.content)) for entry in entries]
        return replace(conversation, entries=list(entries))

    def _play_keeping_failures(
        self, request: TurnRequest, pooled: _Pooled | None, on_growth: OnGrowth | None, cache_key: str | None
    ) -> tuple[Polled, str, int, str]:
        """``_play``; with the defect failed-turn-kept, a turn the LS failed leaves its (empty) answer cached."""
        try:
            return self._play(request, pooled, on_growth)
        except (UpstreamError, ModelError):
            if cache_key is not None and self._settings.defect("failed-turn-kept"):
                with self._lock:
                    self._cache[cache_key] = Answer("", (), 0, 0)
            raise

    def _with_usage(
        self, content: str, calls: tuple[ToolCall, ...], prompt: str, text: str, cascade_id: str, offset: int
    ) -> tuple[Answer, int]:
        """The answer with its usage, and how many generator records the read returned."""
        if not self._settings.full:
            estimate = Answer(content, calls, max(1, math.ceil(len(prompt) / 4)), max(1, math.ceil(len(text) / 4)))
            return estimate, 0
        usage = self._ls.usage(cascade_id, offset)
        if usage is None:
            return Answer(content, calls, 0, 0), 0
        # Cache reads are prompt tokens served from the cache; cache writes are not counted (its policy: apart).
        prompt_tokens = usage.input_tokens + usage.cache_read_tokens
        answer = Answer(content, calls, prompt_tokens, usage.output_tokens, usage.cache_read_tokens)
        return answer, usage.records

    # ------------------------------------------------------------------ pool and cache

    def _pool_key(self, caller: str | None, request: TurnRequest, entries: list[Entry]) -> str:
        """The caller, the model and the conversation so far (a cascade answers with one model)."""
        if self._settings.defect("user-only-fingerprint"):
            # The defect user-only-fingerprint: the user turns only (no system, tools, answers, calls or results).
            return canonical([caller, request.model, [e.key() for e in entries if e.kind == USER]])
        parts = [request.conversation.system, _tools_key(request.tools), [e.key() for e in entries]]
        return canonical([caller, request.model, parts])

    def _cache_key(self, request: TurnRequest) -> str:
        """Everything that can change the answer: the caller, the model, the whole conversation, the
        schema, the tools, the stop sequences and the knobs."""
        placeholders = self._settings.defect("image-placeholder-key")
        entries = [
            # The defect image-placeholder-key: every data: image URL is one constant, whatever its bytes.
            [e.kind, _image_placeholders(e.content) if placeholders else e.content, e.name, e.arguments, e.call_id]
            for e in request.conversation.entries
        ]
        conversation = [request.conversation.system, entries]
        # The defect cache-key-without-caller: the key is the body's alone, shared by every caller.
        caller = None if self._settings.defect("cache-key-without-caller") else request.caller
        tools = _tools_key(request.tools)
        return canonical(
            [caller, request.model, conversation, request.schema, tools, list(request.stop), request.knobs]
        )

    def _take_pooled(self, request: TurnRequest) -> _Pooled | None:
        entries = request.conversation.entries
        if len(entries) < 2 or request.conversation.current_index() != len(entries) - 1:
            return None
        key = self._pool_key(request.caller, request, entries[:-1])
        with self._lock:
            return self._pool.pop(key, None)

    def _commit(self, request: TurnRequest, answer: Answer, pooled: _Pooled, cache_key: str | None) -> None:
        """Remember the answered conversation's cascade (the pool) and the answer (the cache)."""
        answered = list(request.conversation.entries)
        if answer.content or not answer.calls:
            answered.append(Entry(ASSISTANT, answer.content))
        answered.extend(Entry(CALL, name=c.name, arguments=c.arguments, call_id=c.id) for c in answer.calls)
        with self._lock:
            self._pool[self._pool_key(request.caller, request, answered)] = pooled
            while len(self._pool) > POOL_SIZE:
                self._pool.popitem(last=False)
            if cache_key is not None:
                self._cache[cache_key] = answer
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)

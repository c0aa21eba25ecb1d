"""One chat turn through the engine: pool lookup, prompt build, Cascade turn, pool check-in.

This is the part of a gateway's chat handler that decides between a fresh cascade and a resume,
hands the client a rebuild for a rejected resume, and stores the offsets the turn ended at (an
unknown generator offset stays unknown). The HTTP front calls it; the conformance target does too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.cascade.client import CascadeClient, CascadeTurnRequest, CascadeTurnResult, ResumeState
from engine.cascade.polling import CascadeDelta
from engine.cascade.requests import ModelRef
from engine.cascade.steps_delta import delta_start_for
from engine.cascade.tool_steps import build_additional_steps
from engine.config import HistoryImageLimits
from engine.media.gate import ImageSettings, ImageVerdicts
from engine.prompt.build import PromptBuild, build_cascade_prompt
from engine.prompt.extract import Fetcher
from engine.prompt.messages import Message
from engine.prompt.metrics import METRICS, ImageHistoryMetrics
from engine.reuse.fingerprint import FingerprintOptions, fingerprint_after, fingerprint_before
from engine.reuse.pool import ConversationPool, Expected, PoolEntry

ChatMessage = Mapping[str, Any]


@dataclass(frozen=True)
class TurnOptions:
    api_key: str
    model_uid: str
    tool_preamble: str = ""
    native_mode: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    # The caller identity (an HTTP API key's owner): cascades are never shared between callers.
    caller_key: str = ""
    fingerprint: FingerprintOptions | None = None


@dataclass(frozen=True)
class TurnOutcome:
    result: CascadeTurnResult
    build: PromptBuild
    resumed_from: PoolEntry | None


@dataclass(frozen=True)
class PendingTurn:
    """A turn that ran but is not yet committed to the pool: the caller decides (a turn whose answer
    is unusable, e.g. it violates the requested JSON Schema, is never committed)."""

    outcome: TurnOutcome
    _commit: Callable[[Sequence[Mapping[str, Any]]], None]

    def commit(self, *assistant_messages: Mapping[str, Any]) -> None:
        """Check the cascade in under the conversation plus each of ``assistant_messages`` (aliases of
        one entry): the assistant turn as the client received it (text and tool calls) and the shapes a
        client may echo it in, so the next request finds the cascade again. Default: the answer text."""
        self._commit(assistant_messages)


class ConversationEngine:
    """Chat turns against one language server, reusing cascades through ``pool``."""

    def __init__(
        self,
        client: CascadeClient,
        pool: ConversationPool,
        *,
        fetcher: Fetcher | None = None,
        image_settings: ImageSettings | None = None,
        metrics: ImageHistoryMetrics = METRICS,
    ) -> None:
        self.client = client
        self.pool = pool
        self._fetcher = fetcher
        self._image_settings = image_settings
        self._metrics = metrics

    def run(self, messages: Sequence[ChatMessage], options: TurnOptions) -> TurnOutcome:
        """Run one turn and commit it to the pool under the answer text."""
        pending = self.run_uncommitted(messages, options)
        pending.commit()
        return pending.outcome

    def run_uncommitted(
        self,
        messages: Sequence[ChatMessage],
        options: TurnOptions,
        *,
        on_delta: Callable[[CascadeDelta], None] | None = None,
        abort: threading.Event | None = None,
        lowered: Sequence[ChatMessage] | None = None,
    ) -> PendingTurn:
        """Run one turn without committing it. ``lowered`` is what the prompt builder replays when it
        differs from ``messages`` (tool turns as text); fingerprints and tool steps use ``messages``."""
        ls_address = self.client.endpoint.address
        fp_before = fingerprint_before(
            messages, model_key=options.model_uid, caller_key=options.caller_key, options=options.fingerprint
        )
        entry = self.pool.checkout(
            fp_before, caller_key=options.caller_key, expected=Expected(api_key=options.api_key, ls_address=ls_address)
        )
        replayed = messages if lowered is None else lowered
        prompt_messages = [Message(str(m.get("role", "")), m.get("content")) for m in replayed]
        verdicts = ImageVerdicts()  # one request: its rebuild does not decode again what its build did

        def build(*, is_resume: bool, rebuild: bool = False) -> PromptBuild:
            return build_cascade_prompt(
                prompt_messages,
                model_uid=options.model_uid,
                tool_preamble=options.tool_preamble,
                native_mode=options.native_mode,
                is_resume=is_resume,
                rebuild=rebuild,
                limits=HistoryImageLimits.from_env(options.env),
                image_settings=self._image_settings or ImageSettings.from_env(options.env),
                fetcher=self._fetcher,
                env=options.env,
                metrics=self._metrics,
                verdicts=verdicts,
            )

        prompt = build(is_resume=entry is not None)
        steps = build_additional_steps(messages) if options.native_mode else []
        request = CascadeTurnRequest(
            api_key=options.api_key,
            model=ModelRef(uid=options.model_uid),
            text=prompt.text,
            images=prompt.images,
            planner_default=prompt.planner_default,
            native_mode=options.native_mode,
            tool_preamble=options.tool_preamble,
            additional_steps=steps,
            additional_steps_from=delta_start_for(messages) if steps else None,
            resume=_resume_state(entry),
            rebuild=(lambda: build(is_resume=True, rebuild=True)) if entry is not None else None,
            prompt_chars=sum(len(str(m.get("content") or "")) for m in replayed),
            abort=abort,
            on_delta=on_delta,
        )
        result = self.client.run_turn(request)

        def commit(answers: Sequence[Mapping[str, Any]]) -> None:
            shapes = answers or ({"role": "assistant", "content": result.text},)
            fingerprints = []
            for answer in shapes:
                fp = fingerprint_after(
                    [*messages, answer],
                    model_key=options.model_uid,
                    caller_key=options.caller_key,
                    options=options.fingerprint,
                )
                if fp is not None and fp not in fingerprints:
                    fingerprints.append(fp)
            self.pool.checkin(
                fingerprints,
                PoolEntry(
                    cascade_id=result.cascade_id,
                    session_id=result.session_id,
                    api_key=options.api_key,
                    ls_address=ls_address,
                    step_offset=result.step_offset_next,
                    generator_offset=result.generator_offset_next,
                    history_coverage=prompt.coverage,
                ),
                caller_key=options.caller_key,
            )

        return PendingTurn(TurnOutcome(result=result, build=prompt, resumed_from=entry), commit)


def _resume_state(entry: PoolEntry | None) -> ResumeState | None:
    if entry is None:
        return None
    generator = entry.generator_offset
    return ResumeState(
        cascade_id=entry.cascade_id,
        session_id=entry.session_id,
        step_offset=int(entry.step_offset),
        generator_offset=int(generator) if generator is not None else None,
    )

"""One chat turn through the engine: pool lookup, prompt build, Cascade turn, pool check-in.

This is the part of a gateway's chat handler that decides between a fresh cascade and a resume,
hands the client a rebuild for a rejected resume, and stores the offsets the turn ended at (an
unknown generator offset stays unknown). The HTTP front calls it; the conformance target does too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.cascade_client import CascadeClient, CascadeTurnRequest, CascadeTurnResult, ResumeState
from engine.config import HistoryImageLimits
from engine.extract import Fetcher
from engine.fingerprint import fingerprint_after, fingerprint_before
from engine.images import ImageSettings
from engine.ls_requests import ModelRef
from engine.messages import Message
from engine.pool import ConversationPool, Expected, PoolEntry
from engine.prompt import PromptBuild, build_cascade_prompt
from engine.steps_delta import delta_start_for
from engine.tool_steps import build_additional_steps

ChatMessage = Mapping[str, Any]


@dataclass(frozen=True)
class TurnOptions:
    api_key: str
    model_uid: str
    tool_preamble: str = ""
    native_mode: bool = False
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnOutcome:
    result: CascadeTurnResult
    build: PromptBuild
    resumed_from: PoolEntry | None


class ConversationEngine:
    """Chat turns against one language server, reusing cascades through ``pool``."""

    def __init__(
        self,
        client: CascadeClient,
        pool: ConversationPool,
        *,
        fetcher: Fetcher | None = None,
        image_settings: ImageSettings | None = None,
    ) -> None:
        self.client = client
        self.pool = pool
        self._fetcher = fetcher
        self._image_settings = image_settings

    def run(self, messages: Sequence[ChatMessage], options: TurnOptions) -> TurnOutcome:
        ls_address = self.client.endpoint.address
        fp_before = fingerprint_before(messages, model_key=options.model_uid)
        entry = self.pool.checkout(fp_before, expected=Expected(api_key=options.api_key, ls_address=ls_address))
        prompt_messages = [Message(str(m.get("role", "")), m.get("content")) for m in messages]

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
            prompt_chars=sum(len(str(m.get("content") or "")) for m in messages),
        )
        result = self.client.run_turn(request)
        after = [*messages, {"role": "assistant", "content": result.text}]
        self.pool.checkin(
            fingerprint_after(after, model_key=options.model_uid),
            PoolEntry(
                cascade_id=result.cascade_id,
                session_id=result.session_id,
                api_key=options.api_key,
                ls_address=ls_address,
                step_offset=result.step_offset_next,
                generator_offset=result.generator_offset_next,
                history_coverage=prompt.coverage,
            ),
        )
        return TurnOutcome(result=result, build=prompt, resumed_from=entry)


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

"""The engine's operations on the reference target: thin adapters from JSON to engine calls."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from engine.cascade import (
    CascadeClient,
    ClientIdentity,
    LsEndpoint,
    ModelRef,
    PlannerOptions,
    PollSettings,
    build_additional_steps,
    build_metadata,
    parse_generator_metadata,
    send_request,
)
from engine.config import HistoryImageLimits
from engine.conversation import ConversationEngine, TurnOptions
from engine.media import ImageSettings
from engine.prompt import ImageHistoryMetrics, Message, build_cascade_prompt
from engine.reuse import ConversationPool, PoolEntry

_FIXED_IDENTITY = ClientIdentity(os="linux", hardware="x86_64", extension_version="2.0.67", request_id=lambda: 1)
_API_KEY = "conformance-api-key"
_FAST_POLL_S = 0.002


class EngineOperations:
    def engine_build_send_request(
        self,
        messages: Sequence[Mapping[str, Any]],
        model_uid: str,
        tool_preamble: str,
        native_mode: bool,
        is_resume: bool,
        env: Mapping[str, str],
    ) -> dict[str, Any]:
        metrics = ImageHistoryMetrics()
        build = build_cascade_prompt(
            [Message(str(m.get("role", "")), m.get("content")) for m in messages],
            model_uid=model_uid,
            tool_preamble=tool_preamble,
            native_mode=native_mode,
            is_resume=is_resume,
            limits=HistoryImageLimits.from_env(env),
            image_settings=ImageSettings.from_env(env),
            fetcher=None,
            env=env,
            metrics=metrics,
        )
        options = PlannerOptions(
            model=ModelRef(uid=model_uid),
            native_mode=native_mode,
            planner_default=build.planner_default,
            tool_preamble="" if native_mode else tool_preamble,
        )
        request = send_request(
            cascade_id="conformance-cascade",
            text=build.text,
            meta=build_metadata(_FIXED_IDENTITY, _API_KEY, "conformance-session"),
            options=options,
            images=build.images,
            additional_steps=build_additional_steps(messages) if native_mode else (),
        )
        return {
            "request_b64": base64.b64encode(request.SerializeToString()).decode("ascii"),
            "attached": build.attached,
            "drops": build.drops.as_dict(),
        }

    def engine_parse_generator_metadata(self, raw_b64: str) -> dict[str, Any]:
        usage = parse_generator_metadata(base64.b64decode(raw_b64))
        return {"usage": None if usage is None else asdict(usage)}

    def engine_store_offsets(self, step_offset: int, generator_offset: int | None) -> dict[str, Any]:
        pool = ConversationPool()
        pool.checkin(
            "conformance-fp", PoolEntry(cascade_id="c", step_offset=step_offset, generator_offset=generator_offset)
        )
        entry = pool.checkout("conformance-fp")
        if entry is None:
            raise RuntimeError("the pool lost an entry checked in a moment ago")
        generator = entry.generator_offset
        return {
            "step_offset": int(entry.step_offset),
            "generator_offset": None if generator is None else int(generator),
        }

    def _new_pool(self) -> ConversationPool:
        """The pool one ``engine.play_turns`` call starts with (empty)."""
        return ConversationPool()

    def engine_play_turns(
        self,
        ls_address: str,
        csrf_token: str,
        model_uid: str,
        native_mode: bool,
        turns: Sequence[Sequence[Mapping[str, Any]]],
    ) -> dict[str, Any]:
        client = CascadeClient(
            LsEndpoint(ls_address, csrf_token),
            identity=_FIXED_IDENTITY,
            poll=PollSettings(poll_interval_s=_FAST_POLL_S),
            backoff_sleep=lambda _s: None,
        )
        engine = ConversationEngine(client, self._new_pool())
        results = []
        conversation: list[Mapping[str, Any]] = []
        try:
            for added in turns:
                conversation.extend(added)
                options = TurnOptions(api_key=_API_KEY, model_uid=model_uid, native_mode=native_mode)
                outcome = engine.run(conversation, options)
                result = outcome.result
                conversation.append({"role": "assistant", "content": result.text})
                results.append(
                    {
                        "text": result.text,
                        "cascade_id": result.cascade_id,
                        "resumed": outcome.resumed_from is not None,
                        "step_offset_next": result.step_offset_next,
                        "generator_offset_next": result.generator_offset_next,
                        "reuse_entry_invalidated": result.reuse_entry_invalidated,
                    }
                )
        finally:
            client.close()
        return {"turns": results}

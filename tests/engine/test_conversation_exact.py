"""Chat turns through ConversationEngine against fakels: what reaches the wire, and what the pool keeps.

The pool entry a turn leaves behind is compared field by field with the turn's result; the
Send the LS receives is parsed from its raw bytes with the generated class.
"""

from __future__ import annotations

import base64
import functools
import json
import threading
from dataclasses import replace

import pytest

from engine.cascade.errors import CascadeStallError
from engine.cascade.polling import CascadeDelta, PollSettings
from engine.media.fetch import FetchPolicy, fetch_image_url
from engine.media.gate import ENV_MAX_LONG_SIDE, ImageSettings
from engine.prompt.messages import Message, split_roles
from engine.reuse.pool import ConversationPool
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.scenario import Chunk, Scenario, Turn, Usage
from tests.engine.ls_requests_exact_support import (
    MODEL,
    Chat,
    assistant,
    image_block,
    image_size,
    numbered,
    png,
    rig,
    stored_fp,
)
from tests.support.image_server import ImageServer

CONTEXT = f"[Context: The underlying model serving this request is {MODEL}, developed by Anthropic.]\n\n"

# ---------------------------------------------------------------------------- the pool entry


def test_a_turn_is_checked_in_under_its_after_fingerprint_with_the_turn_state() -> None:
    conversation: Chat = [{"role": "user", "content": "hello there"}]
    with rig() as r:
        outcome = r.engine.run(conversation, r.options())
        sends = r.sends()
    result = outcome.result
    entry = r.pool.peek(stored_fp(conversation, assistant(result.text)))
    assert entry is not None
    assert outcome.resumed_from is None
    assert (entry.cascade_id, entry.session_id, entry.api_key, entry.ls_address, entry.caller_key) == (
        result.cascade_id,
        result.session_id,
        "k",
        r.fake.address,
        "caller-a",  # the pool's owner fence (engine.md: checkin(fp, entry, callerKey)): a stranger's checkout misses
    )
    fp = stored_fp(conversation, assistant(result.text))
    assert r.pool.checkout(fp, caller_key="caller-b") is None
    assert r.pool.peek(fp) is entry, "a stranger's miss leaves the entry in place"
    assert result.session_id
    assert result.step_offset_next > 0
    assert (entry.step_offset, entry.generator_offset) == (result.step_offset_next, 1)
    assert entry.history_coverage == outcome.build.coverage
    assert outcome.build.text == sends[0].items[0].text == CONTEXT + "hello there"
    assert len(r.pool) == 1


def test_commit_stores_under_each_given_shape_once() -> None:
    conversation: Chat = [{"role": "user", "content": "hello"}]
    echoed = assistant("the answer as the client echoes it")
    with rig() as r:
        pending = r.engine.run_uncommitted(conversation, r.options())
        pending.commit(echoed, dict(echoed))
    assert r.pool.peek(stored_fp(conversation, echoed)) is not None
    assert r.pool.peek(stored_fp(conversation, assistant(pending.outcome.result.text))) is None
    assert (len(r.pool), r.pool.stats().alias_writes) == (1, 0), "identical shapes are one key"


def test_commit_with_two_shapes_writes_one_alias() -> None:
    conversation: Chat = [{"role": "user", "content": "hello"}]
    with rig() as r:
        pending = r.engine.run_uncommitted(conversation, r.options())
        pending.commit(assistant("a"), assistant("b"))
    assert (len(r.pool), r.pool.stats().alias_writes) == (2, 1)


# ---------------------------------------------------------------------------- resume


def test_the_same_caller_resumes_with_the_stored_offsets_and_session() -> None:
    first: Chat = [{"role": "user", "content": "hello"}]
    with rig() as r:
        one = r.engine.run(first, r.options()).result
        entry = r.pool.peek(stored_fp(first, assistant(one.text)))
        second = [*first, assistant(one.text), {"role": "user", "content": "more"}]
        mark = r.mark()
        two = r.engine.run(second, r.options())
        send = r.sends(mark)[0]
        steps = r.offsets("GetCascadeTrajectorySteps", mark)
        meta = r.offsets("GetCascadeTrajectoryGeneratorMetadata", mark)
    assert entry is not None
    assert two.resumed_from is not None
    assert two.resumed_from.cascade_id == entry.cascade_id == two.result.cascade_id
    assert two.result.resumed
    assert send.items[0].text == "more", "a resume sends the newest turn only"
    assert send.metadata.session_id == one.session_id
    # Known offsets: no offset-0 snapshot, the polls start where turn 1 ended.
    assert set(steps) == {one.step_offset_next}
    assert meta == [1]


def test_an_unknown_generator_offset_is_counted_again_from_zero() -> None:
    first: Chat = [{"role": "user", "content": "hello"}]
    with rig() as r:
        one = r.engine.run(first, r.options()).result
        fp = stored_fp(first, assistant(one.text))
        entry = r.pool.checkout(fp)
        assert entry is not None
        r.pool.checkin(fp, replace(entry, generator_offset=None))
        mark = r.mark()
        two = r.engine.run([*first, assistant(one.text), {"role": "user", "content": "more"}], r.options())
        meta = r.offsets("GetCascadeTrajectoryGeneratorMetadata", mark)
    assert two.resumed_from is not None
    assert two.resumed_from.generator_offset is None
    assert meta == [0, 1], "a snapshot from 0 counts the one record, then the turn reads from 1"


@pytest.mark.parametrize("change", ["api_key", "ls"])
def test_a_cascade_is_not_resumed_with_another_api_key_or_on_another_ls(change: str) -> None:
    first: Chat = [{"role": "user", "content": "hello"}]
    pool = ConversationPool()
    with rig(pool=pool) as r:
        one = r.engine.run(first, r.options()).result
        second = [*first, assistant(one.text), {"role": "user", "content": "more"}]
        if change == "api_key":
            two = r.engine.run(second, r.options(api_key="k2"))
        else:
            with rig(pool=pool) as other:
                two = other.engine.run(second, other.options())
    assert two.resumed_from is None
    assert two.result.cascade_id != one.cascade_id
    assert not two.result.reuse_entry_invalidated


def test_another_fingerprint_context_does_not_resume() -> None:
    first: Chat = [{"role": "user", "content": "hello"}]
    with rig() as r:
        one = r.engine.run(first, r.options()).result
        second = [*first, assistant(one.text), {"role": "user", "content": "more"}]
        two = r.engine.run(second, r.options(caller_key="caller-b"))
    assert two.resumed_from is None


def test_the_cold_stall_limit_scales_with_the_whole_conversation_not_the_resumed_text() -> None:
    # Limit = 0.5 s + 10 s per 1000 chars of conversation. Turn 2 sends only "go on" but the
    # conversation holds 2000+ chars: 20.5 s, so a first chunk after 2 s is no stall.
    poll = PollSettings(
        poll_interval_s=0.05,
        max_wait_s=60.0,
        cold_stall_base_s=0.5,
        cold_stall_per_chunk_s=10.0,
        cold_stall_chunk_chars=1000,
    )
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="ok"),)), Turn(chunks=(Chunk(text="late", delay_s=2.0),))))
    first: Chat = [{"role": "user", "content": "x" * 2000}]
    with rig(scenario, poll=poll) as r:
        r.engine.run(first, r.options())
        two = r.engine.run([*first, assistant("ok"), {"role": "user", "content": "go on"}], r.options())
    assert two.resumed_from is not None
    assert two.result.text == "late"


def test_a_short_conversation_stalls_cold_after_the_base_limit() -> None:
    poll = PollSettings(poll_interval_s=0.05, max_wait_s=60.0, cold_stall_base_s=0.5, cold_stall_chunk_chars=1000)
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="late", delay_s=2.0),)),))
    with rig(scenario, poll=poll) as r, pytest.raises(CascadeStallError):
        r.engine.run([{"role": "user", "content": "hi"}], r.options())


# ---------------------------------------------------------------------------- streaming hooks


def test_deltas_reach_the_callback_and_a_set_abort_ends_the_turn() -> None:
    deltas: list[CascadeDelta] = []
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="one "), Chunk(text="two")), records=(Usage(1, 1),)),))
    with rig(scenario) as r:
        streamed = r.engine.run_uncommitted([{"role": "user", "content": "hi"}], r.options(), on_delta=deltas.append)
        abort = threading.Event()
        abort.set()
        aborted = r.engine.run_uncommitted([{"role": "user", "content": "bye"}], r.options(), abort=abort)
    assert "".join(d.text for d in deltas if d.kind == "text") == streamed.outcome.result.text == "one two"
    assert aborted.outcome.result.end_reason == "aborted"


# ---------------------------------------------------------------------------- what the prompt replays


def test_a_lowered_conversation_is_what_the_prompt_replays() -> None:
    messages: Chat = [{"role": "user", "content": "original"}]
    lowered: Chat = [{"role": "user", "content": "lowered text"}]
    with rig() as r:
        pending = r.engine.run_uncommitted(messages, r.options(), lowered=lowered)
        pending.commit()
        sends = r.sends()
    assert sends[0].items[0].text == CONTEXT + "lowered text"
    # The pool keys on the messages the caller sent, not on the lowered replay.
    assert r.pool.peek(stored_fp(messages, assistant(pending.outcome.result.text))) is not None


def test_a_current_image_without_a_preamble_goes_to_field_6_with_the_default_planner() -> None:
    data = png()
    with rig() as r:
        outcome = r.engine.run(
            [{"role": "user", "content": [{"type": "text", "text": "what?"}, image_block(data)]}], r.options()
        )
        send = r.sends()[0]
    assert outcome.build.planner_default
    assert [(i.mime_type, len(i.base64_data) > 0) for i in send.images] == [("image/png", True)]
    assert numbered(send.cascade_config)[1][2] == {4: 1}


def test_a_tool_preamble_reaches_the_planner_and_keeps_no_tool_mode_with_an_image() -> None:
    content = [{"type": "text", "text": "what?"}, image_block(png())]
    with rig() as r:
        outcome = r.engine.run([{"role": "user", "content": content}], r.options(tool_preamble="TOOLS: call x"))
        send = r.sends()[0]
    assert not outcome.build.planner_default
    assert numbered(send.cascade_config)[1][2] == {4: 3, 12: {1: 1, 2: "TOOLS: call x"}}
    assert len(send.images) == 1


def test_history_images_are_counted_in_the_engine_metrics() -> None:
    conversation: Chat = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image_block(png())]},
        assistant("a red square"),
        {"role": "user", "content": "and now?"},
    ]
    with rig() as r:
        r.engine.run(conversation, r.options())
        send = r.sends()[0]
    assert len(send.images) == 1
    assert r.metrics.snapshot()["cascade_image_history_attached"] == 1


def test_the_engine_image_settings_win_over_the_environment() -> None:
    content = [{"type": "text", "text": "what?"}, image_block(png(8))]
    env = {ENV_MAX_LONG_SIDE: "6"}
    with rig(image_settings=ImageSettings(max_long_side=4)) as r:
        r.engine.run([{"role": "user", "content": content}], r.options(env=env))
        from_engine = r.sends()[0].images[0].base64_data
    with rig() as r:
        r.engine.run([{"role": "user", "content": content}], r.options(env=env))
        from_env = r.sends()[0].images[0].base64_data
    assert (image_size(from_engine), image_size(from_env)) == ((4, 4), (6, 6))


def test_remote_images_are_fetched_with_the_engine_fetcher(server: ImageServer) -> None:
    fetcher = functools.partial(fetch_image_url, policy=FetchPolicy(allow_loopback_for_tests=True, timeout=3.0))
    block = {"type": "image_url", "image_url": {"url": server.url("/img.png")}}
    with rig(fetcher=fetcher) as r:
        r.engine.run([{"role": "user", "content": [{"type": "text", "text": "what?"}, block]}], r.options())
        send = r.sends()[0]
    assert [(i.mime_type, base64.b64decode(i.base64_data)) for i in send.images] == [("image/png", server.png)]


# ---------------------------------------------------------------------------- native mode


def _round(call_id: str, command: str, output: str) -> Chat:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "Bash", "arguments": json.dumps({"command": command})},
    }
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def _commands(send: ls.SendUserCascadeMessageRequest) -> list[tuple[str, str]]:
    return [(s.run_command.command_line, s.run_command.stdout) for s in send.additional_steps]


HISTORY: Chat = [{"role": "user", "content": "fix the build"}, *_round("c1", "make", "error: x")]


@pytest.mark.parametrize(("native", "commands"), [(True, [("make", "error: x"), ("make test", "ok")]), (False, [])])
def test_tool_history_becomes_additional_steps_in_native_mode_only(
    native: bool, commands: list[tuple[str, str]]
) -> None:
    with rig() as r:
        r.engine.run([*HISTORY, *_round("c2", "make test", "ok")], r.options(native_mode=native))
        send = r.sends()[0]
    assert _commands(send) == commands
    tools = numbered(send.cascade_config)[1].get(13, {})
    assert sorted(tools) == ([5, 8, 10, 13, 19, 32, 33, 37] if native else [])


def test_a_resumed_native_turn_carries_only_the_newest_round() -> None:
    newest = _round("c2", "make test", "ok")
    with rig() as r:
        pending = r.engine.run_uncommitted(HISTORY, r.options(native_mode=True))
        pending.commit(newest[0])
        mark = r.mark()
        two = r.engine.run([*HISTORY, *newest], r.options(native_mode=True))
        send = r.sends(mark)[0]
    assert two.resumed_from is not None
    assert _commands(send) == [("make test", "ok")]


def test_native_mode_uses_the_default_planner_and_sees_history_images_despite_a_preamble() -> None:
    conversation: Chat = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image_block(png())]},
        assistant("a red square"),
        {"role": "user", "content": "and now?"},
    ]
    with rig() as r:
        outcome = r.engine.run(conversation, r.options(native_mode=True, tool_preamble="TOOLS"))
        send = r.sends()[0]
    assert outcome.build.planner_default
    assert (len(send.images), outcome.build.attached) == (1, 1)


# ---------------------------------------------------------------------------- role split (client.js)


def test_roles_split_into_system_and_the_user_assistant_conversation() -> None:
    messages = [
        Message("system", "be brief"),
        Message("user", "hi"),
        Message("tool", "result"),
        Message("assistant", "hello"),
        Message("developer", "dev note"),
        Message("System", "not a system role"),
        Message("system", "second system"),
    ]
    assert split_roles(messages) == (
        [Message("system", "be brief"), Message("system", "second system")],
        [Message("user", "hi"), Message("assistant", "hello")],
    )

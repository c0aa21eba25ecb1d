"""The Cascade client against the fake LS, exactly: request metadata, warm-up caching, the rejection
retry loop's messages, usage fallbacks and the injected clock, sleep and abort.

Complements test_cascade_client.py / test_cascade_client_resume.py with exact values.
"""

from __future__ import annotations

import logging
import threading

import pytest

from engine.cascade.errors import CascadeStallError, LsCallError, ResumeRejectedError
from engine.cascade.polling import PollSettings
from engine.cascade.usage import GeneratorUsage, usage_log_line
from fakels.scenario import Chunk, Fault, ResponseOverride, Scenario, Turn, Usage
from fakels.server import FakeLSThread
from tests.engine.cascade.upstream_exact_support import (
    NEVER_S,
    STATUS_RPC,
    SteppedClock,
    steps_payload_hex,
    usage_step,
)
from tests.engine.cascade_support import (
    API_KEY,
    META_RPC,
    SEND_RPC,
    STEPS_RPC,
    WARMUP,
    CountingRebuild,
    Harness,
    answer,
)

LOGGER = "engine.cascade"


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


# ---------------------------------------------------------------------------------------------- fresh turns


def test_a_fresh_turn_counts_its_polls_and_logs_its_usage(
    fake: FakeLSThread, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    fake.load_scenario(Scenario(turns=(answer("Hello world", Usage(input_tokens=7, output_tokens=3)),)))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = harness.turn("hello")
    sweeps = fake.journal.entries(STEPS_RPC)
    assert result.polls == len(sweeps) - 1 == len(fake.journal.entries(STATUS_RPC))  # the last read is the sweep
    assert result.polls >= 2
    assert result.resumed is False
    assert result.history_rebuilt is False
    assert result.usage is not None
    assert _messages(caplog, logging.INFO) == [usage_log_line(result.usage)]
    assert usage_log_line(result.usage) == "Cascade usage: in=7 out=3 cache_r=0 cache_w=0"


def test_every_warm_up_start_and_send_request_carries_the_api_key_and_session(
    fake: FakeLSThread, harness: Harness
) -> None:
    harness.turn("hello")
    for method in ("InitializeCascadePanelState", "UpdateWorkspaceTrust", "Heartbeat", "StartCascade", SEND_RPC):
        (request,) = fake.journal.requests(method)
        assert (request["metadata"]["api_key"], request["metadata"]["session_id"]) == (API_KEY, "session-1"), method


def test_the_step_usage_fallback_keeps_every_token_count(fake: FakeLSThread, harness: Harness) -> None:
    """No record carries usage; one poll shows a step with per-step usage: that is the turn's usage."""
    payload = steps_payload_hex([usage_step(40, 9, 5, 3)])
    fake.load_scenario(
        Scenario(
            turns=(
                Turn(
                    chunks=(Chunk(text="ok"),),
                    records=(None,),
                    overrides=(ResponseOverride(rpc=STEPS_RPC, call=0, payload_hex=payload),),
                ),
            )
        )
    )
    result = harness.turn("x")
    assert result.text == "ok"
    assert result.usage_source == "steps"
    assert result.usage == GeneratorUsage(
        input_tokens=40,
        output_tokens=9,
        cache_read_tokens=5,
        cache_write_tokens=3,
        entry_count=0,
        has_usage=True,
    )


def test_a_failed_usage_read_leaves_the_next_window_unknown(
    fake: FakeLSThread, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    failing = ResponseOverride(rpc=META_RPC, call=0, error_code="INTERNAL", error_message="fakels: metadata down")
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="ok"),), overrides=(failing,)),)))
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        result = harness.turn("x")
    assert (result.text, result.usage, result.usage_source, result.generator_offset_next) == ("ok", None, None, None)
    assert _messages(caplog, logging.DEBUG) == ["GetCascadeTrajectoryGeneratorMetadata failed: fakels: metadata down"]


# ---------------------------------------------------------------------------------------------- warm-up


@pytest.mark.parametrize(
    ("code", "message", "rewarmed"),
    [
        ("UNAVAILABLE", "fakels: backend went away", True),
        ("INTERNAL", "stream closed by the peer", True),
        ("INTERNAL", "fakels: scripted failure", False),
    ],
)
def test_a_transport_failure_forgets_the_warm_up_and_other_failures_keep_it(
    fake: FakeLSThread, harness: Harness, code: str, message: str, rewarmed: bool
) -> None:
    failing = ResponseOverride(rpc=STATUS_RPC, call=0, error_code=code, error_message=message)
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="ok"),), overrides=(failing,)),)))
    with pytest.raises(LsCallError) as info:
        harness.turn("x")
    assert (info.value.method, info.value.code, info.value.details) == (STATUS_RPC, code, message)
    mark = harness.mark()
    assert harness.client.warm_up(API_KEY) == "session-1"  # same session either way: not a forced re-warm
    assert [e.method for e in harness.since(mark)] == (WARMUP if rewarmed else [])


def test_a_failed_warm_up_is_not_cached_and_each_failure_is_logged(
    fake: FakeLSThread, caplog: pytest.LogCaptureFixture
) -> None:
    harness = Harness(fake, csrf="wrong-token")
    try:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert harness.client.warm_up(API_KEY) == "session-1"
            assert harness.client.warm_up(API_KEY) == "session-1"
    finally:
        harness.client.close()
    entries = fake.journal.entries()
    assert [e.method for e in entries] == WARMUP * 2
    assert all(e.rejected for e in entries)
    details = "invalid CSRF token"
    warnings = _messages(caplog, logging.WARNING)
    assert [w.split(": ", 1)[0] for w in warnings] == [
        f"Cascade warm-up {method} failed on {fake.address}" for method in WARMUP * 2
    ]
    assert all(details in w.split(": ", 1)[1] for w in warnings)


# ---------------------------------------------------------------------------------------------- clock, sleep, abort


@pytest.mark.parametrize(("prompt_chars", "limit_s"), [(None, 10), (2999, 15), (3000, 20)])
def test_the_cold_stall_limit_grows_with_the_whole_conversation(
    fake: FakeLSThread, prompt_chars: int | None, limit_s: int
) -> None:
    """30 s + 5 s per 1500 chars in the reference; here 10 s + 5 s per 1500 chars on a stepped clock.
    ``prompt_chars`` counts the whole conversation; without it the sent text's length counts."""
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="late", delay_s=NEVER_S),)),)))
    time = SteppedClock()
    poll = PollSettings(
        poll_interval_s=1.0,
        first_poll_interval_s=1.0,
        cold_stall_base_s=10.0,
        cold_stall_per_chunk_s=5.0,
        max_wait_s=100.0,
    )
    harness = Harness(fake, poll=poll, clock=time.clock, sleep=time.sleep)
    try:
        with pytest.raises(CascadeStallError) as info:
            harness.turn("hello", prompt_chars=prompt_chars)
    finally:
        harness.client.close()
    assert info.value.message == f"Cascade planner stalled — no output after {limit_s}s"
    assert (info.value.stage, info.value.session_id) == ("cold", "session-1")
    assert info.value.cascade_id == (fake.journal.last("StartCascade").response or {}).get("cascade_id")
    assert time.elapsed == limit_s + 1  # the first poll past the limit raises
    assert len(fake.journal.entries(STEPS_RPC)) == limit_s + 1
    assert META_RPC not in fake.journal.methods()


def test_the_turn_runs_on_the_clients_clock_and_sleep(fake: FakeLSThread) -> None:
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="late", delay_s=NEVER_S),)),)))
    time = SteppedClock()
    poll = PollSettings(poll_interval_s=1.0, first_poll_interval_s=1.0, max_wait_s=5.0, cold_stall_base_s=1000.0)
    harness = Harness(fake, poll=poll, clock=time.clock, sleep=time.sleep)
    try:
        result = harness.turn("hello")
    finally:
        harness.client.close()
    assert (result.end_reason, result.polls, result.text) == ("max_wait", 5, "")
    assert time.sleeps == [1.0] * 5


def test_an_abort_set_before_the_turn_ends_it_without_polling(fake: FakeLSThread, harness: Harness) -> None:
    abort = threading.Event()
    abort.set()
    result = harness.turn("hello", abort=abort)
    assert (result.end_reason, result.polls, result.text) == ("aborted", 0, "")
    methods = fake.journal.methods()
    assert methods[methods.index(SEND_RPC) + 1 :] == [META_RPC]


# ---------------------------------------------------------------------------------------------- rejections


def test_giving_up_names_every_rejection_in_order_and_the_rebuilt_prompt_size(
    fake: FakeLSThread, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    faults = (Fault("expired"), Fault("panel_lost"), Fault("untrusted"), Fault("expired"))
    fake.load_scenario(Scenario(turns=(answer("one"), *(Turn(fault=f) for f in faults))))
    first = harness.turn("first")
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(ResumeRejectedError) as info:
        harness.resume_from(first, "newest", rebuild=CountingRebuild("FULL HISTORY"))
    assert info.value.message == (
        "SendUserCascadeMessage failed: not_found: cascade trajectory has been expired by ttl"
        " — the LS rejected the turn 4 times"
        " (cascade_expired, panel_missing, untrusted_workspace, cascade_expired);"
        " gave up after 3 re-warm and fresh-cascade retries (prompt 12 chars)"
    )
    assert _messages(caplog, logging.INFO).count("Cascade: rebuilt full history after resume failure") == 1


def test_a_fresh_turn_rejected_for_lost_panel_state_never_calls_the_rebuild(
    fake: FakeLSThread, harness: Harness
) -> None:
    fake.load_scenario(Scenario(turns=(Turn(chunks=(Chunk(text="one"),), lose_panel_after=True), answer("two"))))
    harness.turn("one")
    rebuild = CountingRebuild()
    result = harness.turn("two", rebuild=rebuild)
    assert rebuild.calls == 0
    assert result.history_rebuilt is False
    assert result.resumed is False
    assert result.text == "two"
    assert fake.journal.requests(SEND_RPC)[-1]["items"] == [{"text": "two"}]


def test_a_rejected_resume_without_a_rebuild_sends_the_newest_turn_and_warns_once(
    fake: FakeLSThread, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    fake.load_scenario(
        Scenario(turns=(answer("one"), Turn(fault=Fault("expired")), Turn(fault=Fault("panel_lost")), answer("two")))
    )
    first = harness.turn("first")
    mark = harness.mark()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = harness.resume_from(first, "newest")
    assert [r["items"] for r in harness.requests_since(mark, SEND_RPC)] == [[{"text": "newest"}]]
    assert [e.request["items"] for e in harness.since(mark, SEND_RPC) if e.request] == [[{"text": "newest"}]] * 3
    assert (result.text, result.resumed, result.history_rebuilt) == ("two", False, False)
    assert _messages(caplog, logging.WARNING) == [
        "Cascade resume rejected (cascade_expired: not_found: cascade trajectory has been expired by ttl);"
        " re-warming and starting a fresh cascade (retry 1/3)",
        "Cascade: resume rejected and no rebuild given; the fresh cascade gets the newest turn only",
        "Cascade start rejected (panel_missing: panel state not found);"
        " re-warming and starting a fresh cascade (retry 2/3)",
    ]

"""The HTTP target's wire and store operations, against the reference gateway served in this process
in front of a fake LS the test wires it to (what a launched, dial-wired gateway offers)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.errors import InputRefused, PreconditionNotMet, TargetError
from conformance.ls_handle import InProcessLs
from conformance.targets import HttpOptions, _http
from conformance.targets._http_store import HttpStore
from conformance.targets._scope import Caller, CallerScope, ReadScope
from engine.cascade.polling import PollSettings
from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from fakels.decoder import decode
from fakels.rpcs import RPCS
from fakels.server import FakeLSThread
from tests.conformance.targets.targets_support import PrewiredHttpTarget
from tests.support.fake_ls import StartFakeLs

CSRF = "targets-wired-csrf"
KEYS = {"key-a": "caller-a", "key-b": "caller-b"}
MODEL = "claude-sonnet-4-6"
LIMITS = {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}
CONVERSATION = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF)


@pytest.fixture(scope="module")
def served(fake: FakeLSThread) -> Iterator[ServedGateway]:
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=CSRF,
        http=HttpSettings(api_keys=KEYS, max_body_bytes=200_000),
        poll=PollSettings(poll_interval_s=0.002),
    )
    gateway = ServedGateway(Gateway(config)).start()
    yield gateway
    gateway.stop()


def wired(served: ServedGateway, fake: FakeLSThread, **options: Any) -> PrewiredHttpTarget:
    # The engine reads a bodyless request's end user from X-Response-User (engine/http/caller_scope.py).
    scope = CallerScope("user", (ReadScope("header", "x-response-user"),))
    defaults: dict[str, Any] = {"api_keys": tuple(KEYS), "model": MODEL, "caller_scope": scope}
    return PrewiredHttpTarget(served.url, HttpOptions(**(defaults | options)), InProcessLs(fake, CSRF))


@pytest.fixture
def target(served: ServedGateway, fake: FakeLSThread) -> Iterator[PrewiredHttpTarget]:
    http = wired(served, fake)
    yield http
    http.close()


def build(target: PrewiredHttpTarget, **given: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "messages": CONVERSATION,
        "model_uid": "ignored",
        "tool_preamble": "",
        "native_mode": False,
        "is_resume": False,
        "env": {},
    }
    return target.call("engine.build_send_request", **(params | given))


def sent_text(request_b64: str) -> str:
    decoded = decode(RPCS["SendUserCascadeMessage"].request_type, base64.b64decode(request_b64))
    return str(decoded.fields)


# ---------------------------------------------------------------------- engine.build_send_request


def test_the_send_is_read_from_the_wired_fakes_journal(target: PrewiredHttpTarget, fake: FakeLSThread) -> None:
    result = build(target)
    sends = [e for e in fake.journal.entries() if e.method == "SendUserCascadeMessage"]
    assert len(sends) == 1
    assert result == {"request_b64": sends[0].to_json()["raw_b64"]}
    assert "hello there" in sent_text(result["request_b64"])


def test_a_tool_preamble_is_sent_as_a_tool_described_by_its_first_200_characters(target: PrewiredHttpTarget) -> None:
    preamble = "p" * 199 + "QZ"
    request_b64 = build(target, tool_preamble=preamble)["request_b64"]
    fields = decode(RPCS["SendUserCascadeMessage"].request_type, base64.b64decode(request_b64)).fields
    section = fields["cascade_config"]["planner_config"]["conversational"]["additional_instructions_section"]
    tool = f'\n\nFunction: conformance_tool\nDescription: {"p" * 199}Q\nParameters: {{"type":"object"}}\n\n'
    assert tool in section["content"]
    assert "QZ" not in section["content"]


def test_a_repeated_conversation_is_built_afresh_each_time(target: PrewiredHttpTarget) -> None:
    first = build(target)
    second = build(target)
    assert set(first) == set(second) == {"request_b64"}


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({"is_resume": True}, "a black-box gateway builds a resume only for a cascade it continues itself"),
        (
            {"native_mode": True},
            "the example needs the native bridge on; this gateway has it off (--native-bridge)",
        ),
        (
            {"env": {"CASCADE_MAX_IMAGES": "2", "OTHER": "x"}},
            "the example needs the limits CASCADE_MAX_IMAGES=2, OTHER=x, which the gateway was not launched with "
            "(launch it with --launch-env NAME=VALUE to check such examples)",
        ),
    ],
)
def test_builds_the_gateway_cannot_be_asked_for_are_not_checkable(
    target: PrewiredHttpTarget, given: dict[str, Any], reason: str
) -> None:
    with pytest.raises(PreconditionNotMet) as info:
        build(target, **given)
    assert info.value.reason == reason


def test_a_native_bridge_gateway_is_not_asked_for_plain_builds(served: ServedGateway, fake: FakeLSThread) -> None:
    target = wired(served, fake, native_bridge=True)
    try:
        with pytest.raises(PreconditionNotMet) as info:
            build(target)
        assert info.value.reason == "the example needs the native bridge off; this gateway has it on (--native-bridge)"
        assert target.gateway_defaults()["native_bridge"] is True
    finally:
        target.close()


def test_a_conversation_the_gateway_refuses_is_refused_input_naming_its_answer(target: PrewiredHttpTarget) -> None:
    with pytest.raises(InputRefused) as info:
        build(target, messages=[{"role": "user", "content": "x" * 300_000}])
    assert info.value.reason == "POST /v1/chat/completions answered 413: request body over 200000 bytes"


def test_a_conversation_answered_without_reaching_the_ls_is_an_error(
    target: PrewiredHttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untagged, the same conversation twice: the gateway's response cache answers the second, and
    no Send reaches the LS (the tag is what keeps a black box's cache out of an example)."""
    monkeypatch.setattr(_http, "tagged", lambda messages: messages)
    conversation = [{"role": "user", "content": "cache me"}]
    build(target, messages=conversation)
    with pytest.raises(TargetError) as info:
        build(target, messages=conversation)
    assert str(info.value).startswith(
        f"{target.url}: no SendUserCascadeMessage reached the LS for the conversation; the gateway answered "
        '{"status": 200'
    )


def test_a_gateway_continuing_its_pooled_cascade_is_not_asked(
    target: PrewiredHttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http, "tagged", lambda messages: messages)  # the pooled conversation, as it was
    build(target)
    request = {"model": MODEL, "messages": CONVERSATION}
    reply = target.call("gateway.chat", request=request, api_key="key-a")["body"]["choices"][0]["message"]["content"]
    follow_up = [*CONVERSATION, {"role": "assistant", "content": reply}, {"role": "user", "content": "more"}]
    with pytest.raises(PreconditionNotMet) as info:
        build(target, messages=follow_up)
    assert info.value.reason == "the gateway continued a cascade it had pooled instead of building a fresh one"


# ---------------------------------------------------------------------- store.*


def test_the_store_limits_must_be_the_gateways(target: PrewiredHttpTarget) -> None:
    assert target.call("store.open", limits=LIMITS) == {}
    with pytest.raises(PreconditionNotMet) as info:
        target.call("store.open", limits={"max_messages": 3, "max_entry_bytes": 9})
    assert info.value.reason == (
        "the example's store limits {'max_messages': 3, 'max_entry_bytes': 9} are not the gateway's "
        f"{LIMITS} (--store-limits)"
    )


def test_a_stored_text_turn_is_read_back_and_deleted_by_its_caller_only(target: PrewiredHttpTarget) -> None:
    put = target.call("store.put", messages=CONVERSATION, caller=0, answer={"text": "the answer"})
    appended = put["appended"]
    assert [item["type"] for item in appended] == ["message"]
    assert appended[0]["content"][0]["text"] == "the answer"
    got = target.call("store.get", id=put["id"], caller=0)
    assert got["answer"] == "the answer"
    assert got["messages"][0].get("content") in (
        "hello there",
        [{"type": "input_text", "text": "hello there"}],
    )
    assert target.call("store.get", id=put["id"], caller=1) == {"not_found": True}
    assert target.call("store.delete", id=put["id"], caller=1) == {"deleted": False}
    assert target.call("store.delete", id=put["id"], caller=0) == {"deleted": True}
    assert target.call("store.get", id=put["id"], caller=0) == {"not_found": True}


def test_a_stored_tool_call_turn_appends_the_call(target: PrewiredHttpTarget) -> None:
    answer = {"tool_call": {"name": "lookup", "arguments": '{"q": 1}'}}
    put = target.call("store.put", messages=CONVERSATION, caller=1, answer=answer)
    calls = [item for item in put["appended"] if item["type"] == "function_call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("lookup", '{"q": 1}')]
    assert target.call("store.get", id=put["id"], caller=1)["answer"] is None


def test_a_long_stored_conversation_is_read_back_over_every_page(target: PrewiredHttpTarget) -> None:
    messages = [{"role": "user", "content": f"m{i}"} for i in range(230)]
    put = target.call("store.put", messages=messages, caller=0, answer={"text": "ok"})
    got = target.call("store.get", id=put["id"], caller=0)
    assert len(got["messages"]) == 231
    assert [m["content"][0]["text"] for m in got["messages"][:230]] == [m["content"] for m in messages]
    assert got["answer"] == "ok"


def test_without_a_per_user_signal_a_second_caller_needs_a_second_key(
    served: ServedGateway, fake: FakeLSThread
) -> None:
    target = wired(served, fake, api_keys=("key-a",), caller_scope=CallerScope("none"))
    try:
        with pytest.raises(PreconditionNotMet) as info:
            target.call("store.put", messages=CONVERSATION, caller=1, answer={"text": "x"})
        assert info.value.reason == (
            "the example needs two callers: give two --api-key options, or send a per-user signal (--caller-scope "
            "other than none)"
        )
    finally:
        target.close()


def test_a_refused_put_is_refused_input_naming_the_answer(target: PrewiredHttpTarget) -> None:
    with pytest.raises(InputRefused) as info:
        target.call("store.put", messages=[{"role": "nobody", "content": 3}], caller=0, answer={"text": "x"})
    assert re.fullmatch(
        r"POST /v1/responses \(\d+ bytes\) answered 400: input\[0\]\.role must be one of .*", info.value.reason
    )


def test_a_put_over_the_body_limit_is_refused_input(target: PrewiredHttpTarget) -> None:
    with pytest.raises(InputRefused) as info:
        target.call("store.put", messages=[{"role": "user", "content": "y" * 250_000}], caller=0, answer={"text": "x"})
    assert re.fullmatch(
        r"POST /v1/responses \(\d+ bytes\) answered 413: request body over 200000 bytes", info.value.reason
    )


def test_a_put_too_big_to_send_is_not_checkable(target: PrewiredHttpTarget, fake: FakeLSThread) -> None:
    answer = {"text": "a" * (15 * 1024 * 1024)}
    with pytest.raises(PreconditionNotMet) as info:
        target.call("store.put", messages=CONVERSATION, caller=0, answer=answer)
    size = len(b'{"model": "claude-sonnet-4-6", "input": [{"role": "user", "content": "hello there"}], "store": true}')
    size += len('{"text": ""}') + 15 * 1024 * 1024
    assert info.value.reason == (
        f"the example needs {size} bytes of request and answer for the gateway's store limits; launch it with "
        "smaller limits and declare them with --store-limits"
    )


def test_a_put_of_exactly_the_largest_body_is_sent(target: PrewiredHttpTarget) -> None:
    answer = {"text": "x"}
    empty = {"model": MODEL, "input": [{"role": "user", "content": ""}], "store": True}
    room = 15 * 1024 * 1024 - len(json.dumps(empty)) - len(json.dumps(answer))
    with pytest.raises(PreconditionNotMet) as info:
        target.call("store.put", messages=[{"role": "user", "content": "a" * room}], caller=0, answer=answer)
    assert info.value.reason == (
        f"POST /v1/responses ({15 * 1024 * 1024} bytes) answered 413: request body over 200000 bytes"
    )


def test_without_a_wired_ls_a_put_is_not_checkable(target: PrewiredHttpTarget) -> None:
    store = HttpStore(
        target._send,
        callers=[Caller("key-a", None)],
        model=MODEL,
        limits=LIMITS,
        ls=lambda: None,
        describe=lambda what: what,
        scope=CallerScope("none"),
    )
    with pytest.raises(PreconditionNotMet) as info:
        store.put(CONVERSATION, 0, {"text": "x"})
    assert info.value.reason == "the gateway's language server is not wired to the kit (--launch with dial or spawn)"

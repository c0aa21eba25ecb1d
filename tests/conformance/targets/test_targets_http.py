"""The HTTP target against a gateway already running (the echo gateway, served in this process):
``gateway.chat`` and ``gateway.ledger`` over the official client, and its errors."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import GatewayGone, PreconditionNotMet, TargetError, TargetSpecError
from conformance.example_tags import TAG_RE
from conformance.targets import HttpOptions, HttpTarget, LaunchedGateway, LaunchSpec, _http, load_target
from conformance.targets._launch import free_port
from tests.conformance.targets import targets_support
from tests.conformance.targets.targets_support import ALWAYS_OFFERED, canned_server, echo_server, untimed
from tests.support import echo_gateway

REQUEST = {"model": "m-test", "messages": [{"role": "user", "content": "hi"}]}
Log = list[tuple[str, str, str]]
reaped = targets_support.reaped  # launched gateways' process groups are SIGKILLed after each test


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, Log]]:
    with echo_server() as served:
        yield served


@pytest.fixture
def target(echo: tuple[str, Log]) -> Iterator[HttpTarget]:
    http = HttpTarget(echo[0], HttpOptions(api_keys=("k1", "k2"), model="m-test", ledger_path="/v1/ledger"))
    yield http
    http.close()


def opened(url: str, **options: object) -> HttpTarget:
    target = load_target(url, http=HttpOptions(**options))  # type: ignore[arg-type]
    assert isinstance(target, HttpTarget)
    return target


@pytest.fixture
def launched(reaped: list[LaunchedGateway]) -> Iterator[Callable[..., HttpTarget]]:
    """Opens launching HTTP targets; at teardown each is closed, and its gateway's process group is
    SIGKILLed (``reaped``) whatever the code under test did."""
    targets: list[HttpTarget] = []

    def launch(url: str, options: HttpOptions) -> HttpTarget:
        target = HttpTarget(url, options)
        targets.append(target)
        if target._gateway is not None:
            reaped.append(target._gateway)
        return target

    yield launch
    for target in targets:
        target.close()


def test_an_external_gateway_is_described_by_its_url_and_has_no_wired_ls(
    target: HttpTarget, echo: tuple[str, Log]
) -> None:
    assert target.url == echo[0]
    assert target.description == echo[0]
    assert target.kind == "http"
    assert target.wired_ls() is None
    assert target.launch_output() is None
    assert target.gateway_defaults() == {
        "api_keys": ["k1", "k2"],
        "model": "m-test",
        "native_bridge": False,
        "cache_writes": None,
        "wait_limit_s": None,
        "heartbeat_s": None,
        "other_model": None,
        "resends_history": False,
    }
    first, other = target.scoped_body({"model": "m"}, 0), target.scoped_body({"model": "m"}, 1)
    assert first["user"] != other["user"], (first, other)
    assert first["user"].startswith("conformance-"), first
    assert target.operations() == frozenset({*ALWAYS_OFFERED, "gateway.ledger"})
    assert target.capabilities("gateway.chat") == {"hang_up": True}


def test_without_a_ledger_path_only_chat_is_offered(echo: tuple[str, Log]) -> None:
    target = opened(echo[0])
    try:
        assert target.operations() == ALWAYS_OFFERED
        with pytest.raises(TargetError, match=r"does not implement gateway\.ledger$"):
            target.call("gateway.ledger")
    finally:
        target.close()


def test_a_launch_without_ls_wiring_offers_no_wire_operations(echo: tuple[str, Log]) -> None:
    port = int(echo[0].rsplit(":", 1)[1])
    launch = LaunchSpec(command="sleep 30", wiring="none", ready_timeout_s=5, own_port=False)
    target = HttpTarget(f"http://127.0.0.1:{port}", HttpOptions(launch=launch))
    try:
        assert target.operations() == ALWAYS_OFFERED
        assert target.wired_ls() is None
        assert target.description == f"http://127.0.0.1:{port} (launched: sleep 30, LS: none)"
        assert target.launch_output() == ""
    finally:
        target.close()


def test_a_dial_wired_launch_offers_the_wire_and_store_operations(echo: tuple[str, Log]) -> None:
    port = int(echo[0].rsplit(":", 1)[1])
    launch = LaunchSpec(command="sh -c 'exec sleep 30' {ls_address} {csrf_token}", ready_timeout_s=5, own_port=False)
    limits = {"max_messages": 3, "max_entry_bytes": 9}
    target = HttpTarget(f"http://localhost:{port}", HttpOptions(launch=launch, store_limits=limits))
    try:
        store = {"store.open", "store.put", "store.get", "store.delete"}
        assert target.operations() == frozenset({*ALWAYS_OFFERED, "engine.build_send_request", *store})
        assert target.capabilities("store.open") == {"fixed_limits": limits, "shapes": ["responses"]}
        wired = target.wired_ls()
        assert wired is not None
        assert wired.csrf_token == "cascade-conformance-kit-csrf-token"
        assert target.url == f"http://localhost:{port}"
    finally:
        target.close()


# A gateway's own settings beside the one limit of the kit's examples it was launched with: only the
# limits the kit names (the history-image caps, the history budget) are compared with an example's.
# A "gateway" that only sleeps: the echo server of this module answers in its place (own_port off).
SLEEPS = "sh -c 'exec sleep 30' {ls_address}"
_GATEWAY_ENV = {
    "CASCADE_MAX_HISTORY_IMAGE_BYTES": "900",
    "CASCADE_POLL_INTERVAL_MS": "5",
    "MYGW_SKIP_DOTENV": "1",
    "MYGW_DATA_DIR": "/tmp/mygw",
    "HOST": "127.0.0.1",
    "WINDSURFAPI_Z": "3",
}


@pytest.mark.parametrize(
    ("example_env", "differing"),
    [
        ({}, "CASCADE_MAX_HISTORY_IMAGE_BYTES unset"),
        ({"CASCADE_MAX_HISTORY_IMAGE_BYTES": "800"}, "CASCADE_MAX_HISTORY_IMAGE_BYTES=800"),
        ({"CASCADE_MAX_HISTORY_IMAGE_BYTES": "900", "CASCADE_MAX_HISTORY_IMAGES": "2"}, "CASCADE_MAX_HISTORY_IMAGES=2"),
        ({"CASCADE_MAX_HISTORY_BYTES": "70"}, "CASCADE_MAX_HISTORY_BYTES=70, CASCADE_MAX_HISTORY_IMAGE_BYTES unset"),
    ],
)
def test_builds_need_the_kits_limits_the_gateway_was_launched_with(
    echo: tuple[str, Log], launched: Callable[..., HttpTarget], example_env: dict[str, str], differing: str
) -> None:
    port = int(echo[0].rsplit(":", 1)[1])
    launch = LaunchSpec(command=SLEEPS, env=_GATEWAY_ENV, ready_timeout_s=5, own_port=False)
    target = launched(f"http://127.0.0.1:{port}", HttpOptions(launch=launch))
    assert target.fixed_env() == {"CASCADE_MAX_HISTORY_IMAGE_BYTES": "900"}
    params = {"messages": REQUEST["messages"], "model_uid": "u", "tool_preamble": "", "native_mode": False}
    with pytest.raises(PreconditionNotMet) as info:
        target.call("engine.build_send_request", **params, is_resume=False, env=example_env)
    assert info.value.reason == (
        f"the example needs the limits {differing}, which the gateway was not launched with (launch it with "
        "--launch-env NAME=VALUE to check such examples)"
    )


def test_a_build_with_the_launch_limits_is_sent_as_a_client_would_send_it(
    echo: tuple[str, Log], launched: Callable[..., HttpTarget]
) -> None:
    """The gateway's own settings (its port, data folder, switches, its poll interval under a CASCADE_
    prefix) are not compared; the request carries no sampling parameter a gateway may refuse: the
    example is made unique by a tag in front of its first message's text."""
    port = int(echo[0].rsplit(":", 1)[1])
    launch = LaunchSpec(command=SLEEPS, env=_GATEWAY_ENV, ready_timeout_s=5, own_port=False)
    target = launched(f"http://127.0.0.1:{port}", HttpOptions(launch=launch))
    params = {"messages": REQUEST["messages"], "model_uid": "u", "tool_preamble": "", "native_mode": False}
    bodies: list[dict[str, Any]] = []
    chat = target._chat

    def recorded(body: dict[str, Any], api_key: str) -> dict[str, Any]:
        bodies.append(body)
        return chat(body, api_key)

    target._chat = recorded  # type: ignore[method-assign,assignment]
    env = {"CASCADE_MAX_HISTORY_IMAGE_BYTES": "900"}
    with pytest.raises(TargetError) as failed:
        target.call("engine.build_send_request", **params, is_resume=False, env=env)
    prefix = (
        f"{target.description}: no SendUserCascadeMessage reached the LS for the conversation; the gateway answered "
    )
    assert str(failed.value).startswith(prefix + '{"status": 200')
    [sent] = bodies
    assert sorted(sent) == ["messages", "model", "user"]  # the first caller's per-user signal (--caller-scope)
    assert re.fullmatch(r"conformance-[0-9a-f]{12}-caller-0", sent["user"]), sent["user"]
    first = sent["messages"][0]["content"]
    asked = "hi"  # REQUEST's one message
    assert TAG_RE.fullmatch(first[: -len(asked)]), first
    assert first.endswith(asked)


def test_a_launched_gateways_failures_say_whether_it_still_runs(echo: tuple[str, Log], tmp_path: Path) -> None:
    port = int(echo[0].rsplit(":", 1)[1])
    go = tmp_path / "go"
    script = f"while [ ! -e {go} ]; do sleep 0.02; done; echo bye; exit 7"
    launch = LaunchSpec(command=f"sh -c '{script}' {{ls_address}}", ready_timeout_s=5, own_port=False)
    target = HttpTarget(f"http://127.0.0.1:{port}", HttpOptions(launch=launch, request_timeout_s=0.2))
    slow = {"model": "slow", "messages": []}
    try:
        with pytest.raises(TargetError) as info:
            target.call("gateway.chat", request=slow, api_key="k1")
        assert str(info.value) == (
            f"{target.description}: no answer to POST /v1/chat/completions within 0.2 s; the gateway is still running"
        )
        go.touch()
        deadline = time.monotonic() + 5
        while target.launch_output() != "bye\n" and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # from its last line to its exit
        with pytest.raises(GatewayGone) as gone:  # what answers its port now is not the gateway: no verdict
            target.call("gateway.chat", request=slow, api_key="k1")
        assert str(gone.value) == (
            f"the gateway (sh -c '{script}' {{ls_address}}) exited with code 7 during the run; its last words: 'bye' "
            "(all of it: gateway-output.log)"
        )
    finally:
        target.close()


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        (
            "http://127.0.0.1:0",
            HttpOptions(),
            "'http://127.0.0.1:0': port 0 means 'the kit picks one', needing --launch (the kit starts it)",
        ),
        ("http://127.0.0.1:1", HttpOptions(request_timeout_s=0), "the request timeout must be positive, got 0"),
        ("http://127.0.0.1:1", HttpOptions(request_timeout_s=-1.5), "the request timeout must be positive, got -1.5"),
    ],
)
def test_unusable_http_targets_are_usage_errors(url: str, options: HttpOptions, message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        HttpTarget(url, options)
    assert str(info.value) == message


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_nothing_answering_at_the_url_fails_at_open(host: str) -> None:
    port = free_port()
    with pytest.raises(TargetError) as info:
        opened(f"http://{host}:{port}")
    assert re.fullmatch(
        rf"nothing answers at http://{re.escape(host)}:{port} \(GET /v1/models: .+\); start the gateway first, "
        r"or let the kit start it with --launch",
        str(info.value),
        flags=re.S,
    )


def test_the_open_probe_waits_at_most_the_request_timeout() -> None:
    with echo_server(slow_models_s=1.0) as (url, _log), pytest.raises(TargetError, match=r"^nothing answers at"):
        opened(url, request_timeout_s=0.2)


def test_the_open_probe_waits_at_most_the_probe_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http, "PROBE_TIMEOUT_S", 0.2)
    with echo_server(slow_models_s=1.0) as (url, _log), pytest.raises(TargetError) as info:
        opened(url, request_timeout_s=5.0)
    assert str(info.value) == (
        f"nothing answers at {url} (GET /v1/models: timed out); start the gateway first, or let the kit start it "
        "with --launch"
    )


def test_a_tiny_positive_request_timeout_is_accepted(echo: tuple[str, Log]) -> None:
    opened(echo[0], request_timeout_s=0.5).close()


# ---------------------------------------------------------------------- gateway.chat


def test_chat_sends_the_body_as_given_with_the_callers_key_once(target: HttpTarget, echo: tuple[str, Log]) -> None:
    request = REQUEST | {"temperature": 0.5, "stream": False, "cascade_extension": {"x": [1, None]}}
    echo[1].clear()
    answer = target.call("gateway.chat", request=request, api_key="k2")
    assert answer == {"status": 200, "body": echo_gateway.COMPLETION | {"received": request, "api_key": "k2"}}
    assert echo[1] == [("POST", "/v1/chat/completions", "k2")]


def test_chat_with_an_empty_key_sends_no_authorization(target: HttpTarget) -> None:
    assert target.call("gateway.chat", request=REQUEST, api_key="")["body"]["api_key"] == ""
    assert target.call("gateway.chat", request=REQUEST, api_key="k1")["body"]["api_key"] == "k1"


@pytest.mark.parametrize(
    "request_body",
    [
        {"messages": []},
        {"model": "m-test"},
        {"stream": "yes", "model": 3},
        REQUEST | {"timeout": 5, "extra_headers": {"a": "b"}, "extra_body": 1, "extra_query": None},
    ],
)
def test_chat_keeps_a_malformed_body_as_it_is(target: HttpTarget, request_body: dict[str, object]) -> None:
    answer = target.call("gateway.chat", request=request_body, api_key="k1")
    assert answer["body"]["received"] == request_body


def test_chat_stream_answers_the_events_in_order_without_comments(target: HttpTarget) -> None:
    answer = target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1")
    event_2 = json.dumps(echo_gateway.EVENT_2).replace(', "choices"', ',\n"choices"', 1)
    assert untimed(answer) == {"status": 200, "events": [json.dumps(echo_gateway.EVENT_1), event_2, "[DONE]"]}


@pytest.mark.parametrize("after", [1, 2, 3])
def test_a_client_that_hangs_up_answers_the_events_it_read(target: HttpTarget, after: int) -> None:
    assert target.capabilities("gateway.chat") == {"hang_up": True}
    whole = untimed(target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1"))
    left = untimed(target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1", hang_up_after=after))
    assert left == {"status": 200, "events": whole["events"][:after]}


def test_the_event_stream_media_type_is_matched_case_insensitively(target: HttpTarget) -> None:
    answer = target.call("gateway.chat", request={"model": "upper-stream", "stream": True}, api_key="k1")
    assert untimed(answer) == {"status": 200, "events": ["x"]}


def test_a_stream_request_answered_with_json_keeps_the_body(target: HttpTarget) -> None:
    answer = target.call("gateway.chat", request={"model": "json-for-stream", "stream": True}, api_key="k1")
    assert answer == {"status": 200, "body": echo_gateway.COMPLETION}


SSE = [("Content-Type", "text/event-stream")]
EVENTS = b"data: a\n\ndata: [DONE]\n\n"


@pytest.mark.parametrize(
    ("stream", "answer", "read"),
    [
        (False, (200, [("Content-Type", "application/json")], b'{"a": 1}'), {"status": 200, "body": {"a": 1}}),
        (True, (200, SSE, EVENTS), {"status": 200, "events": ["a", "[DONE]"]}),
    ],
)
def test_chat_sends_fields_the_client_does_not_know_in_the_body(
    stream: bool, answer: Any, read: dict[str, Any]
) -> None:
    request = REQUEST | {"stream": stream, "cascade_extension": {"x": [1, None]}, "seed": 7}
    with canned_server({("POST", "/v1/chat/completions"): answer}) as (url, received):
        target = opened(url)
        try:
            assert untimed(target.call("gateway.chat", request=request, api_key="k1")) == read
        finally:
            target.close()
    [(method, path, headers, body)] = [r for r in received if r[0] == "POST"]
    assert (method, path, headers["authorization"]) == ("POST", "/v1/chat/completions", "Bearer k1")
    assert json.loads(body) == request


@pytest.mark.parametrize(
    ("headers", "read"),
    [
        ([], {"status": 200, "body": "data: a\n\ndata: [DONE]\n\n"}),
        ([("Content-Type", "text/plain")], {"status": 200, "body": "data: a\n\ndata: [DONE]\n\n"}),
        (SSE, {"status": 200, "events": ["a", "[DONE]"]}),
    ],
)
def test_a_stream_answer_is_read_as_events_only_when_its_media_type_says_so(
    headers: list[tuple[str, str]], read: dict[str, Any]
) -> None:
    with canned_server({("POST", "/v1/chat/completions"): (200, headers, EVENTS)}) as (url, _received):
        target = opened(url)
        try:
            assert untimed(target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1")) == read
        finally:
            target.close()


@pytest.mark.parametrize(("elapsed", "complete"), [(5.0, True), (5.0 + 2**-20, False)])
def test_a_stream_is_read_whole_up_to_exactly_the_request_timeout(
    monkeypatch: pytest.MonkeyPatch, elapsed: float, complete: bool
) -> None:
    """The clock of the kit is read at the request and at each line; here every line comes ``elapsed``
    seconds after the request (a controlled clock: a real one cannot land on the boundary)."""
    with canned_server({("POST", "/v1/chat/completions"): (200, SSE, EVENTS)}) as (url, _received):
        target = opened(url, request_timeout_s=5.0)  # the real requests are far quicker; the clock decides
        readings = iter([100.0])
        monkeypatch.setattr(_http, "_clock", lambda: next(readings, 100.0 + elapsed))
        try:
            if complete:
                answer = target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1")
                assert untimed(answer) == {"status": 200, "events": ["a", "[DONE]"]}
            else:
                with pytest.raises(TargetError) as info:
                    target.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1")
                assert str(info.value) == f"{url}: the event stream of POST /v1/chat/completions did not end within 5 s"
        finally:
            target.close()


@pytest.mark.parametrize("stream", [False, True])
def test_chat_error_statuses_answer_status_and_body_without_retrying(
    target: HttpTarget, echo: tuple[str, Log], stream: bool
) -> None:
    echo[1].clear()
    bad = target.call("gateway.chat", request={"model": "bad", "messages": [], "stream": stream}, api_key="k1")
    assert bad == {
        "status": 400,
        "body": {"error": {"message": "unknown model bad", "type": "invalid_request_error", "code": None}},
    }
    text = target.call("gateway.chat", request={"model": "text-error", "messages": [], "stream": stream}, api_key="k1")
    assert text == {"status": 502, "body": "upstream broke"}
    assert len(echo[1]) == 2


def test_a_slow_answer_is_a_timeout_error(echo: tuple[str, Log]) -> None:
    target = opened(echo[0], request_timeout_s=0.3)
    try:
        with pytest.raises(TargetError) as info:
            target.call("gateway.chat", request={"model": "slow", "messages": []}, api_key="k1")
        assert str(info.value) == f"{echo[0]}: no answer to POST /v1/chat/completions within 0.3 s"
    finally:
        target.close()


def test_a_stream_that_does_not_end_within_the_timeout_is_an_error(echo: tuple[str, Log]) -> None:
    target = load_target(echo[0], call_timeout_s=0.25, http=HttpOptions())
    try:
        with pytest.raises(TargetError) as info:
            target.call("gateway.chat", request={"model": "slow-stream", "stream": True}, api_key="k1")
        assert str(info.value) == (
            f"{echo[0]}: the event stream of POST /v1/chat/completions did not end within 0.25 s"
        )
    finally:
        target.close()


def test_a_stream_that_breaks_off_is_an_error(target: HttpTarget, echo: tuple[str, Log]) -> None:
    with pytest.raises(TargetError) as info:
        target.call("gateway.chat", request={"model": "broken-stream", "stream": True}, api_key="k1")
    assert str(info.value).startswith(f"{echo[0]}: the event stream of POST /v1/chat/completions broke off: ")


@contextmanager
def _held_shut(url: str) -> Iterator[None]:
    """The port of ``url`` bound but not listening: connections are refused, and no other test
    (another xdist worker's server) can be handed the port meanwhile."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the closed server's TIME_WAITs
        holder.bind(("127.0.0.1", int(url.rsplit(":", 1)[1])))  # as echo_port reads it
        yield


def test_a_gateway_gone_after_open_makes_chat_and_ledger_errors() -> None:
    with echo_server(close_each=True) as (url, _log):
        target = opened(url, ledger_path="/v1/ledger")
    try:
        with _held_shut(url):
            with pytest.raises(TargetError) as info:
                target.call("gateway.chat", request=REQUEST, api_key="k1")
            assert str(info.value) == f"{url}: POST /v1/chat/completions failed: [Errno 111] Connection refused"
            with pytest.raises(TargetError) as info:
                target.call("gateway.ledger")
            assert str(info.value) == f"{url}: GET /v1/ledger failed: [Errno 111] Connection refused"
    finally:
        target.close()


def test_the_client_never_goes_through_a_proxy(echo: tuple[str, Log], monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    target = opened(echo[0], ledger_path="/v1/ledger")
    try:
        assert target.call("gateway.chat", request=REQUEST, api_key="k1")["status"] == 200
        assert target.call("gateway.ledger") == {"ledger": echo_gateway.LEDGER}
    finally:
        target.close()


# ---------------------------------------------------------------------- gateway.ledger


def test_the_ledger_is_read_with_the_first_key(target: HttpTarget, echo: tuple[str, Log]) -> None:
    echo[1].clear()
    assert target.call("gateway.ledger") == {"ledger": echo_gateway.LEDGER}
    assert echo[1] == [("GET", "/v1/ledger", "k1")]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "/v1/nothing",
            '{path}: GET /v1/nothing (--ledger-path) answered 404: {{"error": {{"message": "no route '
            '/v1/nothing", "type": "not_found"}}}}',
        ),
        ("/text", "{path}: GET /text answered something that is not JSON: 'not json'"),
        ("/longtext", "{path}: GET /longtext answered something that is not JSON: '" + "y" * 300 + "'"),
        (
            "/" + "n" * 600,
            "{path}: GET /"
            + "n" * 600
            + " (--ledger-path) answered 404: "
            + ('{{"error": {{"message": "no route /' + "n" * 600)[
                :502
            ],  # 500 characters once the doubled braces are formatted
        ),
    ],
)
def test_a_ledger_that_is_not_served_is_an_error(echo: tuple[str, Log], path: str, message: str) -> None:
    target = opened(echo[0], ledger_path=path)
    try:
        with pytest.raises(TargetError) as info:
            target.call("gateway.ledger")
        assert str(info.value) == message.format(path=echo[0])
    finally:
        target.close()


def test_a_ledger_outside_its_schema_is_an_error(echo: tuple[str, Log]) -> None:
    target = opened(echo[0], ledger_path="/v1/models")
    try:
        with pytest.raises(TargetError, match=r"^http://\S+: gateway\.ledger returned a result outside its schema"):
            target.call("gateway.ledger")
    finally:
        target.close()


def test_a_slow_ledger_is_a_timeout_error(echo: tuple[str, Log]) -> None:
    target = opened(echo[0], ledger_path="/slow", request_timeout_s=0.3)
    try:
        with pytest.raises(TargetError) as info:
            target.call("gateway.ledger")
        assert str(info.value) == f"{echo[0]}: no answer to GET /slow within 0.3 s"
    finally:
        target.close()


@pytest.mark.parametrize(
    ("stream", "answer", "read"),
    [
        (False, (200, [("Content-Type", "application/json")], b'{"id": "r1"}'), {"status": 200, "body": {"id": "r1"}}),
        (True, (200, SSE, EVENTS), {"status": 200, "events": ["a", "[DONE]"]}),
        (True, (400, [("Content-Type", "application/json")], b'{"error": {}}'), {"status": 400, "body": {"error": {}}}),
        (False, (404, [], b"Not Found"), {"status": 404, "body": "Not Found"}),
    ],
    ids=["body", "stream", "stream-refused", "no-responses-api"],
)
def test_respond_posts_the_body_as_given_and_reads_the_answer(stream: bool, answer: Any, read: dict[str, Any]) -> None:
    request = {"model": "m-test", "input": [{"role": "user", "content": "hi"}], "stream": stream, "store": True}
    read_back = (200, [("Content-Type", "application/json")], b'{"status": "completed"}')
    answers = {("POST", "/v1/responses"): answer, ("GET", "/v1/responses/r1"): read_back}
    with canned_server(answers) as (url, received):
        target = opened(url)
        try:
            assert target.call("gateway.respond", request=request, api_key="k1") == read
            got = target.call("gateway.retrieve", response_id="r1", api_key="k1")
        finally:
            target.close()
    assert got == {"status": 200, "body": {"status": "completed"}}
    [(_, path, headers, body)] = [r for r in received if r[0] == "POST"]
    assert (path, headers["authorization"], json.loads(body)) == ("/v1/responses", "Bearer k1", request)

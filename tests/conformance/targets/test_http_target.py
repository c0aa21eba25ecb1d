"""Black-box HTTP targets: launching and wiring a gateway (dial, spawn), the gateway.* operations over
the official openai client, usage errors, failures to start, and the process group ended at stop.
The gateway is tests/support/echo_gateway.py, a standard-library HTTP server."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.errors import GatewayGone, TargetError, TargetSpecError
from conformance.targets import HttpOptions, HttpTarget, LaunchedGateway, LaunchSpec
from conformance.targets import load_target as load_any_target
from conformance.targets._launch import KIT_CSRF_TOKEN, free_port
from fakels.demo import play_turn
from fakels.scenario import Chunk, Scenario, Turn, scenario_to_document
from tests.conformance.plugin.plugin_support import run
from tests.conformance.targets.targets_support import ALWAYS_OFFERED, untimed
from tests.support import echo_gateway

pytest_plugins = ["pytester"]

ECHO = Path(echo_gateway.__file__).resolve()
SCENARIO = scenario_to_document(Scenario(turns=(Turn(chunks=(Chunk(text="from the kit's fake"),)),)))
REQUEST = {"model": "m-test", "messages": [{"role": "user", "content": "hi"}]}
EVENT_2 = json.dumps(echo_gateway.EVENT_2).replace(', "choices"', ',\n"choices"', 1)


def echo(*extra: str) -> str:
    return shlex.join([sys.executable, str(ECHO), "--port", "{port}", *extra])


DIAL = echo("--ls-address", "{ls_address}", "--csrf-token", "{csrf_token}")


def load_target(url: str, options: HttpOptions, call_timeout_s: float | None = None) -> HttpTarget:
    target = load_any_target(url, call_timeout_s=call_timeout_s, http=options)
    assert isinstance(target, HttpTarget)
    return target


def get_json(url: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return json.loads(response.read())


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its parent is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def dialled() -> Iterator[HttpTarget]:
    """One dial-wired echo gateway for the operation tests, with a ledger and two callers."""
    options = HttpOptions(launch=LaunchSpec(DIAL), api_keys=("k1", "k2"), model="m-test", ledger_path="/v1/ledger")
    target = load_target("http://127.0.0.1:0", options)
    yield target
    target.close()


# ---------------------------------------------------------------------- wiring


def test_dial_wiring_fills_the_placeholders_and_the_address_is_a_running_fake(dialled: HttpTarget) -> None:
    wiring = get_json(dialled.url + "/wiring")
    ls = dialled.wired_ls()
    assert ls is not None
    port = dialled.url.rsplit(":", 1)[1]
    assert wiring["argv"][1:] == ["--port", port, "--ls-address", ls.address, "--csrf-token", KIT_CSRF_TOKEN]
    assert ls.csrf_token == KIT_CSRF_TOKEN
    assert dialled.description == f"{dialled.url} (launched: {DIAL}, LS: dial)"
    ls.reset()
    ls.load_scenario(SCENARIO)
    assert play_turn(ls.address, ls.csrf_token, "hello").text == "from the kit's fake"
    methods = [entry["method"] for entry in ls.journal()]
    assert {"StartCascade", "SendUserCascadeMessage"} <= set(methods)
    ls.reset()
    assert ls.journal() == []


def test_placeholders_are_filled_in_launch_env_values() -> None:
    env = {"ECHO_LS": "at {ls_address} with {csrf_token}", "PORT": "{port}", "ECHO_PLAIN": '{"json": 1}'}
    spec = LaunchSpec(echo(), env=env)
    target = load_target("http://127.0.0.1:0", HttpOptions(launch=spec))
    try:
        ls = target.wired_ls()
        assert ls is not None
        seen = get_json(target.url + "/wiring")["env"]
        assert seen["ECHO_LS"] == f"at {ls.address} with {KIT_CSRF_TOKEN}"
        assert seen["PORT"] == target.url.rsplit(":", 1)[1]
        assert seen["ECHO_PLAIN"] == '{"json": 1}'  # braces around no placeholder name are left alone
    finally:
        target.close()


def test_spawn_wiring_hands_over_a_runnable_stand_in_reached_through_its_control_port() -> None:
    spec = LaunchSpec(echo(), env={"LS_BINARY": "{ls_binary}"}, wiring="spawn")
    target = load_target("http://127.0.0.1:0", HttpOptions(launch=spec))
    try:
        wiring = get_json(target.url + "/wiring")
        binary = Path(wiring["env"]["LS_BINARY"])
        assert binary.is_file()
        assert os.access(binary, os.X_OK)
        ls = target.wired_ls()
        assert ls is not None
        assert ls.address == f"127.0.0.1:{wiring['ls_child']['server_port']}"
        assert ls.csrf_token == echo_gateway.TOKEN  # the gateway's own token, as it gave it to its LS
        assert target.description.endswith("LS: spawn)")
        ls.load_scenario(SCENARIO)
        assert play_turn(ls.address, ls.csrf_token, "hello").text == "from the kit's fake"
        entries = ls.journal()
        assert "SendUserCascadeMessage" in [entry["method"] for entry in entries]
        redacted = f"<redacted: matches, {len(echo_gateway.TOKEN)} characters>"
        assert {entry["headers"]["x-codeium-csrf-token"] for entry in entries} == {redacted}
        ls.reset()
        assert ls.journal() == []
        child, gateway = wiring["ls_child"]["pid"], wiring["pid"]
    finally:
        target.close()
    assert gone(gateway)
    assert gone(child)
    assert "fakels stand-in: serving gRPC" in (target.launch_output() or "")


def test_a_gateway_that_never_spawns_its_stand_in_fails_to_start() -> None:
    spec = LaunchSpec(echo(), env={"ECHO_IGNORED": "{ls_binary}"}, wiring="spawn", ready_timeout_s=1.5)
    with pytest.raises(TargetError, match=r"did not come up on its control port \d+ within 1.5 s") as raised:
        load_target("http://127.0.0.1:0", HttpOptions(launch=spec))
    assert "echo-gateway: serving on" in str(raised.value)


def test_wiring_none_and_external_gateways_have_no_wired_ls(dialled: HttpTarget) -> None:
    external = load_target(dialled.url, HttpOptions(api_keys=("k1",)))
    try:
        assert external.wired_ls() is None
        assert external.description == dialled.url
        assert external.launch_output() is None
        assert external.operations() == ALWAYS_OFFERED
        assert external.call("gateway.chat", request=REQUEST, api_key="k1")["status"] == 200
    finally:
        external.close()
    assert get_json(dialled.url + "/v1/models")["object"] == "list"  # closing it left the gateway running
    none = load_target("http://127.0.0.1:0", HttpOptions(launch=LaunchSpec(echo(), wiring="none")))
    try:
        assert none.wired_ls() is None
    finally:
        none.close()


# ---------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("command", "wiring", "message"),
    [
        (echo("{nope}"), "dial", r"unknown placeholder \{nope\}; the placeholders are: \{ls_address\}.*\{port\}"),
        (echo("{ls_binary}"), "dial", r"\{ls_binary\} does not fit --ls-wiring dial"),
        (echo("{ls_address}"), "spawn", r"\{ls_address\} does not fit --ls-wiring spawn"),
        (echo("{csrf_token}"), "none", r"\{csrf_token\} does not fit --ls-wiring none"),
        (echo(), "dial", r"never use \{ls_address\}"),
        (echo(), "spawn", r"never use \{ls_binary\}"),
        (f"{sys.executable} {ECHO} --ls-address {{ls_address}}", "dial", r"port 0.*never use \{port\}"),
        ("", "dial", "--launch needs a command"),
        ("gateway 'unclosed", "dial", "cannot split the command"),
    ],
)
def test_launch_usage_errors(command: str, wiring: Any, message: str) -> None:
    with pytest.raises(TargetSpecError, match=message):
        load_target("http://127.0.0.1:0", HttpOptions(launch=LaunchSpec(command, wiring=wiring)))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.0.0.1:8080", "10.0.0.1 is not loopback; the kit never leaves this machine"),
        ("http://example.com:8080", "example.com is not loopback"),
        ("https://127.0.0.1:8443", "https is not supported"),
        ("http://127.0.0.1", "give the port"),
        ("http://127.0.0.1:8080/v1", "without a path"),
        ("http://127.0.0.1:0", "port 0 means 'the kit picks one'"),
        ("http://127.0.0.1:99999", "bad port"),
    ],
)
def test_urls_that_are_not_loopback_http_are_refused(url: str, message: str) -> None:
    with pytest.raises(TargetSpecError, match=message):
        load_target(url, HttpOptions())


def test_an_unstartable_command_is_a_usage_error() -> None:
    spec = LaunchSpec("/nonexistent/gateway --port {port} --ls {ls_address}")
    with pytest.raises(TargetSpecError, match="cannot start '/nonexistent/gateway'"):
        load_target("http://127.0.0.1:0", HttpOptions(launch=spec))


# ---------------------------------------------------------------------- failing to start, stopping


def test_a_gateway_that_exits_at_once_is_an_error_with_its_exit_code_and_output() -> None:
    spec = LaunchSpec(echo("--exit-at-once", "3", "--ls-address", "{ls_address}"))
    with pytest.raises(TargetError, match="exited with code 3 before it answered HTTP") as raised:
        load_target("http://127.0.0.1:0", HttpOptions(launch=spec))
    assert "its output ends:\necho-gateway: starting on port" in str(raised.value)
    assert "echo-gateway: told to exit at once" in str(raised.value)


def test_a_gateway_that_never_answers_times_out_and_is_stopped() -> None:
    spec = LaunchSpec(echo("--never-listen", "--ls-address", "{ls_address}"), ready_timeout_s=1.0)
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=0)
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"no HTTP answer on 127\.0\.0\.1:\d+ \(GET /v1/models\) within 1 s"):
        gateway.start()
    assert time.monotonic() - started < 10
    assert gateway.exit_code() == 0  # stopped on the way out (its SIGTERM handler exits 0), and reaped
    assert "echo-gateway: starting on port" in gateway.output()


def test_stop_ends_the_whole_process_group_even_when_the_gateway_ignores_sigterm() -> None:
    spec = LaunchSpec(echo("--ignore-term"), env={"LS_BINARY": "{ls_binary}"}, wiring="spawn")
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=free_port()).start()
    wiring = get_json(f"http://127.0.0.1:{gateway.port}/wiring")
    assert gateway.pid == wiring["pid"]
    gateway.stop(grace_s=0.5)
    assert gateway.exit_code() == -signal.SIGKILL
    assert not running(wiring["pid"])
    assert gone(wiring["ls_child"]["pid"])  # its LS was in the group too: no orphan left serving
    gateway.stop()  # idempotent
    assert "echo-gateway: serving on" in gateway.output()  # kept after stop


def test_a_stand_in_the_gateway_leaves_running_outside_its_group_is_ended_and_reported() -> None:
    spec = LaunchSpec(echo("--leak-ls"), env={"LS_BINARY": "{ls_binary}"}, wiring="spawn")
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=0).start()
    child = get_json(f"http://127.0.0.1:{gateway.port}/wiring")["ls_child"]["pid"]
    gateway.stop()
    assert gone(child)
    assert f"the gateway left its LS (the stand-in, pid {child}) running after it stopped" in gateway.output()


# ---------------------------------------------------------------------- operations


def test_gateway_defaults_and_operations(dialled: HttpTarget) -> None:
    assert dialled.gateway_defaults() == {
        "api_keys": ["k1", "k2"],
        "model": "m-test",
        "native_bridge": False,
        "cache_writes": None,
        "wait_limit_s": None,
        "heartbeat_s": None,
        "other_model": None,
        "resends_history": False,
    }
    store = {"store.open", "store.put", "store.get", "store.delete"}
    assert dialled.operations() == frozenset({*ALWAYS_OFFERED, "gateway.ledger", "engine.build_send_request", *store})
    assert dialled.kind == "http"
    assert dialled.capabilities("store.open") == {
        "fixed_limits": {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024},
        "shapes": ["responses"],
    }


def test_chat_non_stream_sends_the_body_as_given_with_the_callers_key(dialled: HttpTarget) -> None:
    request = REQUEST | {"temperature": 0.5, "stream": False, "cascade_extension": {"x": [1, None]}}
    answer = dialled.call("gateway.chat", request=request, api_key="k2")
    assert answer == {"status": 200, "body": echo_gateway.COMPLETION | {"received": request, "api_key": "k2"}}


def test_chat_with_an_empty_key_sends_no_authorization(dialled: HttpTarget) -> None:
    answer = dialled.call("gateway.chat", request=REQUEST, api_key="")
    assert answer["body"]["api_key"] == ""
    assert dialled.call("gateway.chat", request=REQUEST, api_key="k1")["body"]["api_key"] == "k1"


def test_chat_keeps_a_malformed_body_as_it_is(dialled: HttpTarget) -> None:
    requests: list[dict[str, Any]] = [{"messages": []}, {"model": "m-test"}, {"stream": "yes", "model": 3}]
    for request in requests:
        answer = dialled.call("gateway.chat", request=request, api_key="k1")
        assert answer["body"]["received"] == request


def test_chat_stream_answers_the_events_in_order_without_comments(dialled: HttpTarget) -> None:
    answer = dialled.call("gateway.chat", request=REQUEST | {"stream": True}, api_key="k1")
    assert untimed(answer) == {"status": 200, "events": [json.dumps(echo_gateway.EVENT_1), EVENT_2, "[DONE]"]}


@pytest.mark.parametrize("stream", [False, True])
def test_chat_error_statuses_answer_status_and_body(dialled: HttpTarget, stream: bool) -> None:
    bad = dialled.call("gateway.chat", request={"model": "bad", "messages": [], "stream": stream}, api_key="k1")
    assert bad == {
        "status": 400,
        "body": {"error": {"message": "unknown model bad", "type": "invalid_request_error", "code": None}},
    }
    text = dialled.call("gateway.chat", request={"model": "text-error", "messages": [], "stream": stream}, api_key="k1")
    assert text == {"status": 502, "body": "upstream broke"}


def test_ledger_is_read_with_the_first_key_and_checked_against_the_schema(dialled: HttpTarget) -> None:
    assert dialled.call("gateway.ledger") == {"ledger": echo_gateway.LEDGER}
    assert get_json(dialled.url + "/wiring")["ledger_api_key"] == "k1"
    models = load_target(dialled.url, HttpOptions(ledger_path="/v1/models"))
    missing = load_target(dialled.url, HttpOptions(ledger_path="/v1/nothing"))
    try:
        with pytest.raises(TargetError, match=r"gateway\.ledger returned a result outside its schema"):
            models.call("gateway.ledger")
        with pytest.raises(TargetError, match=r"GET /v1/nothing \(--ledger-path\) answered 404"):
            missing.call("gateway.ledger")
    finally:
        models.close()
        missing.close()


def test_without_a_ledger_path_the_ledger_is_not_implemented(dialled: HttpTarget) -> None:
    target = load_target(dialled.url, HttpOptions())
    try:
        with pytest.raises(TargetError, match=r"does not implement gateway\.ledger"):
            target.call("gateway.ledger")
    finally:
        target.close()


def test_a_slow_answer_is_a_timeout_error(dialled: HttpTarget) -> None:
    target = load_target(dialled.url, HttpOptions(), call_timeout_s=0.5)
    try:
        with pytest.raises(TargetError, match=r"no answer to POST /v1/chat/completions within 0.5 s"):
            target.call("gateway.chat", request={"model": "slow", "messages": []}, api_key="k1")
    finally:
        target.close()


def test_nothing_listening_is_a_clear_error() -> None:
    with pytest.raises(TargetError, match=r"nothing answers at http://127\.0\.0\.1:\d+ .*--launch"):
        load_target(f"http://127.0.0.1:{free_port()}", HttpOptions())


def test_a_gateway_that_died_ends_the_run_naming_its_end() -> None:
    target = load_target("http://127.0.0.1:0", HttpOptions(launch=LaunchSpec(DIAL)))
    try:
        os.kill(get_json(target.url + "/wiring")["pid"], signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(
            GatewayGone, match=r"^the gateway \(.*\) was ended by SIGKILL during the run; its last words"
        ):
            target.call("gateway.chat", request=REQUEST, api_key="k1")
    finally:
        target.close()


# ---------------------------------------------------------------------- command line and plugin


@pytest.mark.parametrize(
    "argv",
    [
        ["--launch", "gateway --port {port}"],
        ["--target", "python:conformance.targets.reference:make_target", "--api-key", "k"],
        ["--target", "http://10.1.2.3:80"],
        ["--target", "http://127.0.0.1:0", "--launch", DIAL, "--launch-env", "NO_EQUALS_SIGN"],
        ["--target", "http://127.0.0.1:0", "--launch", echo("{nope}")],
        ["--target", "http://127.0.0.1:8080", "--ls-wiring", "spawn"],
        ["--target", "http://127.0.0.1:8080", "--ledger-path", "v1/ledger"],
    ],
)
def test_cli_usage_errors_exit_2_with_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv, "--only", "WIRE-1", "--report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cascade-conformance: ")
    assert len(err.strip().splitlines()) == 1


def test_cli_run_launches_the_gateway_and_keeps_its_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--target", "http://127.0.0.1:0", "--launch", echo(), "--launch-env", "ECHO_LS={ls_address}"]
    assert main([*argv, "--only", "WIRE-1", "--report", str(tmp_path)]) == 1  # judged nothing: not a pass
    captured = capsys.readouterr()
    assert "target: http://127.0.0.1:" in captured.err
    assert re.search(r"^WIRE-1\s+not checkable", captured.out, re.MULTILINE)
    assert "\nnothing was judged: all 1 invariant(s) were not checkable" in captured.out
    assert "echo-gateway: serving on" in (tmp_path / "gateway-output.log").read_text(encoding="utf-8")


def test_plugin_http_options_without_an_http_target_are_usage_errors(pytester: pytest.Pytester) -> None:
    alone = run(pytester, "--cascade-launch", "gateway")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--cascade-launch needs --cascade-target*"])
    reference = run(pytester, "--cascade-target", "reference", "--cascade-api-key", "k")
    assert reference.ret == pytest.ExitCode.USAGE_ERROR
    reference.stderr.fnmatch_lines(["*--cascade-api-key applies only to an http:// target*"])


def test_plugin_runs_against_a_launched_gateway(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        "--cascade-target",
        "http://127.0.0.1:0",
        "--cascade-launch",
        echo(),
        "--cascade-ls-wiring",
        "none",
        "--cascade-only",
        "WIRE-1",
        "-rs",
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not checkable on this target*"])

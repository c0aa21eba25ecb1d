"""The HTTP target's command-line side: its URL, its options, the store limits it declares, and how
it reads answers (server-sent events, bodies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.errors import TargetSpecError
from conformance.targets import HttpOptions, LaunchSpec, http_options
from conformance.targets._http import PROBE_TIMEOUT_S
from conformance.targets._http_options import DEFAULT_API_KEY, DEFAULT_MODEL, DEFAULT_REQUEST_TIMEOUT_S
from conformance.targets._http_responses import body_of as _body
from conformance.targets._http_store import DEFAULT_STORE_LIMITS, MAX_BODY_BYTES, answer_text, parse_store_limits
from conformance.targets._loopback import loopback_url
from conformance.targets._sse import sse_events

ROOT = "without a path, query or user (the kit calls /v1/... itself)"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "https://127.0.0.1:1",
            "https is not supported: the kit talks plain HTTP to a gateway on loopback (http://127.0.0.1:PORT)",
        ),
        ("ftp://127.0.0.1:1", "an HTTP target is http://HOST:PORT"),
        ("http://127.0.0.1:99999", "bad port: Port out of range 0-65535"),
        (
            "http://10.0.0.1:80",
            "10.0.0.1 is not loopback; the kit never leaves this machine (use 127.0.0.1, ::1, localhost)",
        ),
        ("http://:80", "no host is not loopback; the kit never leaves this machine (use 127.0.0.1, ::1, localhost)"),
        ("http://127.0.0.1", "give the port, e.g. http://127.0.0.1:8080 (or port 0 with --launch)"),
        ("http://127.0.0.1:80/x", f"give the gateway's root, http://127.0.0.1:80, {ROOT}"),
        ("http://localhost:0?q", f"give the gateway's root, http://localhost:0, {ROOT}"),
        ("http://localhost:1#f", f"give the gateway's root, http://localhost:1, {ROOT}"),
        ("http://u@localhost:1", f"give the gateway's root, http://localhost:1, {ROOT}"),
        ("http://:p@localhost:1", f"give the gateway's root, http://localhost:1, {ROOT}"),
    ],
)
def test_target_urls_other_than_a_loopback_root_are_usage_errors(url: str, message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        loopback_url(url)
    assert str(info.value) == f"{url!r}: {message}"


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("http://127.0.0.1:80", ("127.0.0.1", 80)),
        ("http://127.0.0.1:80/", ("127.0.0.1", 80)),
        ("http://[::1]:5", ("::1", 5)),
        ("http://localhost:0", ("localhost", 0)),
    ],
)
def test_loopback_roots_give_host_and_port(url: str, where: tuple[str, int]) -> None:
    assert loopback_url(url) == where


def test_no_http_option_means_none() -> None:
    assert http_options("http://127.0.0.1:1") is None
    assert http_options("python:x:y", launch_env=[], api_keys=[]) is None


def test_http_option_defaults() -> None:
    assert HttpOptions() == HttpOptions(
        launch=None,
        api_keys=(DEFAULT_API_KEY,),
        model=DEFAULT_MODEL,
        ledger_path=None,
        request_timeout_s=DEFAULT_REQUEST_TIMEOUT_S,
        native_bridge=False,
        store_limits=None,
        cache_writes=None,
        wait_limit_s=None,
        heartbeat_s=None,
    )
    assert (DEFAULT_API_KEY, DEFAULT_MODEL, DEFAULT_REQUEST_TIMEOUT_S, PROBE_TIMEOUT_S) == (
        "conformance-key",
        "claude-sonnet-4-6",
        120.0,
        10.0,
    )


def test_every_option_is_carried_into_the_options(tmp_path: Path) -> None:
    options = http_options(
        "http://127.0.0.1:0",
        launch="gw --port {port}",
        launch_cwd=str(tmp_path),
        launch_env=["A={port}", "B=x=y", "C="],
        ls_wiring="spawn",
        api_keys=["k1", "k2"],
        model="m",
        ledger_path="/v1/ledger",
        ready_timeout_s=2.5,
        native_bridge=True,
        store_limits="max_messages=4",
        cache_writes="apart",
        wait_limit_s=2.5,
        heartbeat_s=0.25,
    )
    assert options == HttpOptions(
        launch=LaunchSpec(
            command="gw --port {port}",
            cwd=tmp_path,
            env={"A": "{port}", "B": "x=y", "C": ""},
            wiring="spawn",
            ready_timeout_s=2.5,
        ),
        api_keys=("k1", "k2"),
        model="m",
        ledger_path="/v1/ledger",
        native_bridge=True,
        store_limits={"max_messages": 4, "max_entry_bytes": DEFAULT_STORE_LIMITS["max_entry_bytes"]},
        cache_writes="apart",
        wait_limit_s=2.5,
        heartbeat_s=0.25,
    )


@pytest.mark.parametrize("seconds", [0.001, 3600.0])
def test_declared_time_limits_at_their_bounds_are_taken(seconds: float) -> None:
    options = http_options("http://127.0.0.1:1", wait_limit_s=seconds, heartbeat_s=seconds)
    assert options == HttpOptions(wait_limit_s=seconds, heartbeat_s=seconds)


def test_options_without_launch_launch_nothing() -> None:
    assert http_options("http://127.0.0.1:1", model="m") == HttpOptions(model="m")
    assert http_options("http://127.0.0.1:1", api_keys=["a"]) == HttpOptions(api_keys=("a",))


def test_launch_alone_takes_the_launch_defaults() -> None:
    options = http_options("http://127.0.0.1:0", launch="gw")
    assert options == HttpOptions(
        launch=LaunchSpec(command="gw", cwd=None, env={}, wiring="dial", ready_timeout_s=30.0)
    )
    ready = http_options("http://127.0.0.1:0", launch="gw", ready_timeout_s=0.0)
    assert ready is not None
    assert ready.launch is not None
    assert ready.launch.ready_timeout_s == 0.0


@pytest.mark.parametrize(
    ("target", "given", "message"),
    [
        (None, {"model": "m"}, "--model applies only to an http:// target (--target http://HOST:PORT)"),
        (
            "python:a:b",
            {"native_bridge": True},
            "--native-bridge applies only to an http:// target (--target http://HOST:PORT)",
        ),
        (
            "exec:x",
            {
                "launch": "x",
                "launch_cwd": "/",
                "launch_env": ["A=1"],
                "ls_wiring": "dial",
                "api_keys": ["k"],
                "ledger_path": "/l",
                "ready_timeout_s": 1.0,
                "store_limits": "max_messages=1",
            },
            "--launch, --launch-cwd, --launch-env, --ls-wiring, --ready-timeout, --api-key, --ledger-path, "
            "--store-limits apply only to an http:// target (--target http://HOST:PORT)",
        ),
        ("http://127.0.0.1:1", {"launch_cwd": "/"}, "--launch-cwd needs --launch: how the kit starts the gateway"),
        ("http://127.0.0.1:1", {"launch_env": ["A=1"]}, "--launch-env needs --launch: how the kit starts the gateway"),
        ("http://127.0.0.1:1", {"ls_wiring": "dial"}, "--ls-wiring needs --launch: how the kit starts the gateway"),
        (
            "http://127.0.0.1:1",
            {"ready_timeout_s": 1.0, "launch_cwd": "/"},
            "--launch-cwd, --ready-timeout need --launch: how the kit starts the gateway",
        ),
        (
            "http://127.0.0.1:1",
            {"launch": "x", "ls_wiring": "tcp"},
            "--ls-wiring must be one of dial, spawn, none, got 'tcp'",
        ),
        (
            "http://127.0.0.1:1",
            {"ledger_path": "v1/ledger"},
            "--ledger-path is a path on the gateway, e.g. /v1/ledger, got 'v1/ledger'",
        ),
        ("http://127.0.0.1:1", {"api_keys": ["k", ""]}, "--api-key cannot be empty"),
        ("http://127.0.0.1:1", {"model": ""}, "--model cannot be empty"),
        (
            "http://127.0.0.1:1",
            {"other_model": ""},
            "--other-model must name a model other than --model (claude-sonnet-4-6), got ''",
        ),
        (
            "http://127.0.0.1:1",
            {"model": "m", "other_model": "m"},
            "--other-model must name a model other than --model (m), got 'm'",
        ),
        (
            None,
            {"resends_history": True},
            "--resends-history applies only to an http:// target (--target http://HOST:PORT)",
        ),
        (
            "http://127.0.0.1:1",
            {"cache_writes": "input"},
            "--cache-writes must be one of prompt, apart, got 'input'",
        ),
        (
            None,
            {"cache_writes": "prompt"},
            "--cache-writes applies only to an http:// target (--target http://HOST:PORT)",
        ),
        (
            "http://127.0.0.1:1",
            {"launch": "x", "launch_env": ["NOEQUALS"]},
            "--launch-env 'NOEQUALS': expected NAME=VALUE, e.g. --launch-env PORT={port}",
        ),
        (
            "http://127.0.0.1:1",
            {"launch": "x", "launch_env": ["1A=v"]},
            "--launch-env '1A=v': expected NAME=VALUE, e.g. --launch-env PORT={port}",
        ),
        (
            "http://127.0.0.1:1",
            {"launch": "x", "launch_env": ["É=v"]},
            "--launch-env 'É=v': expected NAME=VALUE, e.g. --launch-env PORT={port}",
        ),
        (
            "http://127.0.0.1:1",
            {"store_limits": "max_messages=0"},
            "--store-limits: max_messages must be a positive integer or size, got '0'",
        ),
    ],
)
def test_option_usage_errors_are_one_line(target: str | None, given: dict[str, Any], message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options(target, **given)
    assert str(info.value) == message


def test_the_plugin_prefix_names_its_options() -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options("python:a:b", model="m", prefix="--cascade-")
    assert str(info.value) == "--cascade-model applies only to an http:// target (--cascade-target http://HOST:PORT)"
    with pytest.raises(TargetSpecError) as info:
        http_options("http://127.0.0.1:1", launch="x", launch_env=["bad"], prefix="--cascade-")
    assert str(info.value) == "--cascade-launch-env 'bad': expected NAME=VALUE, e.g. --cascade-launch-env PORT={port}"
    with pytest.raises(TargetSpecError) as info:
        http_options("http://127.0.0.1:1", store_limits="x=1", prefix="--cascade-")
    assert str(info.value).startswith("--cascade-store-limits 'x=1': expected")


# ---------------------------------------------------------------------- store limits


@pytest.mark.parametrize(
    ("text", "limits"),
    [
        ("max_messages=40", {"max_messages": 40, "max_entry_bytes": 32 * 1024 * 1024}),
        ("max_entry_bytes=100k", {"max_messages": 400, "max_entry_bytes": 102400}),
        (" max_messages=3 , max_entry_bytes= 7 ", {"max_messages": 3, "max_entry_bytes": 7}),
        ("max_entry_bytes=5b", {"max_messages": 400, "max_entry_bytes": 5}),
        ("max_entry_bytes=2KB", {"max_messages": 400, "max_entry_bytes": 2048}),
        ("max_entry_bytes=1m", {"max_messages": 400, "max_entry_bytes": 1024**2}),
        ("max_entry_bytes=3 Mb", {"max_messages": 400, "max_entry_bytes": 3 * 1024**2}),
        ("max_entry_bytes=1g", {"max_messages": 400, "max_entry_bytes": 1024**3}),
        ("max_entry_bytes=2gb", {"max_messages": 400, "max_entry_bytes": 2 * 1024**3}),
        ("max_messages=1", {"max_messages": 1, "max_entry_bytes": 32 * 1024 * 1024}),
    ],
)
def test_store_limits_are_counts_and_1024_based_sizes(text: str, limits: dict[str, int]) -> None:
    assert parse_store_limits(text) == limits


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "max_messages",
            "--store-limits 'max_messages': expected max_messages=N,max_entry_bytes=SIZE "
            "(e.g. max_messages=40,max_entry_bytes=100k)",
        ),
        (
            "other=1",
            "--store-limits 'other=1': expected max_messages=N,max_entry_bytes=SIZE "
            "(e.g. max_messages=40,max_entry_bytes=100k)",
        ),
        ("max_messages=0", "--store-limits: max_messages must be a positive integer or size, got '0'"),
        ("max_entry_bytes=1t", "--store-limits: max_entry_bytes must be a positive integer or size, got '1t'"),
        ("max_entry_bytes=-1", "--store-limits: max_entry_bytes must be a positive integer or size, got '-1'"),
        ("max_entry_bytes=k", "--store-limits: max_entry_bytes must be a positive integer or size, got 'k'"),
        ("max_entry_bytes=1kx", "--store-limits: max_entry_bytes must be a positive integer or size, got '1kx'"),
        ("max_entry_bytes=x1k", "--store-limits: max_entry_bytes must be a positive integer or size, got 'x1k'"),
        ("max_messages=1=2", "--store-limits: max_messages must be a positive integer or size, got '1=2'"),
    ],
)
def test_bad_store_limits_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        parse_store_limits(text)
    assert str(info.value) == message


def test_store_defaults_are_the_references() -> None:
    assert DEFAULT_STORE_LIMITS == {"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024}
    assert MAX_BODY_BYTES == 15 * 1024 * 1024
    parse_store_limits("max_messages=1")
    assert DEFAULT_STORE_LIMITS["max_messages"] == 400


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ([], None),
        ([{"type": "reasoning", "content": [{"text": "r"}]}], None),
        (
            [
                {"type": "message", "content": [{"type": "output_text", "text": "a"}, {"text": "b"}]},
                {"type": "function_call", "name": "f"},
                {"type": "message", "content": [{"text": "c"}, "not a part", {"type": "refusal"}]},
            ],
            "c",
        ),
        ([{"type": "message", "content": None}], ""),
        (["not an item", {"type": "message", "content": [{"text": "x"}, {"text": "y"}]}], "xy"),
    ],
)
def test_the_answer_served_back_is_the_last_messages_text(output: list[Any], text: str | None) -> None:
    assert answer_text(output) == text


# ---------------------------------------------------------------------- reading answers


@pytest.mark.parametrize(
    ("lines", "events"),
    [
        (["data: a", ""], ["a"]),
        (["data:a", ""], ["a"]),
        (["data:  a", ""], [" a"]),
        (["data: a", "data:b", ""], ["a\nb"]),
        ([": ping", "", "data: x", ""], ["x"]),
        (["event: chunk", "id: 1", "data: x", ""], ["x"]),
        (["event: only", ""], []),
        (["data", ""], [""]),
        (["data: a", "", "", "data: b", ""], ["a", "b"]),
        (["data: unfinished"], []),
        (["datum: x", "data: y", ""], ["y"]),
    ],
)
def test_server_sent_events_are_dispatched_at_blank_lines(lines: list[str], events: list[str]) -> None:
    assert list(sse_events(lines)) == events


@pytest.mark.parametrize(
    ("content", "body"),
    [
        (b'{"a": [1]}', {"a": [1]}),
        (b"plain text", "plain text"),
        (b"\xff\xfe", "\ufffd\ufffd"),
        (b"", ""),
    ],
)
def test_bodies_are_json_or_text(content: bytes, body: Any) -> None:
    assert _body(content) == body

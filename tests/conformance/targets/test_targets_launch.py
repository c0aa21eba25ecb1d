"""Launching a gateway under test: the usage errors before anything starts, the placeholders, and
what the kit says about a gateway that fails to come up (the "gateways" here are ``sh`` and
``sleep``; the kit's side runs in this process, the HTTP answers come from an in-process server)."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from conformance.errors import TargetError, TargetSpecError
from conformance.ls_handle import InProcessLs, StandinLs
from conformance.targets import LaunchedGateway, LaunchSpec
from conformance.targets._launch import (
    KIT_CSRF_TOKEN,
    _group_alive,
    _running,
    _signal,
    _signal_group,
    describe_exit,
    fill,
    free_port,
)
from tests.conformance.targets import targets_support

KNOWN = (
    "{ls_address} (dial: the fake LS's HOST:PORT), "
    "{ls_h2_address} (dial: the same fake LS's hand-written gRPC port (LS failures at the HTTP level)), "
    "{csrf_token} (dial: the CSRF token the fake LS checks), "
    "{ls_binary} (spawn: the stand-in LS binary to spawn), {port} (the gateway's HTTP port), "
    "{python} (the kit's own Python interpreter)"
)
FOR_DIAL = "{ls_address}, {ls_h2_address} and {csrf_token} are for dial, {ls_binary} for spawn)"
NEVER = "the launch command and its --launch-env values never use"

# The shared fixtures: one echo gateway per module, launched groups reaped after each test.
echo_port = targets_support.echo_port
reaped = targets_support.reaped


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (LaunchSpec(""), '--launch needs a command, e.g. --launch "node src/index.js"'),
        (LaunchSpec("  "), '--launch needs a command, e.g. --launch "node src/index.js"'),
        (LaunchSpec("gw 'open"), '--launch "gw \'open": cannot split the command: No closing quotation'),
        (LaunchSpec("gw {ls_address}", wiring="tcp"), "--ls-wiring must be one of dial, spawn, none, got 'tcp'"),  # type: ignore[arg-type]
        (
            LaunchSpec("gw {ls_address}", ready_timeout_s=0),
            "--ready-timeout must be a positive number of seconds, got 0",
        ),
        (
            LaunchSpec("gw {ls_address}", ready_timeout_s=-2),
            "--ready-timeout must be a positive number of seconds, got -2",
        ),
        (LaunchSpec("gw {ls_address}", cwd=Path("/nonexistent/dir")), "--launch-cwd /nonexistent/dir: not a directory"),
        (
            LaunchSpec("gw {nope} {ls_address}"),
            f"--launch: unknown placeholder {{nope}}; the placeholders are: {KNOWN}",
        ),
        (LaunchSpec("gw {b} {a}"), f"--launch: unknown placeholder {{a}}, {{b}}; the placeholders are: {KNOWN}"),
        (
            LaunchSpec("gw {ls_address}", env={"X": "{zz}"}),
            f"--launch: unknown placeholder {{zz}}; the placeholders are: {KNOWN}",
        ),
        (
            LaunchSpec("gw {ls_binary} {ls_address}"),
            "--launch: {ls_binary} does not fit --ls-wiring dial (with dial the placeholders are {csrf_token}, "
            f"{{ls_address}}, {{ls_h2_address}}, {{port}}, {{python}}; {FOR_DIAL}",
        ),
        (
            LaunchSpec("gw {ls_address}", wiring="spawn"),
            f"--launch: {{ls_address}} does not fit --ls-wiring spawn (with spawn the placeholders are {{ls_binary}}, "
            f"{{port}}, {{python}}; {FOR_DIAL}",
        ),
        (
            LaunchSpec("gw {ls_binary} {csrf_token} {ls_address}", wiring="none"),
            "--launch: {csrf_token}, {ls_address}, {ls_binary} does not fit --ls-wiring none (with none the "
            f"placeholders are {{port}}, {{python}}; {FOR_DIAL}",
        ),
        (
            LaunchSpec("gw --port {port} {csrf_token}"),
            f"--ls-wiring dial: {NEVER} {{ls_address}}, so the gateway cannot find the kit's LS (use --ls-wiring none "
            "for HTTP-only checks)",
        ),
        (
            LaunchSpec("gw --port {port}", wiring="spawn"),
            f"--ls-wiring spawn: {NEVER} {{ls_binary}}, so the gateway cannot find the kit's LS (use --ls-wiring none "
            "for HTTP-only checks)",
        ),
        (
            LaunchSpec("gw {ls_address}"),
            f"the target URL says port 0 (the kit picks one) but {NEVER} {{port}}: pass it to the gateway, or give "
            "the port it listens on in the URL",
        ),
    ],
)
def test_launch_usage_errors_come_before_anything_starts(spec: LaunchSpec, message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        LaunchedGateway(spec, host="127.0.0.1", port=0)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "spec",
    [
        LaunchSpec("gw {port}", env={"LS": "{ls_address}"}),
        LaunchSpec("gw {ls_binary}", env={"P": "{port}"}, wiring="spawn"),
        LaunchSpec("gw", env={"P": "{port}"}, wiring="none"),
        LaunchSpec("gw {port} {ls_address}", ready_timeout_s=0.001),
    ],
)
def test_placeholders_may_be_used_in_the_command_or_its_environment(spec: LaunchSpec) -> None:
    spec.check(needs_port=True)


def test_a_fixed_port_needs_no_port_placeholder(tmp_path: Path) -> None:
    LaunchSpec("gw {ls_address}", cwd=tmp_path).check(needs_port=False)
    assert LaunchSpec("gw 'a b' c").words() == ["gw", "a b", "c"]


def test_launch_defaults() -> None:
    spec = LaunchSpec("gw")
    assert (spec.cwd, dict(spec.env), spec.wiring, spec.ready_timeout_s, spec.csrf_token) == (
        None,
        {},
        "dial",
        30.0,
        KIT_CSRF_TOKEN,
    )
    assert KIT_CSRF_TOKEN == "cascade-conformance-kit-csrf-token"


def test_fill_replaces_known_placeholders_only() -> None:
    values = {"port": "81", "ls_address": "127.0.0.1:9"}
    assert fill("--port={port} {ls_address} {other} {port}", values) == "--port=81 127.0.0.1:9 {other} 81"
    assert fill("{ not } {1x} {_a1}", {"_a1": "z"}) == "{ not } {1x} z"


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "exited with code 0"),
        (3, "exited with code 3"),
        (-9, "was ended by SIGKILL"),
        (-15, "was ended by SIGTERM"),
        (-1, "was ended by SIGHUP"),
        (-200, "was ended by signal 200"),
    ],
)
def test_exit_codes_are_described(code: int, text: str) -> None:
    assert describe_exit(code) == text


def test_process_liveness_is_read_without_counting_zombies() -> None:
    assert _running(os.getpid())
    assert _group_alive(os.getpgrp())
    assert not _running(2**22 + 7)
    assert not _group_alive(2**22 + 7)
    pid = os.fork()
    if pid == 0:  # the child leads a group of its own, then exits
        try:
            os.setpgid(0, 0)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _running(pid)  # a zombie until reaped
    assert not _group_alive(pid)  # its group holds only that zombie
    os.waitpid(pid, 0)


def test_a_process_whose_name_holds_parentheses_and_non_ascii_is_read_from_its_last_parenthesis() -> None:
    pid = os.fork()
    if pid == 0:  # the child only renames itself and waits to be killed
        try:
            os.setpgid(0, 0)
            Path("/proc/self/comm").write_bytes("x) Z (é".encode())
            time.sleep(30)
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 5
        while b") Z (\xc3\xa9)" not in Path(f"/proc/{pid}/stat").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _running(pid)
        assert _group_alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_signalling_a_process_or_group_that_is_gone_is_not_an_error() -> None:
    gone = 2**22 + 7
    _signal(gone, signal.SIGTERM)
    _signal_group(gone, signal.SIGTERM)
    assert not _running(gone)


# ---------------------------------------------------------------------- starting and stopping


def test_an_unstartable_command_is_a_usage_error() -> None:
    spec = LaunchSpec("/nonexistent/gateway --ls {ls_address}")
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=free_port())
    with pytest.raises(TargetSpecError) as info:
        gateway.start()
    assert str(info.value).startswith(
        "--launch '/nonexistent/gateway --ls {ls_address}': cannot start '/nonexistent/gateway': "
    )
    assert gateway.pid is None
    assert gateway.exit_code() is None


def test_a_gateway_that_exits_at_once_is_an_error_with_its_exit_code_and_output() -> None:
    command = "sh -c 'echo starting on $0; echo told to stop >&2; exit 3' {port} {ls_address}"
    gateway = LaunchedGateway(LaunchSpec(command), host="127.0.0.1", port=0)
    with pytest.raises(TargetError) as info:
        gateway.start()
    assert str(info.value) == (
        f"the gateway ({command}): exited with code 3 before it answered HTTP; its output ends:\n"
        f"starting on {gateway.port}\ntold to stop"
    )
    assert gateway.exit_code() == 3
    assert gateway.output() == f"starting on {gateway.port}\ntold to stop\n"


def test_a_silent_gateway_that_never_answers_times_out_and_is_stopped() -> None:
    command = "sh -c 'exec sleep 30' {port} {ls_address}"
    gateway = LaunchedGateway(LaunchSpec(command, ready_timeout_s=0.3), host="127.0.0.1", port=0)
    with pytest.raises(TargetError) as info:
        gateway.start()
    assert str(info.value) == (
        f"the gateway ({command}): no HTTP answer on 127.0.0.1:{gateway.port} (GET /v1/models) within 0.3 s "
        "(--ready-timeout); it wrote no output"
    )
    assert gateway.exit_code() == -signal.SIGTERM
    assert gateway.output_tail() == ""


def test_a_port_that_accepts_but_never_answers_http_is_not_ready() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        gateway = LaunchedGateway(
            LaunchSpec("sleep 30", wiring="none", ready_timeout_s=0.1, own_port=False), host="127.0.0.1", port=port
        )
        started = time.monotonic()
        with pytest.raises(TargetError) as info:
            gateway.start()
        assert str(info.value).startswith(
            f"the gateway (sleep 30): no HTTP answer on 127.0.0.1:{port} (GET /v1/models) within 0.1 s "
            "(--ready-timeout)"
        )
        assert time.monotonic() - started < 0.8  # each attempt waits at most the time left


def test_the_gateway_gets_its_filled_command_environment_and_cwd(echo_port: int, tmp_path: Path) -> None:
    script = 'echo "$0 $1 $GW_LS $GW_PORT $(pwd)"; exec sleep 30'
    spec = LaunchSpec(
        f"sh -c '{script}' {{csrf_token}} {{ls_address}}",
        cwd=tmp_path,
        env={"GW_LS": "ls={ls_address}", "GW_PORT": "{port}"},
        csrf_token="tok-1",
        own_port=False,
    )
    with LaunchedGateway(spec, host="127.0.0.1", port=echo_port) as gateway:
        assert isinstance(gateway.ls, InProcessLs)
        address = gateway.ls.address
        assert gateway.ls.csrf_token == "tok-1"
        assert gateway.pid is not None
        assert gateway.exit_code() is None
        deadline = time.monotonic() + 5
        while not gateway.output() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gateway.output() == f"tok-1 {address} ls={address} {echo_port} {tmp_path}\n"
    assert gateway.exit_code() == -signal.SIGTERM
    assert gateway.output_tail() == f"tok-1 {address} ls={address} {echo_port} {tmp_path}"
    with socket.socket() as probe:
        host, port = address.rsplit(":", 1)
        assert probe.connect_ex((host, int(port))) != 0  # the kit's fake is stopped with the gateway


def test_output_tail_keeps_the_last_lines() -> None:
    command = "sh -c 'for i in $(seq 1 40); do echo line $i; done; echo; echo; exit 1' {port} {ls_address}"
    gateway = LaunchedGateway(LaunchSpec(command), host="127.0.0.1", port=0)
    with pytest.raises(TargetError) as info:
        gateway.start()
    lines = "\n".join(f"line {i}" for i in range(11, 41))
    assert str(info.value).endswith(f"exited with code 1 before it answered HTTP; its output ends:\n{lines}")
    assert gateway.output_tail(2) == "line 39\nline 40"


def _until_output_holds(gateway: LaunchedGateway, text: str) -> None:
    """Ready is the echo server answering, not the command: wait until the command has said ``text``."""
    deadline = time.monotonic() + 10
    while text not in gateway.output():
        assert time.monotonic() < deadline, f"the launched command never wrote {text!r}"
        time.sleep(0.01)


def test_stop_kills_a_group_that_ignores_sigterm(echo_port: int, reaped: list[LaunchedGateway]) -> None:
    command = "sh -c 'trap \"\" TERM; echo up; while :; do sleep 0.05; done' {ls_address}"
    gateway = LaunchedGateway(LaunchSpec(command, own_port=False), host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    gateway.start()
    _until_output_holds(gateway, "up\n")  # the trap is set
    started = time.monotonic()
    gateway.stop(grace_s=0.3)
    assert gateway.exit_code() == -signal.SIGKILL
    assert time.monotonic() - started < 3
    assert not _group_alive(gateway.pid or 0)
    gateway.stop()  # idempotent
    assert gateway.output() == "up\n"


def test_stop_lets_the_groups_children_finish_their_shutdown(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway]
) -> None:
    child = tmp_path / "child.sh"
    child.write_text("trap 'sleep 0.2; echo child done; exit 0' TERM\necho trapped\nwhile :; do sleep 0.05; done\n")
    command = f"sh -c 'sh {child} & echo up; exec sleep 30' {{ls_address}}"
    gateway = LaunchedGateway(LaunchSpec(command, own_port=False), host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    gateway.start()
    _until_output_holds(gateway, "trapped\n")
    gateway.stop(grace_s=3)
    assert gateway.exit_code() == -signal.SIGTERM
    output = gateway.output()
    assert sorted(output.splitlines()[:2]) == ["trapped", "up"]
    assert output.endswith("child done\n")  # the group member's own shutdown ran to its end


def test_a_spawn_wired_gateway_that_never_starts_its_ls_times_out(echo_port: int) -> None:
    command = "sh -c 'exec sleep 30' {ls_binary}"
    spec = LaunchSpec(command, wiring="spawn", ready_timeout_s=0.3, own_port=False)
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=echo_port)
    with pytest.raises(TargetError) as info:
        gateway.start()
    assert isinstance(gateway.ls, StandinLs)
    assert str(info.value) == (
        f"the gateway ({command}): answers HTTP, but the stand-in LS it was given ({{ls_binary}}) did not come up "
        f"on its control port {gateway.ls.control_port} within 0.3 s: the gateway must start that binary as its "
        "LS at start-up, as <binary> --server_port=N --csrf_token=T; it wrote no output"
    )


def test_a_spawn_wired_gateway_that_exits_before_its_ls_is_up_is_an_error(echo_port: int) -> None:
    command = "sh -c 'sleep 0.2; exit 4' {ls_binary}"
    gateway = LaunchedGateway(LaunchSpec(command, wiring="spawn", own_port=False), host="127.0.0.1", port=echo_port)
    with pytest.raises(TargetError) as info:
        gateway.start()
    assert str(info.value) == f"the gateway ({command}): exited with code 4 before its LS came up; it wrote no output"


def test_a_stand_in_left_running_outside_the_group_is_ended_and_reported(echo_port: int) -> None:
    ls_port = free_port()
    start_ls = f'setsid "$0" --server_port={ls_port} --csrf_token=T </dev/null >/dev/null 2>&1 &'
    command = f"sh -c '{start_ls} exec sleep 30' {{ls_binary}}"
    gateway = LaunchedGateway(
        LaunchSpec(command, wiring="spawn", own_port=False), host="127.0.0.1", port=echo_port
    ).start()
    assert isinstance(gateway.ls, StandinLs)
    pid = gateway.ls.pid()
    assert pid is not None
    assert _running(pid)
    gateway.stop(grace_s=3)
    assert not _running(pid)
    assert gateway.output() == (
        f"\n[cascade-conformance] the gateway left its LS (the stand-in, pid {pid}) running after it stopped, "
        "outside its process group; the kit ended it\n"
    )


def test_no_wiring_hands_over_only_the_port(echo_port: int) -> None:
    with LaunchedGateway(
        LaunchSpec("sleep 30", wiring="none", own_port=False), host="127.0.0.1", port=echo_port
    ) as gateway:
        assert gateway.ls is None
        assert gateway.port == echo_port

"""The launched gateway's surroundings and its end: where its output and stand-in live, what it gets on
stdin, how readiness is asked, how the kit's side fails, and how a stand-in LS the gateway left running
outside its process group is ended (the "stand-ins" here are ``sh`` loops whose command line names the
stand-in binary, so the kit takes them for it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from conformance.errors import TargetError
from conformance.ls_handle import InProcessLs
from conformance.targets import LaunchedGateway, LaunchSpec, _launch
from conformance.targets._launch import _group_alive, free_port
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls_pb
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.standin import ports_file
from tests.conformance.targets import targets_support
from tests.conformance.targets.targets_support import echo_server

ROOT = Path(__file__).resolve().parents[3]
NOTE = (
    "\n[cascade-conformance] the gateway left its LS (the stand-in, pid {pid}) running after it stopped, "
    "outside its process group; the kit ended it\n"
)

# The shared fixtures: one echo gateway per module, launched groups reaped after each test.
echo_port = targets_support.echo_port
reaped = targets_support.reaped


@pytest.fixture
def impostors() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes the test started to pose as a left stand-in: killed and reaped after the test."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


def _until(condition: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, f"never: {condition}"
        time.sleep(0.01)


def _spawned(
    echo_port: int, info: Path, reaped: list[LaunchedGateway], extra: str = ""
) -> tuple[LaunchedGateway, Path]:
    """A spawn-wired gateway that writes its ``{ls_binary}``, the file behind its stdout and the file
    behind its stdin to ``info``, starts the stand-in in its own group, runs ``extra``, then sleeps."""
    ls_port = free_port()
    script = (
        f"out=$(readlink /proc/$$/fd/1); in=$(readlink /proc/$$/fd/0); "
        f'printf "%s\\n%s\\n%s\\n" "$0" "$out" "$in" > {info}.part; '
        f'"$0" --server_port={ls_port} --csrf_token=T & {extra} mv {info}.part {info}; exec sleep 30'
    )
    gateway = LaunchedGateway(
        LaunchSpec(f"sh -c '{script}' {{ls_binary}}", wiring="spawn", own_port=False), host="127.0.0.1", port=echo_port
    )
    reaped.append(gateway)
    gateway.start()
    _until("the gateway wrote where it runs", info.exists)
    return gateway, Path(info.read_text(encoding="utf-8").splitlines()[0])


def _standin_reported(binary: Path) -> dict[str, object]:
    """The stand-in's ports file, once it is complete."""
    report: dict[str, object] = {}

    def complete() -> bool:
        with contextlib.suppress(OSError, ValueError):
            report.update(json.loads(ports_file(binary).read_text(encoding="utf-8")))
        return "pid" in report

    _until("the stand-in reported its pid", complete)
    return report


def _pose_as_left_standin(
    binary: Path, script: str, impostors: list[subprocess.Popen[bytes]], tmp_path: Path
) -> subprocess.Popen[bytes]:
    """Start ``script`` (``sh``, the stand-in binary on its command line) outside the gateway's group
    and report it as the stand-in in the ports file: what a gateway leaves when it starts its LS in a
    session of its own and does not stop it."""
    report = _standin_reported(binary)
    marker = tmp_path / "impostor-up"
    proc = subprocess.Popen(["sh", "-c", script, str(binary), str(marker)], start_new_session=True)
    impostors.append(proc)
    _until("the impostor set its traps", marker.exists)
    ports_file(binary).write_text(json.dumps(report | {"pid": proc.pid}), encoding="utf-8")
    return proc


# ---------------------------------------------------------------------- where it runs


def test_a_gateway_stopped_before_it_started_has_no_output() -> None:
    gateway = LaunchedGateway(LaunchSpec("gw {port} {ls_address}"), host="127.0.0.1", port=0)
    assert (gateway.pid, gateway.exit_code(), gateway.output(), gateway.output_tail()) == (None, None, "", "")
    gateway.stop()
    assert (gateway.pid, gateway.exit_code(), gateway.output(), gateway.output_tail()) == (None, None, "", "")


def test_output_and_stand_in_live_in_a_kit_temp_dir_and_stdin_is_empty(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway]
) -> None:
    info = tmp_path / "info"
    saved = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)  # the kit's own stdin is a pipe: the gateway must not inherit it
    try:
        gateway, _binary = _spawned(echo_port, info, reaped)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    binary, log, stdin = info.read_text(encoding="utf-8").splitlines()
    workdir = re.escape(tempfile.gettempdir()) + r"/cascade-gateway-[A-Za-z0-9_]+"
    assert re.fullmatch(workdir + "/gateway-output.log", log), log
    assert re.fullmatch(workdir + "/ls/language_server_linux_x64", binary), binary
    assert Path(binary).parent.parent == Path(log).parent
    assert stdin == "/dev/null"
    gateway.stop(grace_s=3)
    assert not Path(log).parent.exists()  # the kit's temp dir goes with the gateway


def test_readiness_is_asked_with_one_get_of_v1_models(reaped: list[LaunchedGateway]) -> None:
    with echo_server() as (url, log):
        port = int(url.rsplit(":", 1)[1])
        gateway = LaunchedGateway(LaunchSpec("sleep 30", wiring="none", own_port=False), host="127.0.0.1", port=port)
        reaped.append(gateway)
        with gateway:
            assert [(method, path) for method, path, _key in log] == [("GET", "/v1/models")]


def test_output_keeps_undecodable_bytes_as_replacement_characters(
    echo_port: int, reaped: list[LaunchedGateway]
) -> None:
    command = "sh -c 'printf \"caf\\303\\251 \\377\\n\"; exec sleep 30' {ls_address}"
    gateway = LaunchedGateway(LaunchSpec(command, own_port=False), host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    gateway.start()
    _until("the gateway wrote its line", lambda: gateway.output().endswith("\n"))
    assert gateway.output() == "café \ufffd\n"
    gateway.stop(grace_s=3)
    assert gateway.output() == "café \ufffd\n"


@pytest.mark.parametrize(("token", "accepted"), [("tok-2", True), ("cascade-conformance-kit-csrf-token", False)])
def test_the_dial_fake_checks_the_csrf_token_the_gateway_is_given(
    echo_port: int, reaped: list[LaunchedGateway], token: str, accepted: bool
) -> None:
    spec = LaunchSpec("sh -c 'exec sleep 30' {ls_address} {csrf_token}", csrf_token="tok-2", own_port=False)
    gateway = LaunchedGateway(spec, host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    with gateway, grpc.insecure_channel(gateway.ls.address if gateway.ls else "") as channel:
        assert isinstance(gateway.ls, InProcessLs)
        call = ls_grpc.LanguageServerServiceStub(channel).Heartbeat
        if accepted:
            call(ls_pb.HeartbeatRequest(), metadata=[("x-codeium-csrf-token", token)], timeout=5)
        else:
            with pytest.raises(grpc.RpcError) as info:
                call(ls_pb.HeartbeatRequest(), metadata=[("x-codeium-csrf-token", token)], timeout=5)
            assert info.value.details() == "fakels: invalid CSRF token in x-codeium-csrf-token"


# ---------------------------------------------------------------------- the kit's side failing


def test_no_file_descriptor_left_for_the_gateway_port_is_a_target_error() -> None:
    spare = os.open(os.devnull, os.O_RDONLY)
    os.close(spare)  # the lowest free descriptor: a limit there leaves none to open
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (spare, hard))
    try:
        with pytest.raises(TargetError) as info:
            LaunchedGateway(LaunchSpec("gw {port} {ls_address}"), host="127.0.0.1", port=0)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert str(info.value) == "cannot pick a free port on 127.0.0.1 for the gateway: [Errno 24] Too many open files"


def test_a_stand_in_that_cannot_be_written_is_a_target_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path
    while len(str(deep)) < 4050 - 200:
        deep = deep / ("d" * 199)
    deep = deep / ("e" * (4050 - len(str(deep)) - 1))
    deep.mkdir(parents=True)
    assert len(str(deep)) == 4050  # its temp dir fits in PATH_MAX, the binary's path in it does not
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    gateway = LaunchedGateway(LaunchSpec("gw {ls_binary}", wiring="spawn"), host="127.0.0.1", port=free_port())
    with pytest.raises(TargetError) as info:
        gateway.start()
    assert str(info.value).startswith("cannot start the kit's side of --ls-wiring spawn: [Errno 36] File name too long")
    assert gateway.pid is None


# ---------------------------------------------------------------------- the port's address family

NETNS = {"v4": "echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6", "v6": "ip addr del 127.0.0.1/8 dev lo"}
PICK = (
    "import sys\nfrom conformance.targets._launch import LaunchedGateway, LaunchSpec\n"
    "gateway = LaunchedGateway(LaunchSpec('gw {port}', wiring='none'), host=sys.argv[1], port=0)\n"
    "print(gateway.port > 0)\n"
)


@pytest.mark.parametrize(("host", "loopback"), [("::1", "::1"), ("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1")])
def test_the_gateway_port_is_asked_for_on_the_loopback_of_its_host(
    monkeypatch: pytest.MonkeyPatch, host: str, loopback: str
) -> None:
    """Which loopback the port is picked on (the namespaced test below binds it for real where it can)."""
    asked: list[str] = []

    def free_port_on(on: str = "127.0.0.1") -> int:
        asked.append(on)
        return 4242

    monkeypatch.setattr(_launch, "free_port", free_port_on)
    gateway = LaunchedGateway(LaunchSpec("gw {port}", wiring="none"), host=host, port=0)
    gateway.stop()  # never started: removes its temporary folder
    assert (asked, gateway.port) == ([loopback], 4242)


@pytest.mark.parametrize(("only", "host"), [("v4", "127.0.0.1"), ("v6", "::1")])
def test_the_gateway_port_is_picked_on_the_hosts_own_loopback(only: str, host: str) -> None:
    """In a network namespace whose loopback has one address family only, the port is picked there."""
    setup = f"ip link set lo up && {NETNS[only]}"
    probe = subprocess.run(["unshare", "-rn", "sh", "-c", setup], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no user network namespace here: {probe.stderr.decode(errors='replace').strip()}")
    done = subprocess.run(
        ["unshare", "-rn", "sh", "-c", f'{setup} && exec "$0" -c "$1" "$2"', sys.executable, PICK, host],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr[-300:]) == (0, b"True\n", b"")


# ---------------------------------------------------------------------- a stand-in left running

UP = 'echo up > "$1";'


def test_a_left_stand_in_gets_its_grace_to_finish_on_sigterm(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway], impostors: list[subprocess.Popen[bytes]]
) -> None:
    done = tmp_path / "done"
    graceful = f"trap 'sleep 0.2; echo done > {done}; exit 0' TERM; {UP} while :; do sleep 0.05; done"
    gateway, binary = _spawned(echo_port, tmp_path / "info", reaped)
    standin = _pose_as_left_standin(binary, graceful, impostors, tmp_path)
    started = time.monotonic()
    gateway.stop(grace_s=3)
    assert time.monotonic() - started < 2  # no waiting out the grace once it is gone
    assert standin.wait(timeout=5) == 0
    assert done.read_text(encoding="utf-8") == "done\n"
    assert gateway.output().endswith(NOTE.format(pid=standin.pid))


def test_a_left_stand_in_that_ignores_sigterm_is_killed_after_the_grace(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway], impostors: list[subprocess.Popen[bytes]]
) -> None:
    gateway, binary = _spawned(echo_port, tmp_path / "info", reaped)
    standin = _pose_as_left_standin(binary, f"trap '' TERM; {UP} while :; do sleep 0.05; done", impostors, tmp_path)
    gateway.stop(grace_s=0.3)
    assert standin.wait(timeout=5) == -signal.SIGKILL
    assert gateway.output().endswith(NOTE.format(pid=standin.pid))


def test_a_reported_pid_that_does_not_run_the_stand_in_is_left_alone(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway], impostors: list[subprocess.Popen[bytes]]
) -> None:
    gateway, binary = _spawned(echo_port, tmp_path / "info", reaped)
    report = _standin_reported(binary)
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    impostors.append(stranger)
    ports_file(binary).write_text(json.dumps(report | {"pid": stranger.pid}), encoding="utf-8")
    gateway.stop(grace_s=3)
    assert stranger.poll() is None
    assert "[cascade-conformance]" not in gateway.output()


def test_a_left_stand_in_is_ended_even_when_its_note_cannot_be_written(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway], impostors: list[subprocess.Popen[bytes]]
) -> None:
    info = tmp_path / "info"
    replace_log = 'log=$(readlink /proc/$$/fd/1); rm "$log"; mkdir "$log";'  # its output file is now a directory
    gateway, binary = _spawned(echo_port, info, reaped, extra=replace_log)
    standin = _pose_as_left_standin(binary, f"{UP} while :; do sleep 0.05; done", impostors, tmp_path)
    gateway.stop(grace_s=3)
    assert standin.wait(timeout=5) == -signal.SIGTERM
    assert gateway.output() == ""


# ---------------------------------------------------------------------- the group's end

BIG = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "held = bytearray(300 << 20)  # freeing it makes the member's exit after SIGKILL take milliseconds\n"
    "print('big', flush=True)\ntime.sleep(30)\n"
)


def test_stop_returns_only_once_killed_members_are_gone(
    echo_port: int, tmp_path: Path, reaped: list[LaunchedGateway]
) -> None:
    big = tmp_path / "big.py"
    big.write_text(BIG, encoding="utf-8")
    command = f"sh -c '\"$0\" {big} & exec sleep 30' {sys.executable} {{ls_address}}"
    gateway = LaunchedGateway(LaunchSpec(command, own_port=False), host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    gateway.start()
    _until("the member holds its memory", lambda: gateway.output() == "big\n")
    gateway.stop(grace_s=0.2)
    assert not _group_alive(gateway.pid or 0)
    assert gateway.exit_code() == -signal.SIGTERM


def _hangup_ends_it() -> None:
    """In the child before exec: SIGHUP back to its default, even when the test runs under nohup."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def test_without_proc_liveness_is_asked_with_the_null_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, impostors: list[subprocess.Popen[bytes]]
) -> None:
    """A system without /proc (here: the kit pointed at an empty directory): a process or group is alive
    when the null signal reaches it. The probed group is a child's own session, never pytest's."""
    monkeypatch.setattr(_launch, "_PROC", tmp_path)
    child = subprocess.Popen(["sleep", "30"], start_new_session=True, preexec_fn=_hangup_ends_it)
    impostors.append(child)
    assert (_launch._running(child.pid), _group_alive(child.pid)) == (True, True)
    with pytest.raises(subprocess.TimeoutExpired):  # the null signal asks; it never ends the process
        child.wait(timeout=0.2)
    child.kill()
    child.wait()  # reaped: its pid and group name nothing now
    assert (_launch._running(child.pid), _group_alive(child.pid)) == (False, False)

"""Spawning, watching and stopping the LS child exactly: its command line, directory, environment and log;
the failure messages; the one retry; the exit codes the child reports while running and after ``stop``.

Children that fail are tiny ``/bin/sh`` scripts (milliseconds). Children that must serve are the fakels
stand-in, started in parallel once per module; some run under a shell wrapper so the test controls how the
group leader ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import grpc
import pytest

from engine.cascade.channel import CSRF_HEADER
from engine.cascade.spawn import (
    LsProcess,
    LsSpawnError,
    SpawnedLs,
    answers_h2c,
    free_loopback_port,
    scrubbed_env,
    spawn_ls,
)
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.server import FakeLSThread
from fakels.standin import ports_file, write_standin
from tests.engine.process_support import gone, sh_script

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and shell scripts")


def recorder(directory: Path, then: str = "exit 3\n") -> Path:
    """A binary that records its argv (one per line), cwd, environment, ``pid pgrp session``, stdin, and checks
    its database dir, then does ``then``."""
    body = (
        f'printf "%s\\n" "$@" >> "{directory}/argv"\n'
        f'pwd > "{directory}/cwd"\n'
        f'env > "{directory}/env"\n'
        f'echo $$ $(cut -d" " -f5,6 /proc/$$/stat) > "{directory}/ids"\n'
        f'readlink /proc/$$/fd/0 > "{directory}/stdin"\n'
        f'for a in "$@"; do case "$a" in --database_dir=*) test -d "${{a#--database_dir=}}" && echo db-ok; esac; done\n'
    )
    return sh_script(directory / "bin" / "ls-recorder", body + then)


def port_of(address: str) -> int:
    host, port = address.rsplit(":", 1)
    assert host == "127.0.0.1"
    return int(port)


def heartbeat(address: str, token: str) -> None:
    with grpc.insecure_channel(address) as channel:
        reply = ls_grpc.LanguageServerServiceStub(channel).Heartbeat(
            ls.HeartbeatRequest(), metadata=[(CSRF_HEADER, token)], timeout=10
        )
        assert isinstance(reply, ls.HeartbeatResponse)


def wait_until(predicate: object, timeout_s: float = 10.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The spawner's temp directories land here, so the test can see what is left behind."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


# ------------------------------------------------------------------------------------------ failing children


def test_the_child_gets_the_ls_command_line_its_own_directory_and_a_scrubbed_environment(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASCADE_TEST_SECRET", "must-not-leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    binary = recorder(tmp_path)
    reader, writer = os.pipe()
    saved_stdin = os.dup(0)
    os.dup2(reader, 0)  # the gateway's own stdin is something the child must not inherit
    started = time.monotonic()
    try:
        with pytest.raises(LsSpawnError) as info:
            LsProcess.start(binary, extra_args=["--extra=1", "--more"])
    finally:
        os.dup2(saved_stdin, 0)
        for fd in (saved_stdin, reader, writer):
            os.close(fd)
    assert time.monotonic() - started < 5  # the exit is noticed between short probes, not at the 20 s deadline
    argv = (tmp_path / "argv").read_text().splitlines()
    cwd = Path((tmp_path / "cwd").read_text().strip())
    port = int(argv[0].removeprefix("--server_port="))
    token = argv[1].removeprefix("--csrf_token=")
    assert argv == [
        f"--server_port={port}",
        f"--csrf_token={token}",
        "--api_server_url=http://127.0.0.1:1",
        "--run_child",
        "--enable_lsp",
        f"--database_dir={cwd / 'db'}",
        "--extra=1",
        "--more",
    ]
    assert len(token) == 32
    int(token, 16)
    assert cwd.parent == private_tmp
    assert cwd.name.startswith("cascade-ls-")
    env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line)
    env.pop("PWD", None), env.pop("SHLVL", None), env.pop("_", None)  # the shell's own
    assert env == scrubbed_env()
    assert env["LANG"] == "C.UTF-8"
    pid, group, session = (tmp_path / "ids").read_text().split()
    assert pid == group == session  # its own session and process group, which stop() signals as a whole
    assert (tmp_path / "stdin").read_text().strip() == "/dev/null"
    assert str(info.value) == (
        f"language server {binary} exited with code 3 before serving on 127.0.0.1:{port}; its last output:\n  | db-ok"
    )
    assert list(private_tmp.iterdir()) == []  # its directory is removed by the stop


def test_scrubbed_env_keeps_only_the_allowlist() -> None:
    parent = {
        "PATH": "/bin",
        "HOME": "/h",
        "LANG": "C",
        "TMPDIR": "/t",
        "TEMP": "/t2",
        "SECRET": "x",
        "SYSTEMROOT": "w",
    }
    assert scrubbed_env(parent) == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "TMPDIR": "/t", "TEMP": "/t2"}
    assert scrubbed_env({"SECRET": "x"}) == {}


def test_scrubbed_env_defaults_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/spawner")
    monkeypatch.delenv("TEMP", raising=False)
    assert scrubbed_env()["HOME"] == "/home/spawner"
    assert "TEMP" not in scrubbed_env()


def test_free_loopback_port_can_be_bound_again_on_loopback() -> None:
    import socket

    port = free_loopback_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_relative_binary_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(Path("bin") / "ls-recorder")
    assert str(info.value).startswith(f"language server {tmp_path / 'bin' / 'ls-recorder'} exited with code 3 ")


def test_a_bare_name_is_looked_up_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start("ls-recorder")
    assert str(info.value).startswith(f"language server {tmp_path / 'bin' / 'ls-recorder'} exited with code 3 ")
    with pytest.raises(LsSpawnError) as missing:
        LsProcess.start("no-such-language-server-binary")
    assert str(missing.value) == "language server binary 'no-such-language-server-binary' not found on PATH"


def test_a_binary_that_cannot_run_leaves_nothing_behind(tmp_path: Path, private_tmp: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program")
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(plain)
    assert str(info.value) == f"cannot start language server {plain}: [Errno 13] Permission denied: '{plain}'"
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
    assert list(private_tmp.iterdir()) == []


def test_output_that_is_not_utf8_is_quoted_with_replacement_characters(tmp_path: Path) -> None:
    binary = sh_script(tmp_path / "latin1", "printf 'caf\\351 ready\\n'\nexit 6\n")
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary)
    assert str(info.value).endswith("; its last output:\n  | caf\ufffd ready")


def test_a_log_that_is_gone_reads_as_no_output(tmp_path: Path) -> None:
    log = tmp_path / "ls.log"
    binary = sh_script(tmp_path / "tidy", f'echo "about to remove my log"\nrm "{log}"\nexit 6\n')
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, log_path=log)
    message = str(info.value)
    assert message.startswith(f"language server {binary} exited with code 6 before serving on 127.0.0.1:")
    assert message.endswith("; it wrote no output")


def test_an_exit_quotes_the_last_twenty_lines_and_is_not_retried(tmp_path: Path) -> None:
    log = tmp_path / "new" / "dir" / "ls.log"
    runs = tmp_path / "runs"
    binary = sh_script(
        tmp_path / "dies",
        f'echo run >> "{runs}"\nfor i in $(seq 1 25); do echo "line $i"; done\necho "fatal" >&2\nexit 5\n',
    )
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, log_path=log)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"language server {binary} exited with code 5 before serving on 127.0.0.1:")
    assert lines[0].endswith("; its last output:")
    assert lines[1:] == [f"  | line {i}" for i in range(7, 26)] + ["  | fatal"]
    assert log.read_text().splitlines()[0] == "line 1"
    assert runs.read_text() == "run\n"  # it did not say its port was in use


def test_a_port_in_use_exit_is_retried_once_on_a_new_port_appending_to_the_log(tmp_path: Path) -> None:
    says = "listen: Address already in use"  # any case
    runs = tmp_path / "runs"
    binary = recorder(
        tmp_path,
        f'echo run >> "{runs}"\n'
        f'if [ "$(wc -l < "{runs}")" -eq 1 ]; then echo "{says}"; exit 1; fi\n'
        "echo second; exit 4\n",
    )
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, csrf_token="t")
    argv = (tmp_path / "argv").read_text().splitlines()
    first, second = argv[0], argv[6]
    assert first != second
    assert (argv[1], argv[7]) == ("--csrf_token=t", "--csrf_token=t")
    assert str(info.value) == (
        f"language server {binary} exited with code 4 before serving on "
        f"127.0.0.1:{second.removeprefix('--server_port=')}; its last output:\n  | db-ok\n  | second"
    )
    assert runs.read_text() == "run\nrun\n"


def test_the_retry_happens_once_and_keeps_both_outputs_in_a_given_log(tmp_path: Path) -> None:
    log = tmp_path / "ls.log"
    binary = sh_script(tmp_path / "busy", "echo 'bind: address already in use'\nexit 1\n")
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, log_path=log)
    assert str(info.value).endswith(
        "; its last output:\n  | bind: address already in use\n  | bind: address already in use"
    )
    assert "exited with code 1 before serving" in str(info.value)
    assert log.read_text() == "bind: address already in use\n" * 2


def test_a_silent_child_that_never_serves_times_out_and_is_stopped(tmp_path: Path, private_tmp: Path) -> None:
    binary = sh_script(tmp_path / "mute", "exec sleep 30\n")
    started = time.monotonic()
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, ready_timeout_s=0.3)
    assert 0.3 <= time.monotonic() - started < 5
    message = str(info.value)
    address = message.split(" did not answer on ")[1].split(" ")[0]
    port_of(address)
    assert message == (
        f"language server {binary} did not answer on {address} within 0.3 s (stopped, code {-signal.SIGTERM}); "
        "it wrote no output"
    )
    assert list(private_tmp.iterdir()) == []


class Interrupted(BaseException):
    """What the serve command's signal handler raises into a start that is still waiting."""


def test_an_interrupted_start_stops_the_child_and_removes_its_directory(tmp_path: Path, private_tmp: Path) -> None:
    """The interrupt is raised where a signal handler's would surface between readiness probes: at the third
    look at the child's exit status (a profile hook, so never inside grpc's own waiting)."""
    pid_file = tmp_path / "pid"
    binary = sh_script(tmp_path / "slow", f'echo $$ > "{pid_file}"\nexec sleep 30\n')
    looks = 0

    def interrupt_third_look(frame: FrameType, event: str, arg: object) -> None:
        nonlocal looks
        if event == "call" and frame.f_code.co_name == "returncode":
            looks += 1
            if looks == 3:
                raise Interrupted

    sys.setprofile(interrupt_third_look)
    try:
        with pytest.raises(Interrupted):
            LsProcess.start(binary, ready_timeout_s=20)
    finally:
        sys.setprofile(None)
    assert looks == 3
    assert gone(int(pid_file.read_text()))
    assert list(private_tmp.iterdir()) == []


def test_a_child_that_dies_while_a_stranger_answers_on_its_port_is_reported_as_exited(tmp_path: Path) -> None:
    """The handshake can succeed with another process on the port; then it is our child that died of it.

    Staged at the first look at the child (a profile hook): the child is killed (left unreaped) and an
    in-process fake LS starts answering on the port the child was given, before the first probe.
    """
    binary = recorder(tmp_path, then="exec sleep 30\n")
    strangers: list[FakeLSThread] = []
    looks = 0

    def stage(frame: FrameType, event: str, arg: object) -> None:
        nonlocal looks
        if event == "return" and frame.f_code.co_name == "returncode":
            looks += 1
            if looks == 1:
                wait_until(lambda: (tmp_path / "ids").exists() and (tmp_path / "ids").read_text().strip() != "")
                child = int((tmp_path / "ids").read_text().split()[0])
                port = int((tmp_path / "argv").read_text().splitlines()[0].removeprefix("--server_port="))
                os.kill(child, signal.SIGKILL)
                wait_until(lambda: gone(child))
                strangers.append(FakeLSThread(port=port).start())

    sys.setprofile(stage)
    try:
        with pytest.raises(LsSpawnError) as info:
            LsProcess.start(binary)
    finally:
        sys.setprofile(None)
        for stranger in strangers:
            stranger.stop()
    assert len(strangers) == 1
    address = strangers[0].address
    assert str(info.value).startswith(
        f"language server {binary} exited with code {-signal.SIGKILL} before serving on {address}; "
    )  # then whatever it wrote before it was killed


# ------------------------------------------------------------------------------------------ serving children


@dataclass
class Served:
    plain: LsProcess  # the stand-in itself
    exits_7: LsProcess  # sh runs the stand-in, then exits 7 when it ends
    leader_killed: LsProcess  # the stand-in, killed by the test
    stubborn: LsProcess  # sh ignoring SIGTERM runs the stand-in and a sleeper that ignores it too
    log: Path
    standin_pid: Path
    stubborn_pids: Path
    plain_ports: Path  # what the plain stand-in reports about itself


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("served")
    standin = write_standin(root / "standin" / "ls")
    plain_standin = write_standin(root / "plain" / "ls")
    pid_file = root / "standin.pid"
    wrapper = sh_script(root / "wrapper", f'"{standin}" "$@" &\necho $! > "{pid_file}"\nwait $!\nexit 7\n')
    stubborn_pids = root / "stubborn.pids"
    stubborn = sh_script(
        root / "stubborn",
        f'trap \'\' TERM\n"{standin}" "$@" &\nstandin=$!\nsleep 30 &\necho $standin $! > "{stubborn_pids}"\nwait\n',
    )
    log = root / "logs" / "nested" / "ls.log"
    log.parent.parent.mkdir()
    log.parent.mkdir()
    log.write_text("stale output of an earlier run\n")
    with ThreadPoolExecutor(4) as pool:
        plain = pool.submit(
            spawn_ls, plain_standin, csrf_token="fixed-token", extra_args=["--x=1", "--y"], log_path=log
        )
        exits_7 = pool.submit(LsProcess.start, wrapper)
        killed = pool.submit(LsProcess.start, standin)
        ignoring = pool.submit(LsProcess.start, stubborn)
        processes = Served(
            plain.result(),
            exits_7.result(),
            killed.result(),
            ignoring.result(),
            log,
            pid_file,
            stubborn_pids,
            ports_file(plain_standin),
        )
    yield processes
    for process in (processes.plain, processes.exits_7, processes.leader_killed, processes.stubborn):
        process.stop(0.5)


def test_a_serving_child_reports_itself_and_stops_cleanly_on_sigterm(served: Served) -> None:
    lsp = served.plain
    report = json.loads(served.plain_ports.read_text())
    assert lsp.info == SpawnedLs(f"127.0.0.1:{report['grpc']}", "fixed-token", report["pid"])
    assert report["ignored_flags"][-2:] == ["--x=1", "--y"]
    assert (lsp.csrf_token, lsp.info.pid) == ("fixed-token", lsp.pid)
    port_of(lsp.address)
    assert lsp.returncode is None
    heartbeat(lsp.address, "fixed-token")
    assert "stale output" not in lsp.output()  # the log was truncated, not appended to
    assert f"serving gRPC on {lsp.address}" in lsp.output()
    assert lsp.output() == served.log.read_text()
    database = next(flag for flag in report["ignored_flags"] if flag.startswith("--database_dir="))
    shutil.rmtree(Path(database.removeprefix("--database_dir=")).parent)  # its temp dir vanished meanwhile
    assert lsp.stop() == 0  # SIGTERM first, and the stand-in exits cleanly on it
    assert lsp.returncode == 0
    assert lsp.stop() == 0
    served.log.write_text("changed after stop")
    assert f"serving gRPC on {lsp.address}" in lsp.output()  # kept from the moment it stopped
    assert not answers_h2c(lsp.address, 0.3)


def test_an_exit_code_is_reported_while_unreaped_and_after_someone_else_reaped_it(served: Served) -> None:
    lsp = served.exits_7
    assert lsp.returncode is None
    heartbeat(lsp.address, lsp.csrf_token)
    os.kill(int(served.standin_pid.read_text()), signal.SIGKILL)
    wait_until(lambda: lsp.returncode is not None)
    assert lsp.returncode == 7
    assert lsp.returncode == 7  # asking does not reap it
    assert os.waitpid(lsp.pid, 0)[1] >> 8 == 7  # reaped behind the spawner's back ...
    assert lsp.returncode == 0  # ... Popen can only record 0 then
    assert lsp.stop(0.2) == 0  # and stopping the vanished group is not an error


def test_a_leader_killed_by_a_signal_reports_the_negative_signal_and_leaving_the_block_reaps_it(
    served: Served,
) -> None:
    with served.leader_killed as lsp:
        assert lsp is served.leader_killed
        os.kill(lsp.pid, signal.SIGKILL)
        wait_until(lambda: lsp.returncode is not None)
        assert lsp.returncode == -signal.SIGKILL
        assert os.waitid(os.P_PID, lsp.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None  # still unreaped
    with pytest.raises(ChildProcessError):
        os.waitpid(lsp.pid, os.WNOHANG)  # reaped on leaving the block
    assert lsp.stop() == -signal.SIGKILL


def test_stop_escalates_to_sigkill_after_the_grace_period_and_reaches_the_whole_group(served: Served) -> None:
    lsp = served.stubborn
    heartbeat(lsp.address, lsp.csrf_token)
    standin, sleeper = (int(pid) for pid in served.stubborn_pids.read_text().split())
    started = time.monotonic()
    assert lsp.stop(timeout_s=0.3) == -signal.SIGKILL
    assert 0.3 <= time.monotonic() - started < 5  # SIGTERM first, SIGKILL only once the grace period is over
    assert lsp.returncode == -signal.SIGKILL
    assert gone(lsp.pid)
    wait_until(lambda: gone(standin) and gone(sleeper))

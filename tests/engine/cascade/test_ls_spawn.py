"""Spawning the LS binary like a gateway: the fakels stand-in and small executable scripts as the binary."""

from __future__ import annotations

import json
import signal
import stat
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import pytest

from engine.cascade.channel import CSRF_HEADER
from engine.cascade.spawn import ENV_ALLOWLIST, LsProcess, LsSpawnError, answers_h2c, scrubbed_env, spawn_ls
from fakels.journal import read_jsonl
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.standin import read_ports, write_standin
from tests.engine.process_support import gone

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and shebang scripts")


def _script(path: Path, body: str) -> Path:
    """An executable Python script; ``STANDIN`` and ``RECORD`` are filled in by the caller's format."""
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _recording_wrapper(tmp_path: Path, standin: Path, *, first_says: str | None = None) -> tuple[Path, Path]:
    """A binary that appends its argv and env to a JSONL file, then becomes the stand-in. With
    ``first_says``, its first run prints that and exits 1 instead."""
    record = tmp_path / "runs.jsonl"
    body = f"""import json, os, sys
record = {str(record)!r}
with open(record, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}) + "\\n")
first_says = {first_says!r}
if first_says is not None and sum(1 for _ in open(record)) == 1:
    print(first_says, file=sys.stderr)
    sys.exit(1)
os.execv({str(standin)!r}, [{str(standin)!r}, *sys.argv[1:]])
"""
    return _script(tmp_path / "wrapper", body), record


def _wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _heartbeat(address: str, token: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        reply = stub.Heartbeat(ls.HeartbeatRequest(), metadata=[(CSRF_HEADER, token)], timeout=10)
        assert isinstance(reply, ls.HeartbeatResponse)


def test_the_stand_in_serves_grpc_on_the_address_with_the_generated_token(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    binary = write_standin(tmp_path / "bin" / "language_server_linux_x64", journal=journal)
    with LsProcess.start(binary) as lsp:
        host, port = lsp.address.rsplit(":", 1)
        assert host == "127.0.0.1"
        assert len(lsp.csrf_token) == 32
        assert int(lsp.csrf_token, 16) >= 0
        assert lsp.info.pid == lsp.pid
        assert lsp.returncode is None
        _heartbeat(lsp.address, lsp.csrf_token)
        with pytest.raises(grpc.RpcError) as wrong:
            _heartbeat(lsp.address, "not-the-token")
        assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
        report = read_ports(binary)
        assert (report["pid"], report["grpc"]) == (lsp.pid, int(port))
        ignored = report["ignored_flags"]
        assert ignored[:3] == ["--api_server_url=http://127.0.0.1:1", "--run_child", "--enable_lsp"]
        assert ignored[3].startswith("--database_dir=")
        assert f"serving gRPC on {lsp.address}" in lsp.output()
    entries = read_jsonl(journal)
    assert [e["method"] for e in entries] == ["Heartbeat", "Heartbeat"]
    assert [e["headers"][CSRF_HEADER] for e in entries] == [
        f"<redacted: matches, {len(lsp.csrf_token)} characters>",
        "<redacted: does not match, 13 characters>",
    ]
    assert lsp.returncode == 0  # the stand-in stops cleanly on SIGTERM
    assert gone(lsp.pid)


def test_a_given_token_extra_args_and_log_path_are_used(tmp_path: Path) -> None:
    binary = write_standin(tmp_path / "ls")
    log = tmp_path / "logs" / "ls.log"
    with spawn_ls(binary, csrf_token="fixed-token", extra_args=["--detect_proxy=false"], log_path=log) as lsp:
        assert lsp.csrf_token == "fixed-token"
        _heartbeat(lsp.address, "fixed-token")
        assert read_ports(binary)["ignored_flags"][-1] == "--detect_proxy=false"
    assert "serving gRPC" in log.read_text(encoding="utf-8")
    assert log.read_text(encoding="utf-8") == lsp.output()


def test_stop_is_idempotent_and_the_output_survives_it(tmp_path: Path) -> None:
    lsp = LsProcess.start(write_standin(tmp_path / "ls"))
    first = lsp.stop()
    assert first == lsp.stop() == lsp.returncode == 0
    assert "serving gRPC" in lsp.output()
    assert not answers_h2c(lsp.address, 0.5)


def test_the_child_gets_a_scrubbed_environment_and_the_ls_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASCADE_TEST_SECRET", "must-not-leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("PYTHONPATH", "/nowhere")
    wrapper, record = _recording_wrapper(tmp_path, write_standin(tmp_path / "ls"))
    with LsProcess.start(wrapper, extra_args=["--extra=1"]) as lsp:
        _heartbeat(lsp.address, lsp.csrf_token)
        (run,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert run["env"] == scrubbed_env()
    assert set(run["env"]) <= set(ENV_ALLOWLIST)
    assert run["env"]["LANG"] == "C.UTF-8"
    argv = run["argv"]
    assert argv[:2] == [f"--server_port={lsp.address.rsplit(':', 1)[1]}", f"--csrf_token={lsp.csrf_token}"]
    assert argv[-1] == "--extra=1"
    for arg in argv:
        if "://" in arg:
            assert urlsplit(arg.split("=", 1)[1]).hostname == "127.0.0.1", arg
    database = next(a.split("=", 1)[1] for a in argv if a.startswith("--database_dir="))
    assert Path(run["cwd"]) == Path(database).parent  # its own temp dir ...
    assert not Path(database).exists()  # ... removed by stop


def test_a_port_in_use_exit_is_retried_once_on_a_new_port(tmp_path: Path) -> None:
    said = "listen tcp 127.0.0.1:1234: bind: address already in use"
    wrapper, record = _recording_wrapper(tmp_path, write_standin(tmp_path / "ls"), first_says=said)
    with LsProcess.start(wrapper) as lsp:
        _heartbeat(lsp.address, lsp.csrf_token)
    first, second = [json.loads(line)["argv"] for line in record.read_text().splitlines()]
    assert first[0] != second[0]  # --server_port
    assert first[1] == second[1]  # --csrf_token
    assert second[0] == f"--server_port={lsp.address.rsplit(':', 1)[1]}"


def test_a_binary_that_exits_at_once_gives_its_code_and_last_output(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    body = f"""import sys
open({str(runs)!r}, "a").write("run\\n")
for i in range(1, 31):
    print(f"log line {{i}}", flush=True)
print("fatal: no config for the language server", file=sys.stderr, flush=True)
sys.exit(3)
"""
    binary = _script(tmp_path / "dies", body)
    started = time.monotonic()
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, ready_timeout_s=20)
    assert time.monotonic() - started < 10  # noticed the exit, did not wait out the deadline
    message = str(info.value)
    lines = message.splitlines()
    assert "exited with code 3 before serving on 127.0.0.1:" in lines[0]
    assert lines[-1] == "  | fatal: no config for the language server"
    assert lines[1:] == [f"  | log line {i}" for i in range(12, 31)] + [lines[-1]]  # the last 20 lines only
    assert "Traceback" not in message
    assert runs.read_text() == "run\n"  # no retry: it did not say its port was in use


def test_a_binary_that_never_listens_times_out_and_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    body = f"""import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stop must escalate to SIGKILL
open({str(pid_file)!r}, "w").write(str(os.getpid()))
print("warming up, never listening", flush=True)
time.sleep(120)
"""
    binary = _script(tmp_path / "mute", body)
    started = time.monotonic()
    with pytest.raises(LsSpawnError) as info:
        LsProcess.start(binary, ready_timeout_s=1.0)
    assert time.monotonic() - started < 8
    message = str(info.value)
    assert "did not answer on 127.0.0.1:" in message
    assert "within 1 s" in message
    assert f"code {-signal.SIGKILL}" in message
    assert "warming up, never listening" in message
    assert gone(int(pid_file.read_text()))


def test_stop_kills_the_whole_process_group_and_escalates_to_sigkill(tmp_path: Path) -> None:
    child_pid = tmp_path / "grandchild.pid"
    body = f"""import signal, subprocess, sys, time
sys.path.insert(0, {str(REPO)!r})
signal.signal(signal.SIGTERM, signal.SIG_IGN)
from fakels.server import FakeLSThread
from fakels.standin import parse_ls_command_line
args = parse_ls_command_line(sys.argv[1:])
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open({str(child_pid)!r}, "w").write(str(sleeper.pid))
with FakeLSThread(port=args.server_port, csrf_token=args.csrf_token):
    time.sleep(120)
"""
    binary = _script(tmp_path / "stubborn", body)
    lsp = LsProcess.start(binary)
    _heartbeat(lsp.address, lsp.csrf_token)
    grandchild = int(child_pid.read_text())
    assert not gone(grandchild)
    started = time.monotonic()
    assert lsp.stop(timeout_s=0.5) == -signal.SIGKILL
    assert time.monotonic() - started < 5
    assert lsp.returncode == -signal.SIGKILL
    assert gone(lsp.pid)
    assert _wait_gone(grandchild)


def test_a_binary_that_cannot_be_run_gives_lsspawnerror(tmp_path: Path) -> None:
    not_executable = tmp_path / "plain.txt"
    not_executable.write_text("hello")
    with pytest.raises(LsSpawnError, match="cannot start language server"):
        LsProcess.start(not_executable)
    with pytest.raises(LsSpawnError, match="not found on PATH"):
        LsProcess.start("no-such-language-server-binary")

"""``cascade-engine serve`` as a real process: the banner, chat through the official client, SIGTERM and
SIGINT stopping it (and the LS it spawned) with exit 0, and the refusals as one clear line."""

from __future__ import annotations

import json
import re
import selectors
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

from fakels.journal import read_jsonl
from fakels.scenario import Chunk, Scenario, Turn, scenario_to_document
from fakels.server import FakeLSThread
from fakels.standin import read_ports, write_standin
from tests.engine.http.conftest import CSRF, MODEL, play, sends
from tests.engine.process_support import gone, kill_standin_left_running

ENGINE = [sys.executable, "-m", "engine.cli", "serve"]
KEY = "sk-serve-cli"
BANNER = re.compile(r"cascade-engine: http://127\.0\.0\.1:(\d+) ls=(127\.0\.0\.1:\d+)")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, process groups and shebang scripts")


@dataclass
class Engine:
    proc: subprocess.Popen[bytes]
    url: str
    ls_address: str

    def client(self, api_key: str = KEY) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0, timeout=30)

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str, str]:
        """Signal it and wait: (exit code, stdout after the banner, stderr)."""
        self.proc.send_signal(signum)
        out, err = self.proc.communicate(timeout=STOP_TIMEOUT_S)
        return self.proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _popen(args: Sequence[str]) -> subprocess.Popen[bytes]:
    # Unbuffered: the banner is read from the raw pipe, so communicate() later misses nothing.
    return subprocess.Popen(
        [*ENGINE, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    )


def _banner(proc: subprocess.Popen[bytes], timeout_s: float = START_TIMEOUT_S) -> str:
    """The first stdout line, or a failure naming what the process said instead."""
    assert proc.stdout is not None
    line = b""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                proc.kill()
                _, err = proc.communicate()
                pytest.fail(f"no banner within {timeout_s} s; stdout {line!r}, stderr:\n{err.decode(errors='replace')}")
            byte = proc.stdout.read(1)
            if not byte:
                _, err = proc.communicate()
                pytest.fail(f"exited with {proc.returncode} before its banner; stderr:\n{err.decode(errors='replace')}")
            line += byte
    return line.decode().rstrip("\n")


Start = Callable[[Sequence[str]], Engine]


@pytest.fixture
def start() -> Iterator[Start]:
    """``start(args)`` runs the engine and reads its banner; whatever still runs is killed after the test."""
    procs: list[subprocess.Popen[bytes]] = []

    def run(args: Sequence[str]) -> Engine:
        proc = _popen(args)
        procs.append(proc)
        banner = _banner(proc)
        match = BANNER.fullmatch(banner)
        assert match is not None, banner
        return Engine(proc, f"http://127.0.0.1:{match[1]}", match[2])

    yield run
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _refused(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ENGINE, *args], capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _chat(client: openai.OpenAI, text: str = "hi") -> str | None:
    answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
    return answer.choices[0].message.content


# ---------------------------------------------------------------------------------------- serving


def test_dial_serves_chat_through_the_openai_client_and_stops_on_sigterm(start: Start, fake: FakeLSThread) -> None:
    engine = start(["--port", "0", "--ls-address", fake.address, "--csrf-token", CSRF, "--api-key", KEY])
    assert engine.ls_address == fake.address
    play(fake, {"chunks": [{"text": "dialled "}, {"text": "answer"}]})
    assert _chat(engine.client(), "through the cli") == "dialled answer"
    (send,) = sends(fake)
    (item,) = send.to_json()["request"]["items"]
    assert item["text"].endswith("through the cli")  # after the engine's model-identity preamble
    with pytest.raises(openai.AuthenticationError):
        _chat(engine.client("not-a-key"))
    code, out, err = engine.stop(signal.SIGTERM)
    assert code == 0, err
    assert out == "cascade-engine: stopped (SIGTERM)\n"
    assert "Traceback" not in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_spawn_serves_chat_and_stops_and_reaps_its_ls_on_a_signal(
    start: Start, tmp_path: Path, signum: signal.Signals
) -> None:
    journal = tmp_path / "journal.jsonl"
    scenario = Scenario(turns=(Turn(chunks=(Chunk(text="from the spawned stand-in"),)),))
    binary = write_standin(tmp_path / "bin" / "ls", scenario_document=scenario_to_document(scenario), journal=journal)
    engine = start(["--port", "0", "--ls-binary", str(binary), "--api-key", KEY])
    report = read_ports(binary)
    pid = report["pid"]
    try:
        assert engine.ls_address == f"127.0.0.1:{report['grpc']}"
        assert _chat(engine.client()) == "from the spawned stand-in"
        code, out, err = engine.stop(signum)
        assert code == 0, err
        assert out == f"cascade-engine: stopped ({signum.name})\n"
        assert "Traceback" not in err
        # The engine reaped its LS before exiting: the pid is free, not even a zombie left for init.
        assert gone(pid), f"the spawned LS (pid {pid}) outlived cascade-engine"
    finally:
        kill_standin_left_running(binary)  # the bug under test: do not leak the stand-in
    sent = [e for e in read_jsonl(journal) if e["method"] == "SendUserCascadeMessage"]
    assert len(sent) == 1
    # The engine sent the fresh token it gave its LS (the journal keeps only that it matched).
    assert sent[0]["headers"]["x-codeium-csrf-token"] == f"<redacted: matches, {len(report['csrf_token'])} characters>"


def test_a_signal_while_the_ls_starts_stops_both_with_exit_0(tmp_path: Path) -> None:
    pid_file = tmp_path / "ls.pid"
    slow = _script(
        tmp_path / "slow-ls",
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n",
    )
    proc = _popen(["--port", "0", "--ls-binary", str(slow)])
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not pid_file.exists() or not pid_file.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the engine never started its LS"
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.decode() == "cascade-engine: stopped (SIGTERM) before serving\n"
    assert gone(pid)


def test_unauthenticated_on_loopback_serves_requests_without_authorization(start: Start, fake: FakeLSThread) -> None:
    engine = start(["--port", "0", "--ls-address", fake.address, "--csrf-token", CSRF])
    play(fake, {"chunks": [{"text": "no key needed"}]})
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "anyone"}]}).encode()
    request = urllib.request.Request(
        engine.url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    assert "Authorization" not in request.headers
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        answer = json.loads(response.read())
    assert answer["choices"][0]["message"]["content"] == "no key needed"
    code, out, err = engine.stop(signal.SIGINT)
    assert (code, out) == (0, "cascade-engine: stopped (SIGINT)\n"), err


# ---------------------------------------------------------------------------------------- refusals


def test_no_api_key_off_loopback_is_refused_before_binding() -> None:
    with socket.socket() as taken:
        # Hold the port on loopback: an engine that tried to bind 0.0.0.0:PORT would fail with exit 1.
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _refused(["--port", str(port), "--host", "0.0.0.0", "--ls-address", "127.0.0.1:1"])
    assert done.returncode == 2
    assert _one_line(done.stderr) == (
        "cascade-engine serve: --host 0.0.0.0 is not a loopback address: give at least one --api-key"
    )
    assert done.stdout == ""


@pytest.mark.parametrize("item", ["=x", "k=", ""])
def test_a_malformed_api_key_is_refused(item: str) -> None:
    done = _refused(["--port", "0", "--ls-address", "127.0.0.1:1", "--api-key", item])
    assert done.returncode == 2
    assert _one_line(done.stderr) == f"cascade-engine serve: --api-key {item!r}: expected KEY or KEY=CALLER"
    assert done.stdout == ""


def test_an_ls_binary_that_exits_at_once_is_exit_1_naming_the_failure(tmp_path: Path) -> None:
    dying = _script(
        tmp_path / "dying-ls", "import sys\nprint('no licence for this machine', file=sys.stderr)\nsys.exit(3)\n"
    )
    done = _refused(["--port", "0", "--ls-binary", str(dying)])
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"cascade-engine: cannot start the language server: language server {dying} exited with code 3 before serving"
    ), done.stderr
    assert "| no licence for this machine" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_missing_ls_binary_is_exit_1(tmp_path: Path) -> None:
    done = _refused(["--port", "0", "--ls-binary", "no-such-language-server-binary"])
    assert done.returncode == 1
    assert _one_line(done.stderr) == (
        "cascade-engine: cannot start the language server: "
        "language server binary 'no-such-language-server-binary' not found on PATH"
    )


def test_a_port_in_use_is_exit_1_before_any_ls_is_spawned(tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    recorder = _script(tmp_path / "ls", f"open({str(marker)!r}, 'w').close()\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _refused(["--port", str(port), "--ls-binary", str(recorder)])
    assert done.returncode == 1
    assert _one_line(done.stderr) == f"cascade-engine: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert not marker.exists()
    assert done.stdout == ""

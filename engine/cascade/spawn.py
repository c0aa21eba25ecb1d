"""Start the language-server binary the way real gateways do, wait until it serves, stop it.

The child gets ``--server_port=N --csrf_token=T`` plus a few of the real LS's own flags (pointed
at nothing but loopback and a private temp directory), a scrubbed environment
(:data:`ENV_ALLOWLIST`), its own session and process group, and its stdout and stderr in one log
file. Readiness is a completed HTTP/2 handshake on ``127.0.0.1:N`` (:func:`answers_h2c`).

The child is reaped only in :meth:`LsProcess.stop`: until then a dead leader stays a zombie, so
its process-group id cannot be reused and signalling the group never reaches a stranger.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Final

import h2.connection
import h2.events
import h2.exceptions

LOOPBACK: Final = "127.0.0.1"
#: The only parent variables the child sees (when set); SYSTEMROOT only on Windows.
ENV_ALLOWLIST: Final = ("PATH", "HOME", "LANG", "TMPDIR", "TEMP", *(("SYSTEMROOT",) if sys.platform == "win32" else ()))
#: A real LS flag that must not reach any server: the API URL points at a closed loopback port.
DEAD_API_SERVER_URL: Final = "http://127.0.0.1:1"
OUTPUT_TAIL_LINES: Final = 20

_PROBE_S: Final = 0.25  # one handshake attempt
_POLL_S: Final = 0.02
_CLEANUP_STOP_S: Final = 2.0  # stopping a child that failed to start
_PORT_IN_USE: Final = re.compile(r"address already in use|EADDRINUSE|port in use|failed to bind", re.IGNORECASE)
#: Every deadline here is read from this clock; tests swap it to pin the default deadlines without waiting them out.
_clock: Callable[[], float] = time.monotonic
#: The handshake probe's own deadline is real time, as its socket's timeouts are; tests script it to end a
#: probe between two reads.
_probe_clock: Callable[[], float] = time.monotonic


class LsSpawnError(RuntimeError):
    """The LS could not be started or did not serve in time; the message carries its last output."""


@dataclass(frozen=True)
class SpawnedLs:
    address: str  # "127.0.0.1:PORT"
    csrf_token: str
    pid: int


def scrubbed_env(parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: the :data:`ENV_ALLOWLIST` variables of ``parent`` (default: ours)."""
    source = os.environ if parent is None else parent
    return {name: source[name] for name in ENV_ALLOWLIST if name in source}


def free_loopback_port() -> int:
    """A port the OS just handed out on 127.0.0.1, closed again for the child to bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def answers_h2c(address: str, timeout_s: float) -> bool:
    """Whether a server on ``HOST:PORT`` completes an HTTP/2 handshake (cleartext, as gRPC speaks) within
    ``timeout_s``: it answers our connection preface with its SETTINGS.

    One socket and no gRPC channel: grpc's readiness future polls connectivity on a thread of its own,
    which can call into the channel after it is closed and die with a traceback (grpc/grpc#18995).
    """
    host, _, port = address.rpartition(":")
    connection = h2.connection.H2Connection()  # h2's default configuration is the client side
    connection.initiate_connection()
    deadline = _probe_clock() + timeout_s
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(connection.data_to_send())
            while (remaining := deadline - _probe_clock()) > 0:
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    return False
                if any(isinstance(e, h2.events.RemoteSettingsChanged) for e in connection.receive_data(data)):
                    connection.close_connection()
                    sock.sendall(connection.data_to_send())
                    return True
    except (OSError, h2.exceptions.ProtocolError):
        return False
    return False


def _executable(binary: str | Path) -> str:
    text = os.fspath(binary)
    if os.sep in text or (os.altsep is not None and os.altsep in text):
        return os.path.abspath(text)  # the child runs in its own temp dir, so a relative path would miss
    found = shutil.which(text)
    if found is None:
        raise LsSpawnError(f"language server binary {text!r} not found on PATH")
    return found


class LsProcess:
    """A running LS child; a context manager that stops it on exit. Create with :meth:`start`."""

    def __init__(self, proc: subprocess.Popen[bytes], spawned: SpawnedLs, workdir: Path, log_path: Path) -> None:
        self._proc = proc
        self._info = spawned
        self._workdir = workdir
        self._log_path = log_path
        self._final_output: str | None = None

    @classmethod
    def start(
        cls,
        binary: str | Path,
        *,
        csrf_token: str | None = None,
        ready_timeout_s: float = 20.0,
        extra_args: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> LsProcess:
        """Spawn ``binary`` and wait until it serves gRPC; raise :class:`LsSpawnError` otherwise.

        One retry on a fresh port when the child exits saying its port is in use. ``log_path``
        receives the child's output (truncated first; a retry appends); without it the output
        lives in a temp file until :meth:`stop`. ``ready_timeout_s`` bounds the whole start.
        """
        token = secrets.token_hex(16) if csrf_token is None else csrf_token
        executable = _executable(binary)
        deadline = _clock() + ready_timeout_s
        for attempt in (1, 2):
            process = cls._launch(executable, token, extra_args, log_path, append=attempt > 1)
            try:
                failure = process._wait_ready(deadline, ready_timeout_s)
            except BaseException:
                process.stop(_CLEANUP_STOP_S)
                raise
            if failure is None:
                return process
            code = process.stop(_CLEANUP_STOP_S)
            output = process.output()
            if attempt == 1 and failure == "exited" and _PORT_IN_USE.search(output):
                continue
            raise LsSpawnError(_failure_message(executable, process.address, failure, code, output, ready_timeout_s))
        raise AssertionError("unreachable")

    @classmethod
    def _launch(
        cls, executable: str, token: str, extra_args: Sequence[str], log_path: Path | None, *, append: bool
    ) -> LsProcess:
        workdir = Path(tempfile.mkdtemp(prefix="cascade-ls-"))
        log = log_path if log_path is not None else workdir / "ls-output.log"
        port = free_loopback_port()
        database = workdir / "db"
        database.mkdir()
        argv = [
            executable,
            f"--server_port={port}",
            f"--csrf_token={token}",
            f"--api_server_url={DEAD_API_SERVER_URL}",
            "--run_child",
            "--enable_lsp",
            f"--database_dir={database}",
            *extra_args,
        ]
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("ab" if append else "wb") as out:
                proc = _popen(argv, out, workdir)
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise LsSpawnError(f"cannot start language server {executable}: {exc}") from None
        return cls(proc, SpawnedLs(f"{LOOPBACK}:{port}", token, proc.pid), workdir, log)

    # ------------------------------------------------------------------------------ state

    @property
    def info(self) -> SpawnedLs:
        return self._info

    @property
    def address(self) -> str:
        return self._info.address

    @property
    def csrf_token(self) -> str:
        return self._info.csrf_token

    @property
    def pid(self) -> int:
        return self._info.pid

    @property
    def returncode(self) -> int | None:
        """The exit code (negative: killed by that signal), or None while the child runs."""
        if sys.platform == "win32" or self._proc.returncode is not None:
            return self._proc.poll()
        try:
            status = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped behind our back: let Popen record what it can
            return self._proc.poll()
        if status is None:
            return None
        return status.si_status if status.si_code == os.CLD_EXITED else -status.si_status

    def output(self) -> str:
        """The child's stdout and stderr so far (all of it after :meth:`stop`)."""
        if self._final_output is not None:
            return self._final_output
        try:
            return self._log_path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return ""

    # ------------------------------------------------------------------------------ readiness

    def _wait_ready(self, deadline: float, timeout_s: float) -> str | None:
        """None once the handshake succeeds; "exited" or "timeout" otherwise."""
        while True:
            if self.returncode is not None:
                return "exited"
            remaining = deadline - _clock()
            if remaining <= 0:
                return "timeout"
            if not answers_h2c(self.address, min(_PROBE_S, remaining)):
                time.sleep(_POLL_S)  # a refused connection fails at once: do not spin
                continue
            # another process may hold the port; then ours is the one that dies of it
            return "exited" if self.returncode is not None else None

    # ------------------------------------------------------------------------------ stopping

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM the child's process group, SIGKILL it after ``timeout_s``, reap; idempotent.

        Returns the exit code. Whatever the group still holds once the leader is gone is killed too.
        """
        if self._final_output is None:
            try:
                self._terminate(timeout_s)
            finally:
                self._final_output = self.output()
                shutil.rmtree(self._workdir, ignore_errors=True)
        code = self._proc.returncode
        assert code is not None
        return int(code)

    def _terminate(self, timeout_s: float) -> None:
        if sys.platform == "win32":
            if self._proc.poll() is None:
                self._proc.terminate()
            try:
                self._proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            return
        self._signal_group(signal.SIGTERM)
        deadline = _clock() + timeout_s
        while self.returncode is None and _clock() < deadline:
            time.sleep(_POLL_S)
        self._signal_group(signal.SIGKILL)  # the leader if it lingers, and any straggler either way
        self._proc.wait()

    def _signal_group(self, signum: int) -> None:
        if sys.platform != "win32":
            try:
                os.killpg(self._proc.pid, signum)
            except (ProcessLookupError, PermissionError):  # it left the group; the unreaped leader is still ours
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self._proc.pid, signum)

    def __enter__(self) -> LsProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


spawn_ls = LsProcess.start


def _popen(argv: list[str], out: IO[bytes], workdir: Path) -> subprocess.Popen[bytes]:
    # Its own process group (session on POSIX), so stop() can end the LS and anything it started.
    windows = sys.platform == "win32"
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=scrubbed_env(),
        start_new_session=not windows,
        creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if windows else 0,
    )


def _failure_message(executable: str, address: str, failure: str, code: int, output: str, timeout_s: float) -> str:
    if failure == "exited":
        what = f"language server {executable} exited with code {code} before serving on {address}"
    else:
        what = f"language server {executable} did not answer on {address} within {timeout_s:g} s (stopped, code {code})"
    tail = output.splitlines()[-OUTPUT_TAIL_LINES:]
    if not tail:
        return f"{what}; it wrote no output"
    return f"{what}; its last output:\n" + "\n".join(f"  | {line}" for line in tail)

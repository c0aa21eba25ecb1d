"""Launching a gateway under test and wiring its language server to the kit's fake.

The wiring says how the gateway finds its LS:

- ``dial``: the kit starts a fake (:class:`fakels.server.FakeLSThread`) and passes its address and
  CSRF token (placeholders ``{ls_address}``, ``{csrf_token}``);
- ``spawn``: the kit writes a stand-in binary (``fakels.standin``) and passes its path
  (``{ls_binary}``); the gateway starts it as its LS and the kit reaches the fake through the
  control port baked into it;
- ``none``: the gateway's LS is none of the kit's business (only HTTP-level checks).

``{port}`` is the gateway's HTTP port in every wiring, ``{python}`` the kit's own interpreter (a bare
leading ``python`` or ``python3`` runs it too: :mod:`conformance.targets._interpreter`). The gateway runs
in its own process group, its stdout and stderr go to one file, and :meth:`LaunchedGateway.stop` ends
the whole group.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from conformance.errors import TargetError, TargetSpecError
from conformance.interrupts import raise_if_stopping
from conformance.ls_handle import InProcessLs, LsHandle, StandinLs
from conformance.options import PLACEHOLDERS
from conformance.targets._interpreter import kit_python, missing_module_hint
from fakels.server import FakeLSThread
from fakels.standin import write_standin

Wiring = Literal["dial", "spawn", "none"]
WIRINGS: tuple[Wiring, ...] = ("dial", "spawn", "none")
KIT_CSRF_TOKEN = "cascade-conformance-kit-csrf-token"
_FITS: dict[Wiring, frozenset[str]] = {
    "dial": frozenset({"ls_address", "ls_h2_address", "csrf_token", "port", "python"}),
    "spawn": frozenset({"ls_binary", "port", "python"}),
    "none": frozenset({"port", "python"}),
}
# The placeholders a gateway can reach the kit's LS by, per wiring (it must use one; an error names the first).
_WAYS_TO_THE_LS: dict[Wiring, tuple[str, ...]] = {
    "dial": ("ls_address", "ls_h2_address"),
    "spawn": ("ls_binary",),
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TAIL_LINES = 30
_STOP_GRACE_S = 5.0
_POLL_S = 0.05
# Where process states are read; a system without it (no /proc/self/stat) falls back to the null signal.
_PROC = Path("/proc")
# The range Linux hands out for port 0 (and outgoing connections); free_port picks from outside it.
_EPHEMERAL_RANGE = _PROC / "sys" / "net" / "ipv4" / "ip_local_port_range"
_FIRST_PICKED_PORT = 10000


@dataclass(frozen=True)
class LaunchSpec:
    """How to start the gateway: ``command`` is split like a shell would (no shell runs it);
    ``env`` is added to the kit's environment; placeholders (:data:`PLACEHOLDERS`) are filled in the
    command's words and in ``env`` values."""

    command: str
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    wiring: Wiring = "dial"
    ready_timeout_s: float = 30.0
    csrf_token: str = KIT_CSRF_TOKEN
    # The launched process must hold its port: a fixed port is free before the launch, and the process
    # still runs once something answers there. Off only in tests of the launch mechanics that answer HTTP
    # from a server of their own.
    own_port: bool = True

    def words(self) -> list[str]:
        """The command split into words; a usage error when it cannot be split or is empty."""
        try:
            words = shlex.split(self.command)
        except ValueError as exc:
            raise TargetSpecError(f"--launch {self.command!r}: cannot split the command: {exc}") from None
        if not words:
            raise TargetSpecError('--launch needs a command, e.g. --launch "node src/index.js"')
        return words

    def check(self, *, needs_port: bool) -> None:
        """Usage errors, before anything starts: an unknown placeholder, one that does not fit the
        wiring, a wiring whose LS placeholder is never used, a port 0 the command never receives."""
        self.words()
        if self.wiring not in WIRINGS:
            raise TargetSpecError(f"--ls-wiring must be one of {', '.join(WIRINGS)}, got {self.wiring!r}")
        if self.ready_timeout_s <= 0:
            raise TargetSpecError(f"--ready-timeout must be a positive number of seconds, got {self.ready_timeout_s}")
        if self.cwd is not None and not self.cwd.is_dir():
            raise TargetSpecError(f"--launch-cwd {self.cwd}: not a directory")
        used = self._used()
        unknown = sorted(used - set(PLACEHOLDERS))
        if unknown:
            known = ", ".join(f"{{{name}}} ({what})" for name, what in PLACEHOLDERS.items())
            raise TargetSpecError(
                f"--launch: unknown placeholder {', '.join(f'{{{n}}}' for n in unknown)}; the placeholders are: {known}"
            )
        misfit = sorted(used - _FITS[self.wiring])
        if misfit:
            fitting = ", ".join(f"{{{n}}}" for n in sorted(_FITS[self.wiring]))
            raise TargetSpecError(
                f"--launch: {', '.join(f'{{{n}}}' for n in misfit)} does not fit --ls-wiring {self.wiring} "
                f"(with {self.wiring} the placeholders are {fitting}; {{ls_address}}, {{ls_h2_address}} and "
                "{csrf_token} are for dial, {ls_binary} for spawn)"
            )
        ways_in = _WAYS_TO_THE_LS.get(self.wiring)
        if ways_in is not None and not used.intersection(ways_in):
            needed = ways_in[0]
            raise TargetSpecError(
                f"--ls-wiring {self.wiring}: the launch command and its --launch-env values never use {{{needed}}}, "
                f"so the gateway cannot find the kit's LS (use --ls-wiring none for HTTP-only checks)"
            )
        if needs_port and "port" not in used:
            raise TargetSpecError(
                "the target URL says port 0 (the kit picks one) but the launch command and its --launch-env "
                "values never use {port}: pass it to the gateway, or give the port it listens on in the URL"
            )

    def placeholders(self) -> set[str]:
        """The placeholders the command and its environment use."""
        return self._used()

    def _used(self) -> set[str]:
        texts = [self.command, *self.env.values()]
        return {match.group(1) for text in texts for match in _PLACEHOLDER.finditer(text)}


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each known placeholder replaced (unknown ones were refused by check())."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on loopback now (closed again, so a child can bind it).

    Taken from outside the range the OS hands out for port 0 where that range is known: between this pick
    and the child's bind, any process that binds port 0 (a busy machine runs many) could otherwise be handed
    the very same port and answer in the gateway's place."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in _outside_the_ephemeral_range():
        with socket.socket(family) as sock:
            try:
                sock.bind((host, candidate))
            except OSError:
                continue
            return candidate
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _outside_the_ephemeral_range(tries: int = 64) -> list[int]:
    """``tries`` random ports from 10000 (below it live well-known services) up to the start of the ephemeral
    range, or from above its end, whichever span is wider; none where the range cannot be read or neither
    span holds ``tries`` ports."""
    try:
        low, high = (int(word) for word in _EPHEMERAL_RANGE.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return []
    spans = [(lo, hi) for lo, hi in ((_FIRST_PICKED_PORT, low - 1), (high + 1, 65535)) if hi - lo + 1 >= tries]
    if not spans:
        return []
    lo, hi = max(spans, key=lambda span: span[1] - span[0])
    return random.SystemRandom().sample(range(lo, hi + 1), tries)


class LaunchedGateway:
    """A running gateway: :meth:`start` wires the LS side, starts the command and waits until it
    answers HTTP (and, with spawn, until the stand-in it started answers); :meth:`stop` ends it."""

    def __init__(self, spec: LaunchSpec, *, host: str, port: int) -> None:
        spec.check(needs_port=port == 0)
        self.spec = spec
        self.host = host
        self._fixed_port = port != 0
        try:
            self.port = port or free_port("::1" if host == "::1" else "127.0.0.1")
        except OSError as exc:
            raise TargetError(f"cannot pick a free port on {host} for the gateway: {exc}") from None
        self.ls: LsHandle | None = None
        self._words = spec.words()
        self._dir = tempfile.TemporaryDirectory(prefix="cascade-gateway-")
        self._log_path = Path(self._dir.name) / "gateway-output.log"
        self._log: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._fake: FakeLSThread | None = None
        self._standin: StandinLs | None = None
        self._final_output: str | None = None
        self._stopped = False
        # What ran, once started: the program (placeholders filled, a bare python resolved) and its environment.
        self._program = self._words[0]
        self._env: dict[str, str] = dict(os.environ)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> LaunchedGateway:
        try:
            if self._fixed_port and self.spec.own_port:
                self._port_is_free()
            values = self._wire()
            self._spawn(values)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> LaunchedGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ starting

    def _wire(self) -> dict[str, str]:
        try:
            return self._wire_ls()
        except OSError as exc:
            raise TargetError(f"cannot start the kit's side of --ls-wiring {self.spec.wiring}: {exc}") from None

    def _wire_ls(self) -> dict[str, str]:
        values = {"port": str(self.port), "python": sys.executable}
        if self.spec.wiring == "dial":
            # {ls_h2_address}: the gateway dials the fake's hand-written gRPC port, where a call can fail at the
            # HTTP level too.
            h2 = "ls_h2_address" in self.spec.placeholders()
            self._fake = FakeLSThread(csrf_token=self.spec.csrf_token, grpc_h2_port=0 if h2 else None).start()
            self.ls = InProcessLs(self._fake, self.spec.csrf_token, http_faults=h2)
            values |= {"ls_address": self._fake.address, "csrf_token": self.spec.csrf_token}
            if h2:
                values["ls_h2_address"] = self._fake.h2_address
        elif self.spec.wiring == "spawn":
            control_port = free_port()
            binary = write_standin(Path(self._dir.name) / "ls" / "language_server_linux_x64", control_port=control_port)
            self._standin = StandinLs(binary, control_port)
            self.ls = self._standin
            values["ls_binary"] = str(binary)
        return values

    def _spawn(self, values: Mapping[str, str]) -> None:
        argv = [fill(word, values) for word in self._words]
        env = dict(os.environ) | {key: fill(value, values) for key, value in self.spec.env.items()}
        argv[0] = _beside_the_kit(kit_python(argv[0], env), env.get("PATH"))
        self._program, self._env = argv[0], env
        self._log = self._log_path.open("wb")
        try:
            self._proc = subprocess.Popen(
                argv,
                cwd=self.spec.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends the gateway and its children
            )
        except OSError as exc:
            raise TargetSpecError(f"--launch {self.spec.command!r}: cannot start {argv[0]!r}: {exc}") from None

    def _port_is_free(self) -> None:
        """A fixed port another process holds would answer in the gateway's place: refuse to start."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, self.port))
            except OSError as exc:
                raise TargetError(
                    f"port {self.port} on {self.host} is taken ({exc.strerror or exc}): another process would answer "
                    "in the gateway's place; stop it, or give port 0 in the target URL so the kit picks a free one"
                ) from None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.spec.ready_timeout_s
        while not self._answers_http(deadline):
            raise_if_stopping()
            self._still_running("before it answered HTTP")
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"{self._name()}: no HTTP answer on {self.host}:{self.port} (GET /v1/models) within "
                    f"{self.spec.ready_timeout_s:g} s (--ready-timeout){self._tail_note()}"
                )
            time.sleep(_POLL_S)
        if self.spec.own_port:  # something answered: it must be the process the kit launched, still running
            self._still_running(f"while something else answered on port {self.port}")
        if self._standin is None:
            return
        while not self._standin.ready():
            raise_if_stopping()
            self._still_running("before its LS came up")
            if time.monotonic() >= deadline:
                raise TargetError(
                    f"{self._name()}: answers HTTP, but the stand-in LS it was given ({{ls_binary}}) did not come up "
                    f"on its control port {self._standin.control_port} within {self.spec.ready_timeout_s:g} s: the "
                    "gateway must start that binary as its LS at start-up, as <binary> --server_port=N "
                    f"--csrf_token=T{self._tail_note()}"
                )
            time.sleep(_POLL_S)

    def _answers_http(self, deadline: float) -> bool:
        """A TCP connect, then ``GET /v1/models`` answered with any status."""
        timeout = max(0.05, min(1.0, deadline - time.monotonic()))
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout):
                pass
        except OSError:
            return False
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request("GET", "/v1/models")
            connection.getresponse().read()
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def _still_running(self, when: str) -> None:
        code = self._proc.poll() if self._proc is not None else None
        if code is not None:
            raise TargetError(f"{self._name()}: {describe_exit(code)} {when}{self._hint()}{self._tail_note()}")

    # ------------------------------------------------------------------ running

    def exit_code(self) -> int | None:
        """None while the gateway runs (or before it started); its exit code once it ended (negative:
        the signal that ended it)."""
        return self._proc.poll() if self._proc is not None else None

    def gone(self) -> str | None:
        """None while the launched gateway runs; once it has ended, how, with the end of its output."""
        code = self.exit_code()
        if code is None or self._stopped:
            return None
        last = self.output_tail(1)
        said = f"; its last words: {last!r}" if last else "; it wrote nothing"
        hint = self._hint()
        return f"{self._name()} {describe_exit(code)} during the run{said}{hint} (all of it: gateway-output.log)"

    def output(self) -> str:
        """Everything the gateway wrote to stdout and stderr so far (kept after stop())."""
        if self._final_output is not None:
            return self._final_output
        try:
            return self._log_path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def output_tail(self, lines: int = _TAIL_LINES) -> str:
        return "\n".join(self.output().rstrip().splitlines()[-lines:])

    def _tail_note(self) -> str:
        tail = self.output_tail()
        return f"; its output ends:\n{tail}" if tail else "; it wrote no output"

    def _hint(self) -> str:
        """Which interpreter ran, when the gateway's output shows a module it could not import."""
        return missing_module_hint(self.output(), self._program, self._env)

    def _name(self) -> str:
        return f"the gateway ({self.spec.command})"

    # ------------------------------------------------------------------ stopping

    def stop(self, grace_s: float = _STOP_GRACE_S) -> None:
        """SIGTERM to the gateway's process group, SIGKILL after ``grace_s``, the gateway reaped;
        then the kit's fake stopped. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._proc is not None:
            _end_group(self._proc, grace_s)
        if self._log is not None:
            self._log.close()
            self._log = None
        self._end_left_standin(grace_s)
        if self._final_output is None and self._log_path.exists():
            self._final_output = self.output()
        fake, self._fake = self._fake, None
        if fake is not None:
            fake.stop()
        self._dir.cleanup()

    def _end_left_standin(self, grace_s: float) -> None:
        """A gateway that starts its LS in a session of its own and does not stop it leaves the kit's
        stand-in running after the group is gone: the kit ends it and says so in the output."""
        if self._standin is None:
            return
        pid = self._standin.pid()
        if pid is None or not _running(pid) or not self._standin.runs_as(pid):
            return
        _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        if _running(pid):
            _signal(pid, signal.SIGKILL)
        with contextlib.suppress(OSError), self._log_path.open("a", encoding="utf-8") as log:
            log.write(
                f"\n[cascade-conformance] the gateway left its LS (the stand-in, pid {pid}) running after it "
                "stopped, outside its process group; the kit ended it\n"
            )


def _beside_the_kit(program: str, path: str | None) -> str:
    """``program`` as given, or, when it is a bare name the PATH does not find but the kit's own
    environment has (``cascade-engine`` from a venv that is not activated), the kit's copy: the
    commands the docs print then run as printed."""
    if os.sep in program or shutil.which(program, path=path) is not None:
        return program
    own = Path(sys.executable).parent / program
    return str(own) if own.is_file() and os.access(own, os.X_OK) else program


def describe_exit(code: int) -> str:
    """``exited with code 3``, or ``was ended by SIGKILL`` for a negative Popen return code."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was ended by {signal.Signals(-code).name}"
    except ValueError:
        return f"was ended by signal {-code}"


def _end_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    group = proc.pid  # start_new_session: the group id is the leader's pid
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    while _group_alive(group) and time.monotonic() < deadline:  # children finishing their own shutdown
        time.sleep(_POLL_S)
    if _group_alive(group):
        _signal_group(group, signal.SIGKILL)
    proc.wait()
    while _group_alive(group) and time.monotonic() < deadline + grace_s:  # killed members on their way out
        time.sleep(_POLL_S)


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not), from /proc where there is one."""
    if not (_PROC / "self" / "stat").exists():
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    try:
        state = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False  # gone
    return bool(state) and state[0] not in ("Z", "X")


def _group_alive(group: int) -> bool:
    """Whether a live (not zombie) process is left in ``group``: read from /proc where there is one
    (an orphan's zombie waits for init to reap it, which is none of the kit's business)."""
    if not (_PROC / "self" / "stat").exists():
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone while we looked
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False

"""Adapter-process targets: ``exec:COMMAND`` speaking JSON lines (adapter_protocol.schema.json)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from importlib import resources
from typing import IO, Any

import jsonschema

from conformance.errors import TargetError, TargetHung, TargetSpecError
from conformance.operations import OPERATIONS, PROTOCOL_VERSION
from conformance.targets._base import DeclaredOperations, check_capabilities, check_result, observed
from conformance.targets._interpreter import PYTHON_PLACEHOLDER, kit_python, missing_module_hint

# Per-call timeouts scale with the adapter's measured round trip, with a floor, so a slow
# machine or a slow language runtime does not turn into false failures.
CALL_TIMEOUT_FLOOR_S = 30.0
CALL_TIMEOUT_ROUND_TRIPS = 2000
HANDSHAKE_TIMEOUT_S = 60.0
# How long an adapter whose stdout ended may take to exit (its code goes into the error), and how
# long close() waits for an adapter to exit on end of input before it is killed.
EXIT_WAIT_S = 2.0
CLOSE_GRACE_S = 5.0
# A killed adapter is reaped at once; this bound only guards against a process stuck in the kernel.
KILLED_WAIT_S = 5.0
# How long close() waits for the stdout reader to see the end of a reaped adapter's output.
_READER_END_S = 1.0
_STDERR_TAIL = 1500  # bytes of an adapter's stderr an error message shows at most
_EOF = object()


def protocol_schema() -> dict[str, Any]:
    text = resources.files("conformance").joinpath("adapter_protocol.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


class ExecTarget(DeclaredOperations):
    """A child process; requests go to its stdin, one JSON object per line, answers come back on stdout."""

    kind = "exec"

    def __init__(self, command: list[str], call_timeout_s: float) -> None:
        self._command = command
        self._timeout = call_timeout_s
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the target
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                encoding="utf-8",  # the protocol is UTF-8 JSON whatever the locale
                bufsize=1,
                # A process group of its own: the SIGINT a terminal sends the kit's group does not reach
                # the adapter, so no verdict comes from an adapter that died of it; close() ends it.
                process_group=0,
            )
        except OSError as exc:
            self._stderr.close()
            raise TargetSpecError(f"exec:{shlex.join(command)}: cannot start the adapter: {exc}") from exc
        self._lines: queue.Queue[object] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="adapter-stdout", daemon=True)
        self._reader.start()
        self._next_id = 0
        self._hung = False  # a call went unanswered: close() kills at once, without the grace
        self._lock = threading.Lock()
        self._schema = protocol_schema()
        self._name = shlex.join(command)
        self._ops: frozenset[str] = frozenset()
        self._caps: dict[str, dict[str, Any]] = {}
        self._hello_answer: Any = None
        self.handshake_s = 0.0

    @classmethod
    def start(cls, command_text: str, *, call_timeout_s: float | None = None) -> ExecTarget:
        """Start the adapter, shake hands, and set the per-call timeout: ``call_timeout_s`` when
        given, else calibrated from three more hello round trips. The hello is not a call: it waits
        for the adapter's start-up too, so it has at least :data:`HANDSHAKE_TIMEOUT_S` (a loaded
        machine starting a runtime is not an error). ``{python}`` in a word is the kit's own interpreter,
        as is a bare leading ``python`` or ``python3`` (:func:`kit_python`)."""
        command = [word.replace(PYTHON_PLACEHOLDER, sys.executable) for word in shlex.split(command_text)]
        if not command:
            raise TargetSpecError("exec: needs a command, e.g. exec:node adapter.mjs")
        command[0] = kit_python(command[0], os.environ)
        target = cls(command, max(call_timeout_s or 0.0, HANDSHAKE_TIMEOUT_S))
        try:
            target._hello()
            target._timeout = call_timeout_s if call_timeout_s is not None else target._calibrate()
        except BaseException:  # an error, or a stop signal during the handshake: the adapter is not left running
            target.close()
            raise
        return target

    def _calibrate(self) -> float:
        trips = []
        for _ in range(3):
            started = time.perf_counter()
            again = self._request("hello", {"protocol": PROTOCOL_VERSION})
            trips.append(time.perf_counter() - started)
            if again != self._hello_answer:
                raise TargetError(
                    f"{self.description}: a repeated hello answered differently: {again} vs {self._hello_answer}"
                )
        return max(CALL_TIMEOUT_FLOOR_S, CALL_TIMEOUT_ROUND_TRIPS * sorted(trips)[1])

    @property
    def call_timeout_s(self) -> float:
        return self._timeout

    def _hello(self) -> None:
        started = time.perf_counter()
        result = self._request("hello", {"protocol": PROTOCOL_VERSION})
        self.handshake_s = time.perf_counter() - started
        self._hello_answer = result
        errors = list(jsonschema.Draft202012Validator(self._schema["$defs"]["hello_result"]).iter_errors(result))
        if errors:
            raise TargetError(f"{self.description}: bad hello answer: {errors[0].message}")
        unknown = sorted(set(result["operations"]) - set(OPERATIONS))
        if unknown:
            raise TargetError(f"{self.description}: declares operations the protocol does not have: {unknown}")
        self._name = f"{result['name']} ({self.description})"
        ops = frozenset(result["operations"])
        self._caps = check_capabilities(self._name, ops, result.get("capabilities", {}))
        self._ops = ops

    @property
    def description(self) -> str:
        return f"exec:{shlex.join(self._command)}" if not self._ops else self._name

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        self._before_call(op, params)
        answer = self._request(op, params)
        try:
            return check_result(op, answer, self.description, observed(self.capabilities(op)))
        except TargetError as exc:
            raise TargetError(f"{exc}{self._stderr_note()}") from None

    def _request(self, op: str, params: dict[str, Any]) -> Any:
        with self._lock:
            request_id = self._next_id
            self._next_id += 1
            line = json.dumps({"id": request_id, "op": op, "params": params}, ensure_ascii=False)
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise TargetError(self._died(f"while sending {op}")) from None
            try:
                answer = self._lines.get(timeout=self._timeout)
            except KeyboardInterrupt:
                self._hung = True  # stopped mid-call: the adapter is busy, close() ends it without the grace
                raise
            except queue.Empty:
                self._hung = True
                raise TargetHung(
                    f"{self.description}: no answer to {op} within {self._timeout:.1f} s (per-call timeout)"
                    + self._stderr_note()
                ) from None
            if answer is _EOF:
                raise TargetError(self._died(f"before answering {op}"))
            return self._unwrap(op, request_id, str(answer))

    def _unwrap(self, op: str, request_id: int, line: str) -> Any:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise TargetError(
                f"{self.description}: answered {op} with a line that is not JSON (stdout is reserved for the "
                f"protocol; logs go to stderr): {line[:200]!r}{self._stderr_note()}"
            ) from None
        errors = list(jsonschema.Draft202012Validator(self._schema["$defs"]["response"]).iter_errors(message))
        if errors:
            raise TargetError(
                f"{self.description}: malformed response to {op}: {errors[0].message}; the line was: "
                f"{line[:300]!r}{self._stderr_note()}"
            )
        if message["id"] != request_id:
            raise TargetError(f"{self.description}: answered id {message['id']} while {request_id} ({op}) was pending")
        if "error" in message:
            raise TargetError(
                f"{self.description}: {op} failed in the adapter: {message['error']['message']}{self._stderr_note()}"
            )
        return message["result"]

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.strip():
                self._lines.put(line)
        self._lines.put(_EOF)

    def _died(self, when: str) -> str:
        try:
            code = self._proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        status = f"exited with {code}" if code is not None else "closed its stdout"
        return f"{self.description}: the adapter {status} {when}{self._missing_module_hint()}{self._stderr_note()}"

    def _missing_module_hint(self) -> str:
        try:
            self._stderr.seek(0)
            written = self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return missing_module_hint(written, self._command[0], os.environ)

    def _stderr_note(self) -> str:
        """The tail of what the adapter wrote to stderr so far, for error messages: whole lines within the
        last :data:`_STDERR_TAIL` bytes, or the end of one line longer than that, marked as cut."""
        try:
            self._stderr.seek(0)
            written = self._stderr.read()
        except (OSError, ValueError):
            return ""
        tail = written[-_STDERR_TAIL:]
        cut = len(written) > _STDERR_TAIL and written[-_STDERR_TAIL - 1 : -_STDERR_TAIL] != b"\n"
        if cut:
            newline = tail.find(b"\n")
            tail = tail[newline + 1 :] if 0 <= newline < len(tail.rstrip()) else "…".encode() + tail
        text = tail.decode("utf-8", errors="replace").strip()
        return f"; its stderr ends:\n{text}" if text else ""

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=0 if self._hung else CLOSE_GRACE_S)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=KILLED_WAIT_S)
        self._close_pipes()
        self._stderr.close()

    def _close_pipes(self) -> None:
        """The adapter's stdin, and its stdout once the reader has read to its end: left to the garbage
        collector, each warned of itself in whatever code ran then. A grandchild that still holds stdout
        open keeps the reader (a daemon) reading; its pipe is then left to it."""
        with contextlib.suppress(OSError):  # an adapter gone before its last request was flushed
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        self._reader.join(timeout=_READER_END_S)
        if not self._reader.is_alive():
            assert self._proc.stdout is not None
            self._proc.stdout.close()

"""The ``exec:`` target's side of the adapter protocol: the handshake, the per-call timeout, and the
errors for adapters that answer outside the protocol. The adapters are scripted ``sh`` programs
(one canned answer per request line); every check here is the kit's, in this process."""

from __future__ import annotations

import gc
import json
import locale
import os
import re
import shlex
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from conformance.errors import TargetError, TargetSpecError
from conformance.interrupts import Interrupted, stop_signals_interrupt
from conformance.targets import ExecTarget, _exec, load_target
from conformance.targets._exec import (
    CALL_TIMEOUT_FLOOR_S,
    CALL_TIMEOUT_ROUND_TRIPS,
    HANDSHAKE_TIMEOUT_S,
    protocol_schema,
)
from tests.support.procs import alive

HELLO: dict[str, Any] = {
    "protocol": 1,
    "name": "sh-adapter",
    "operations": ["ls.decode_request", "ls.stop"],
    "capabilities": {"ls.decode_request": {"methods": ["Heartbeat"]}},
}


def line(message: Any) -> str:
    return message if isinstance(message, str) else json.dumps(message)


def answer(request_id: int, result: Any) -> str:
    return line({"id": request_id, "result": result})


def adapter(tmp_path: Path, *steps: str, tail: str = "cat >/dev/null") -> str:
    """An ``exec:`` spec whose adapter reads one request line per step and runs it: a JSON answer to
    print, or ``sh:`` and a shell command; then ``tail``."""
    body = []
    for step in steps:
        body.append("read -r request")
        body.append(step[3:] if step.startswith("sh:") else f"printf '%s\\n' {shlex.quote(step)}")
    body.append(tail)
    script = tmp_path / "adapter.sh"
    script.write_text("\n".join(body) + "\n", encoding="utf-8")
    return f"sh {script}"


def start(command: str, call_timeout_s: float | None = 5.0) -> ExecTarget:
    return ExecTarget.start(command, call_timeout_s=call_timeout_s)


def failure(command: str, call_timeout_s: float | None = 5.0) -> str:
    with pytest.raises(TargetError) as info:
        start(command, call_timeout_s).close()
    return str(info.value)


def test_protocol_constants() -> None:
    assert (CALL_TIMEOUT_FLOOR_S, CALL_TIMEOUT_ROUND_TRIPS, HANDSHAKE_TIMEOUT_S) == (30.0, 2000, 60.0)
    assert protocol_schema()["$defs"]["hello_result"]["required"] == ["protocol", "name", "operations"]


def test_a_good_adapter_is_named_by_its_hello_and_answers_calls(tmp_path: Path) -> None:
    result = {"fields": {"a": 1}, "unknown": []}
    command = adapter(tmp_path, answer(0, HELLO), answer(1, result), answer(2, {}))
    target = load_target(f"exec:{command}", call_timeout_s=4.0)
    assert isinstance(target, ExecTarget)
    try:
        assert target.kind == "exec"
        assert target.description == f"sh-adapter (exec:{command})"
        assert target.operations() == frozenset({"ls.decode_request", "ls.stop"})
        assert target.capabilities("ls.decode_request") == {"methods": ["Heartbeat"]}
        assert target.call_timeout_s == 4.0
        assert target.handshake_s > 0
        assert target.call("ls.decode_request", method="Heartbeat", raw_b64="") == result
        assert target.call("ls.stop") == {}
    finally:
        target.close()


def test_requests_are_numbered_json_lines(tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    pid_file = tmp_path / "pid"
    command = adapter(
        tmp_path,
        f"sh:echo $$ > {pid_file}; printf '%s\\n' '{answer(0, HELLO)}'",
        f"sh:printf '%s\\n' \"$request\" >> {log}; printf '%s\\n' '{answer(1, {})}'",
        f"sh:printf '%s\\n' \"$request\" >> {log}; printf '%s\\n' '{answer(2, {'rejected': 'no'})}'",
    )
    target = start(command)
    try:
        assert 0 < target.handshake_s < 30
        target.call("ls.stop")
        target.call("ls.decode_request", method="Método", raw_b64="")
    finally:
        target.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines == [
        '{"id": 1, "op": "ls.stop", "params": {}}',
        '{"id": 2, "op": "ls.decode_request", "params": {"method": "Método", "raw_b64": ""}}',
    ]
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists()  # close() ended the adapter and reaped it


def test_the_call_timeout_is_calibrated_from_three_more_hellos_with_a_floor(tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    steps = [f"sh:printf '%s\\n' \"$request\" >> {log}; printf '%s\\n' '{answer(i, HELLO)}'" for i in range(4)]
    target = start(adapter(tmp_path, *steps), call_timeout_s=None)
    try:
        assert target.call_timeout_s == 30.0
    finally:
        target.close()
    requests = [json.loads(text) for text in log.read_text().splitlines()]
    assert requests == [{"id": i, "op": "hello", "params": {"protocol": 1}} for i in range(4)]


def test_the_calibration_takes_the_median_round_trip(tmp_path: Path) -> None:
    slow = [f"sh:sleep {delay}; printf '%s\\n' '{answer(i + 1, HELLO)}'" for i, delay in enumerate((0, 0.06, 0.4))]
    target = start(adapter(tmp_path, answer(0, HELLO), *slow), call_timeout_s=None)
    try:
        assert 2000 * 0.06 <= target.call_timeout_s < 2000 * 0.4
    finally:
        target.close()


def test_a_repeated_hello_that_answers_differently_is_an_error(tmp_path: Path) -> None:
    other = HELLO | {"name": "other"}
    command = adapter(tmp_path, answer(0, HELLO), answer(1, HELLO), answer(2, other))
    assert failure(command, call_timeout_s=None) == (
        f"sh-adapter (exec:{command}): a repeated hello answered differently: {other} vs {HELLO}"
    )


def test_the_hello_waits_longer_than_the_call_timeout(tmp_path: Path) -> None:
    command = adapter(
        tmp_path, f"sh:sleep 0.4; printf '%s\\n' '{answer(0, HELLO)}'", f"sh:sleep 0.4; echo '{answer(1, {})}'"
    )
    target = start(command, call_timeout_s=0.2)
    try:
        assert target.call_timeout_s == 0.2
        with pytest.raises(TargetError) as info:
            target.call("ls.stop")
        assert str(info.value) == f"sh-adapter (exec:{command}): no answer to ls.stop within 0.2 s (per-call timeout)"
    finally:
        target.close()


@pytest.mark.parametrize(
    ("hello", "message"),
    [
        (HELLO | {"protocol": 9}, "bad hello answer: 1 was expected"),
        (HELLO | {"operations": ["ls.stop", "nope.op"]}, "declares operations the protocol does not have: ['nope.op']"),
    ],
)
def test_a_bad_hello_is_an_error(tmp_path: Path, hello: dict[str, Any], message: str) -> None:
    command = adapter(tmp_path, answer(0, hello))
    assert failure(command) == f"exec:{command}: {message}"


def test_capabilities_in_the_hello_are_checked(tmp_path: Path) -> None:
    hello = HELLO | {"capabilities": {"ls.journal": {}}}
    with pytest.raises(TargetSpecError) as info:
        start(adapter(tmp_path, answer(0, hello)))
    assert str(info.value).endswith("declares capabilities for ls.journal, which it does not implement")
    assert str(info.value).startswith("sh-adapter (exec:sh ")


def test_a_hello_without_capabilities_declares_none(tmp_path: Path) -> None:
    hello = {key: value for key, value in HELLO.items() if key != "capabilities"}
    target = start(adapter(tmp_path, answer(0, hello)))
    try:
        assert target.capabilities("ls.decode_request") == {}
    finally:
        target.close()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            "not json",
            "answered hello with a line that is not JSON (stdout is reserved for the protocol; logs go to "
            "stderr): 'not json\\n'",
        ),
        (
            line({"id": 0}),
            "malformed response to hello: {'id': 0} is not valid under any of the given schemas; the line was: "
            "'{\"id\": 0}\\n'",
        ),
        (answer(5, HELLO), "answered id 5 while 0 (hello) was pending"),
        (line({"id": 0, "error": {"message": "cannot"}}), "hello failed in the adapter: cannot"),
    ],
)
def test_an_answer_outside_the_protocol_is_an_error(tmp_path: Path, reply: str, message: str) -> None:
    command = adapter(tmp_path, reply)
    assert failure(command) == f"exec:{command}: {message}"


def test_a_long_bad_line_is_shown_cut(tmp_path: Path) -> None:
    command = adapter(tmp_path, "x" * 500)
    assert failure(command) == (
        f"exec:{command}: answered hello with a line that is not JSON (stdout is reserved for the protocol; "
        f"logs go to stderr): {'x' * 200!r}"
    )
    long_id = line({"id": 0, "junk": "y" * 400})
    command = adapter(tmp_path, long_id)
    assert failure(command).endswith(f"; the line was: {(long_id + chr(10))[:300]!r}")


def test_blank_lines_before_an_answer_are_skipped(tmp_path: Path) -> None:
    command = adapter(tmp_path, f"sh:printf '\\n  \\n%s\\n' '{answer(0, HELLO)}'")
    start(command).close()


def test_an_adapter_that_exits_is_an_error_with_its_stderr(tmp_path: Path) -> None:
    command = adapter(tmp_path, "sh:echo 'boom: missing config' >&2; exit 3", tail="")
    assert failure(command) == (
        f"exec:{command}: the adapter exited with 3 before answering hello; its stderr ends:\nboom: missing config"
    )


def test_only_the_tail_of_a_long_stderr_is_shown(tmp_path: Path) -> None:
    command = adapter(
        tmp_path, 'sh:i=0; while [ $i -lt 200 ]; do echo "line $i of stderr log" >&2; i=$((i+1)); done; exit 2'
    )
    text = failure(command)
    note = text.split("; its stderr ends:\n", 1)[1]
    full = "".join(f"line {i} of stderr log\n" for i in range(200))
    assert not full[-1501].isspace()  # 1500 bytes back is inside a line: the tail starts at the next one
    assert note == full[-1500:].split("\n", 1)[1].strip()
    assert note.startswith("line 1")
    assert len(note) > 1400


def test_a_stderr_of_one_long_line_is_shown_cut_and_marked(tmp_path: Path) -> None:
    command = adapter(tmp_path, "sh:head -c 4000 /dev/zero | tr '\\0' x >&2; exit 2")
    note = failure(command).split("; its stderr ends:\n", 1)[1]
    assert note == "…" + "x" * 1500


def test_stderr_that_is_not_utf8_is_shown_with_replacement_characters(tmp_path: Path) -> None:
    command = adapter(tmp_path, "sh:printf 'bad \\377 byte\\n' >&2; exit 1")
    assert failure(command).endswith("; its stderr ends:\nbad \ufffd byte")


def test_an_adapter_judges_the_optional_fields_it_declares_it_observes(tmp_path: Path) -> None:
    hello = HELLO | {"operations": ["store.put"], "capabilities": {"store.put": {"observes": ["warnings"]}}}
    result = {"id": "r", "appended": [], "warnings": ["w"]}
    target = start(adapter(tmp_path, answer(0, hello), answer(1, result)))
    try:
        assert target.call("store.put", messages=[], caller=0, answer={"text": "x"}) == result
    finally:
        target.close()


def test_an_adapter_that_died_after_the_hello_fails_the_next_call(tmp_path: Path) -> None:
    command = adapter(tmp_path, answer(0, HELLO), tail="exit 0")
    target = start(command)
    try:
        deadline = time.monotonic() + 5
        while target._proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(TargetError) as info:
            target.call("ls.stop")
        assert str(info.value) in (
            f"sh-adapter (exec:{command}): the adapter exited with 0 while sending ls.stop",
            f"sh-adapter (exec:{command}): the adapter exited with 0 before answering ls.stop",
        )
    finally:
        target.close()


def test_a_result_outside_the_schema_carries_the_stderr_tail(tmp_path: Path) -> None:
    command = adapter(
        tmp_path, answer(0, HELLO), f"sh:echo 'decoder warning' >&2; printf '%s\\n' '{answer(1, {'x': 1})}'"
    )
    target = start(command)
    try:
        with pytest.raises(TargetError) as info:
            target.call("ls.stop")
        text = str(info.value)
        assert text.startswith(f"sh-adapter (exec:{command}): ls.stop returned a result outside its schema")
        assert text.endswith("; its stderr ends:\ndecoder warning")
        assert info.value.__cause__ is None
    finally:
        target.close()


def test_an_operation_the_adapter_lacks_is_refused_before_sending(tmp_path: Path) -> None:
    target = start(adapter(tmp_path, answer(0, HELLO)))
    try:
        with pytest.raises(TargetError) as info:
            target.call("ls.journal", since=0)
        assert str(info.value) == f"{target.description} does not implement ls.journal"
    finally:
        target.close()


@pytest.mark.parametrize("command", ["", "   "])
def test_exec_without_a_command_is_a_usage_error(command: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        ExecTarget.start(command)
    assert str(info.value) == "exec: needs a command, e.g. exec:node adapter.mjs"


def test_an_adapter_that_cannot_start_is_a_usage_error() -> None:
    with pytest.raises(TargetSpecError) as info:
        load_target("exec:/nonexistent/adapter --flag")
    assert str(info.value) == (
        "exec:/nonexistent/adapter --flag: cannot start the adapter: [Errno 2] No such file or directory: "
        "'/nonexistent/adapter'"
    )


# The waits for a misbehaving adapter, each shortened here so that its end is reached without waiting out
# the real value; past it the kit reports or kills, it never hangs.


def test_a_hello_that_never_comes_times_out_after_the_handshake_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_exec, "HANDSHAKE_TIMEOUT_S", 0.2)
    monkeypatch.setattr(_exec, "CLOSE_GRACE_S", 0.2)
    command = adapter(tmp_path, tail="exec sleep 30")
    assert failure(command, call_timeout_s=None) == (
        f"exec:{command}: no answer to hello within 0.2 s (per-call timeout)"
    )


def test_an_adapter_that_closes_stdout_and_lives_on_is_reported_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_exec, "EXIT_WAIT_S", 0.2)
    monkeypatch.setattr(_exec, "CLOSE_GRACE_S", 0.2)
    command = adapter(tmp_path, answer(0, HELLO), tail="exec >&-; exec sleep 30")
    target = start(command)
    try:
        with pytest.raises(TargetError) as info:
            target.call("ls.stop")
        assert str(info.value) == f"sh-adapter (exec:{command}): the adapter closed its stdout before answering ls.stop"
    finally:
        target.close()
    assert target._proc.returncode == -signal.SIGKILL


def test_close_kills_an_adapter_that_ignores_end_of_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_exec, "CLOSE_GRACE_S", 0.2)
    target = start(adapter(tmp_path, answer(0, HELLO), tail="exec sleep 30"))
    target.close()
    assert target._proc.returncode == -signal.SIGKILL


def test_close_lets_an_adapter_that_exits_on_end_of_input_finish(tmp_path: Path) -> None:
    target = start(adapter(tmp_path, answer(0, HELLO), tail="cat >/dev/null; exit 7"))
    target.close()
    assert target._proc.returncode == 7


def test_the_protocol_is_utf8_json_whatever_the_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started under the C locale (ASCII), the target still writes and reads UTF-8 lines."""
    monkeypatch.setattr(_exec, "HANDSHAKE_TIMEOUT_S", 5.0)  # a target that cannot read the hello fails fast
    log = tmp_path / "requests.log"
    hello = HELLO | {"name": "adaptér ✓"}
    result = {"fields": {"text": "héllo ✓"}, "unknown": []}
    steps = [
        f"sh:printf '%s\\n' \"$request\" >> {log}; printf '%s\\n' '{json.dumps(m, ensure_ascii=False)}'"
        for m in ({"id": 0, "result": hello}, {"id": 1, "result": result})
    ]
    command = adapter(tmp_path, *steps)
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        target = start(command)
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)
    try:
        assert target.description == f"adaptér ✓ (exec:{command})"
        assert target.call("ls.decode_request", method="Hé", raw_b64="AA==") == result
    finally:
        target.close()
    sent = [json.loads(text) for text in log.read_text(encoding="utf-8").splitlines()]
    assert sent[1] == {"id": 1, "op": "ls.decode_request", "params": {"method": "Hé", "raw_b64": "AA=="}}


@pytest.mark.parametrize("tail", ["cat >/dev/null", "exit 0"], ids=["running", "exited-before-close"])
def test_close_leaves_no_pipe_for_the_garbage_collector_to_warn_of(tmp_path: Path, tail: str) -> None:
    target = start(adapter(tmp_path, answer(0, HELLO), tail=tail))
    if tail == "exit 0":
        target._proc.wait(timeout=10)  # gone before close(): its stdin was once left open
    gc.collect()  # what earlier tests left to the collector warns now, not below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        target.close()
        del target
        gc.collect()
    pipes = [str(w.message) for w in caught if re.search(r"TextIOWrapper name=\d", str(w.message))]
    assert pipes == []


def test_a_stop_signal_during_the_handshake_ends_the_adapter(tmp_path: Path) -> None:
    pid_file = tmp_path / "adapter.pid"
    command = f"sh -c {shlex.quote(f'echo $$ > {pid_file}; exec sleep 60')}"

    def interrupt_once_it_runs() -> None:
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    stopper = threading.Thread(target=interrupt_once_it_runs, daemon=True)
    with stop_signals_interrupt():
        stopper.start()
        try:
            with pytest.raises(Interrupted):
                start(command, call_timeout_s=30)
        finally:
            stopper.join()
    pid = int(pid_file.read_text())
    assert not alive(pid), "the adapter outlived the interrupted handshake"

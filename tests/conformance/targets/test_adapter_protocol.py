"""The exec: target: clear errors for adapters that crash, hang, or answer outside the protocol."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import pytest

from conformance.errors import TargetError, TargetHung
from conformance.targets import _exec, load_target

PRELUDE = """import json, sys, time
def reply(obj):
    print(json.dumps(obj), flush=True)
def hello():
    request = json.loads(sys.stdin.readline())
    reply({"id": request["id"], "result": {"protocol": 1, "name": "t", "operations": ["ls.decode_request"]}})
"""


def _adapter(tmp_path: Path, body: str) -> str:
    script = tmp_path / "adapter.py"
    script.write_text(PRELUDE + body, encoding="utf-8")
    return f"exec:{sys.executable} {script}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sys.exit(3)\n", "exited with 3"),
        ("print('not json', flush=True)\nsys.stdin.read()\n", "not JSON"),
        ("sys.stdin.readline()\nreply({'id': 0, 'result': {'protocol': 9}})\nsys.stdin.read()\n", "bad hello answer"),
        (
            "sys.stdin.readline()\nreply({'id': 0, 'result': {'protocol': 1, 'name': 'x', 'operations': ['nope']}})\n"
            "sys.stdin.read()\n",
            "operations the protocol does not have",
        ),
        ("sys.stdin.readline()\ntime.sleep(30)\n", "no answer to hello within"),
        ("sys.stderr.write('boom: missing config\\n')\nsys.exit(1)\n", "boom: missing config"),
    ],
)
def test_a_broken_handshake_is_a_clear_target_error(
    tmp_path: Path, body: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_exec, "HANDSHAKE_TIMEOUT_S", 2.0)
    with pytest.raises(TargetError, match=re.escape(message)):
        load_target(_adapter(tmp_path, body), call_timeout_s=1)


def test_the_hello_waits_for_start_up_longer_than_the_call_timeout(tmp_path: Path) -> None:
    slow_start = "time.sleep(1.5)\nhello()\nsys.stdin.read()\n"
    target = load_target(_adapter(tmp_path, slow_start), call_timeout_s=0.5)
    try:
        assert isinstance(target, _exec.ExecTarget)
        assert target.call_timeout_s == 0.5
    finally:
        target.close()


@pytest.mark.parametrize(
    ("after_hello", "message"),
    [
        ("sys.stdin.readline()\nsys.exit(5)\n", "exited with 5 before answering ls.decode_request"),
        ("sys.stdin.readline()\nreply({'id': 99, 'result': {}})\nsys.stdin.read()\n", "answered id 99"),
        (
            "sys.stdin.readline()\nreply({'id': 1, 'error': {'message': 'no decoder'}})\nsys.stdin.read()\n",
            "failed in the adapter: no decoder",
        ),
        ("sys.stdin.readline()\nreply({'id': 1, 'result': {'fields': 3}})\nsys.stdin.read()\n", "outside its schema"),
    ],
)
def test_a_broken_call_is_a_clear_target_error(tmp_path: Path, after_hello: str, message: str) -> None:
    target = load_target(_adapter(tmp_path, "hello()\n" + after_hello), call_timeout_s=5)
    try:
        with pytest.raises(TargetError, match=re.escape(message)):
            target.call("ls.decode_request", method="GetCascadeTrajectory", raw_b64="")
    finally:
        target.close()


def test_an_operation_the_adapter_lacks_is_refused_before_sending(tmp_path: Path) -> None:
    target = load_target(_adapter(tmp_path, "hello()\nsys.stdin.read()\n"), call_timeout_s=5)
    try:
        with pytest.raises(TargetError, match=r"does not implement ls\.serve"):
            target.call("ls.serve", scenario={}, manual_clock=False)
    finally:
        target.close()


def test_the_call_timeout_is_calibrated_with_a_floor(tmp_path: Path) -> None:
    from conformance.targets import ExecTarget
    from conformance.targets._exec import CALL_TIMEOUT_FLOOR_S

    target = load_target(f"exec:{sys.executable} -m conformance.adapter")
    try:
        assert isinstance(target, ExecTarget)
        assert target.call_timeout_s >= CALL_TIMEOUT_FLOOR_S
    finally:
        target.close()
    explicit = load_target(f"exec:{sys.executable} -m conformance.adapter", call_timeout_s=7.5)
    try:
        assert isinstance(explicit, ExecTarget)
        assert explicit.call_timeout_s == 7.5
    finally:
        explicit.close()


@pytest.mark.parametrize(("body", "hangs"), [("", False), ("sys.stdin.readline()\n", True)])
def test_close_grants_a_live_adapter_its_grace_and_kills_one_that_hung_at_once(
    tmp_path: Path, body: str, hangs: bool
) -> None:
    # Either adapter exits by itself a second after its input ends, well inside a live adapter's grace;
    # one that left a call unanswered is not waited for (every run against it would wait as long).
    exits_late = "hello()\n" + body + "sys.stdin.read()\ntime.sleep(1)\n"
    target = load_target(_adapter(tmp_path, exits_late), call_timeout_s=0.5)
    assert isinstance(target, _exec.ExecTarget)
    if hangs:
        with pytest.raises(TargetHung, match=r"no answer to ls.decode_request within 0.5 s"):
            target.call("ls.decode_request", method="AddTrackedWorkspace", raw_b64="")
    target.close()
    assert target._proc.returncode == (-signal.SIGKILL if hangs else 0)

"""The ``fakels`` command line: serve, demo, and clear errors on bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fakels.demo import play_turn
from fakels.journal import read_jsonl
from tests.support.procs import wait_for_grpc

FAKELS = [sys.executable, "-m", "fakels.cli"]


def test_demo_plays_a_turn_and_exits_zero() -> None:
    done = subprocess.run([*FAKELS, "demo"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: the turn completed with the predicted answer" in done.stdout
    assert "SendUserCascadeMessage" in done.stdout


def test_serve_plays_a_scripted_turn_and_journals_it(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("turns:\n  - chunks: [{text: 'scripted '}, {text: 'answer'}]\n", encoding="utf-8")
    journal = tmp_path / "journal.jsonl"
    proc = subprocess.Popen(
        [
            *FAKELS,
            "serve",
            "--port",
            "0",
            "--csrf-token",
            "t0k",
            "--scenario",
            str(scenario),
            "--journal",
            str(journal),
            "--cascade-id-prefix",
            "cli1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert banner.startswith("fakels: grpc=127.0.0.1:"), banner
        address = banner.split("grpc=", 1)[1].split()[0]
        wait_for_grpc(address)
        result = play_turn(address, "t0k", "hello")
        assert result.text == "scripted answer"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "fakels: stopped" in out
    methods = [entry["method"] for entry in read_jsonl(journal)]
    assert methods[:6] == [
        "InitializeCascadePanelState",
        "AddTrackedWorkspace",
        "UpdateWorkspaceTrust",
        "Heartbeat",
        "StartCascade",
        "SendUserCascadeMessage",
    ]
    assert read_jsonl(journal)[4]["response"] == {"cascade_id": "fakels-cascade-cli1-0001"}
    send = read_jsonl(journal)[5]
    assert send["request"]["items"] == [{"text": "hello"}]
    assert json.loads(json.dumps(send))["status"] == "OK"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["serve", "--port", "70000"], "port out of range"),
        (["serve", "--port", "abc"], "not a port number"),
        (["serve", "--max-request-bytes", "0"], "must be positive"),
        (["serve", "--cascade-id-prefix", "a b"], "1-32 letters, digits"),
        (["serve", "--scenario", "/nonexistent/s.json"], "cannot read scenario file"),
        (["stand-in"], "--out"),
        ([], "required"),
    ],
)
def test_bad_arguments_are_one_clear_line_not_a_traceback(args: list[str], expected: str) -> None:
    done = subprocess.run([*FAKELS, *args], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_invalid_scenario_file_reports_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"turns": [{"chunks": [{"txt": "typo"}]}]}', encoding="utf-8")
    done = subprocess.run(
        [*FAKELS, "serve", "--scenario", str(bad)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert "at turns/0/chunks/0" in done.stderr
    assert "'txt' was unexpected" in done.stderr
    assert "Traceback" not in done.stderr


def test_port_in_use_is_a_clear_error() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*FAKELS, "serve", "--port", str(port)], capture_output=True, text=True, timeout=30, check=False
        )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_with_an_h2_port_plays_a_turn_there_too() -> None:
    args = [*FAKELS, "serve", "--port", "0", "--h2-port", "0", "--csrf-token", "t0k"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert " h2=127.0.0.1:" in banner, banner
        address = banner.split("h2=", 1)[1].split()[0]
        wait_for_grpc(address)
        assert play_turn(address, "t0k", "hello").text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err

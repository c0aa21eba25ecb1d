"""The stand-in binary, spawned the way a gateway spawns the LS: scrubbed environment, the real
LS command line, readiness by h2c handshake, SIGTERM to stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conformance.targets._launch import free_port
from fakels.demo import play_turn
from fakels.journal import read_jsonl
from fakels.scenario import Chunk, Scenario, Turn, scenario_to_document
from fakels.standin import StandinUsageError, parse_ls_command_line, ports_file, read_ports, write_standin
from tests.support.procs import wait_for_grpc

GATEWAY_FLAGS = [
    "--api_server_url=https://server.self-serve.windsurf.com",
    "--register_user_url=https://api.codeium.com/register_user/",
    "--codeium_dir=/tmp/ls-data",
    "--database_dir=/tmp/ls-data/db",
    "--detect_proxy=false",
]


def _scrubbed_env(tmp_path: Path) -> dict[str, str]:
    # The gateway's allowlist (wire.md section 1.1): nothing of ours leaks through.
    return {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def test_stand_in_serves_and_journals_a_turn_like_the_ls(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    scenario = Scenario(turns=(Turn(chunks=(Chunk(thinking="plan"), Chunk(text="from the stand-in"))),))
    binary = write_standin(
        tmp_path / "bin" / "language_server_linux_x64",
        scenario_document=scenario_to_document(scenario),
        journal=journal,
        control_port=0,
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            str(binary),
            *GATEWAY_FLAGS[:1],
            f"--server_port={port}",
            "--csrf_token=windsurf-api-csrf-fixed-token",
            *GATEWAY_FLAGS[1:],
        ],
        env=_scrubbed_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        wait_for_grpc(f"127.0.0.1:{port}", proc)
        result = play_turn(f"127.0.0.1:{port}", "windsurf-api-csrf-fixed-token", "hi there")
        assert result.text == "from the stand-in"
        assert result.thinking == "plan"
        report = read_ports(binary)
        assert report["grpc"] == port
        assert report["pid"] == proc.pid
        assert isinstance(report["control"], int)
        assert report["control"] > 0
        assert report["ignored_flags"] == GATEWAY_FLAGS
        assert report["csrf_token"] == "windsurf-api-csrf-fixed-token"
        # The report was written beside and renamed into place: nothing half-written is left behind.
        assert sorted(path.name for path in binary.parent.iterdir()) == [binary.name, ports_file(binary).name]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    entries = read_jsonl(journal)
    assert [e["method"] for e in entries][4:6] == ["StartCascade", "SendUserCascadeMessage"]
    token = "windsurf-api-csrf-fixed-token"
    assert all(e["headers"]["x-codeium-csrf-token"] == f"<redacted: matches, {len(token)} characters>" for e in entries)
    assert entries[5]["request"]["items"] == [{"text": "hi there"}]


def test_stand_in_checks_the_token_it_was_given(tmp_path: Path) -> None:
    binary = write_standin(tmp_path / "ls")
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), f"--server_port={port}", "--csrf_token", "right"],
        env=_scrubbed_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_grpc(f"127.0.0.1:{port}", proc)
        import grpc

        with pytest.raises(grpc.RpcError) as info:
            play_turn(f"127.0.0.1:{port}", "wrong", "hi")
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert read_ports(binary)["csrf_token"] == "right"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_stand_in_without_a_port_fails_clearly(tmp_path: Path) -> None:
    binary = write_standin(tmp_path / "ls")
    done = subprocess.run(
        [str(binary), "--csrf_token=x"],
        env=_scrubbed_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "missing --server_port" in done.stderr
    assert "Traceback" not in done.stderr


def test_written_file_is_executable(tmp_path: Path) -> None:
    binary = write_standin(tmp_path / "ls")
    assert os.access(binary, os.X_OK)


@pytest.mark.parametrize(
    ("argv", "port", "token", "ignored"),
    [
        (["--server_port=42100", "--csrf_token=t"], 42100, "t", ()),
        (["--server_port", "42101", "--x=1"], 42101, None, ("--x=1",)),
        (["--detect_proxy=false", "--server_port=0", "--csrf_token", "a=b"], 0, "a=b", ("--detect_proxy=false",)),
    ],
)
def test_ls_command_line(argv: list[str], port: int, token: str | None, ignored: tuple[str, ...]) -> None:
    args = parse_ls_command_line(argv)
    assert (args.server_port, args.csrf_token, args.ignored) == (port, token, ignored)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "missing --server_port"),
        (["--server_port=x"], "must be a number"),
        (["--server_port=99999"], "out of range"),
        (["--server_port"], "needs a value"),
    ],
)
def test_bad_ls_command_lines(argv: list[str], message: str) -> None:
    with pytest.raises(StandinUsageError, match=message):
        parse_ls_command_line(argv)


def test_read_ports_waits_for_a_report_written_after_the_port_answers(tmp_path: Path) -> None:
    binary = tmp_path / "ls"
    later = threading.Timer(0.3, lambda: ports_file(binary).write_text(json.dumps({"pid": 7}), encoding="utf-8"))
    later.start()
    try:
        assert read_ports(binary, wait_s=10) == {"pid": 7}
    finally:
        later.cancel()


def test_read_ports_gives_up_after_its_wait(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(FileNotFoundError):
        read_ports(tmp_path / "ls", wait_s=0.2)
    assert 0.2 <= time.monotonic() - started < 5

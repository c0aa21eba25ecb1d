"""How ``cascade-conformance`` hands its target options on: every HTTP target option reaches the
target (or is refused, named, for a target that is not http://), and a run against a launched
gateway prints replay commands that reach the same gateway the same way and keeps its output.

The gateway is tests/support/echo_gateway.py (a standard-library HTTP server the kit launches); the
properties are toys (cli_support.py)."""

from __future__ import annotations

import json
import locale
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.program import kit_program
from tests.conformance.cli.cli_support import NOTHING, PASSES, REFERENCE, TELLS_TARGET, only_these, toy
from tests.conformance.targets.targets_support import echo_server
from tests.support import echo_gateway

ECHO = Path(echo_gateway.__file__).resolve()

EVERY_HTTP_OPTION = [
    "--launch", "gateway --port {port}",
    "--launch-cwd", "somewhere",
    "--launch-env", "A=1",
    "--ls-wiring", "none",
    "--api-key", "k",
    "--model", "m",
    "--ledger-path", "/l",
    "--ready-timeout", "1",
    "--native-bridge",
    "--store-limits", "max_messages=1",
]  # fmt: skip


@pytest.mark.parametrize("command", ["run", "replay"])
@pytest.mark.parametrize("target", [NOTHING, REFERENCE])
def test_every_http_option_given_for_another_target_is_named_in_one_usage_line(
    command: str, target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = tmp_path / "case.json"
    case.write_text(
        '{"format": "cascade-conformance-case", "version": 1, "invariant": "WIRE-1", "case": {}}', encoding="utf-8"
    )
    before = [case] if command == "replay" else ["--report", str(tmp_path)]
    assert main([command, *map(str, before), "--target", target, *EVERY_HTTP_OPTION]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "cascade-conformance: --launch, --launch-cwd, --launch-env, --ls-wiring, --ready-timeout, --api-key, --model, "
        "--ledger-path, --native-bridge, --store-limits apply only to an http:// target (--target http://HOST:PORT)\n"
    )
    assert captured.out == ""


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--call-timeout", "-1"], "the request timeout must be positive, got -1.0"),
        (
            ["--launch", "gateway --port {port}", "--ready-timeout", "-2"],
            "--ready-timeout must be a positive number of seconds, got -2.0",
        ),
    ],
)
def test_the_timeouts_reach_the_http_target(
    options: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--target", "http://127.0.0.1:1", *options, "--only", "WIRE-1", "--report", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"cascade-conformance: {message}\n"


def test_a_run_on_a_launched_gateway_replays_through_the_same_options_and_keeps_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", TELLS_TARGET))
    launch = shlex.join([sys.executable, ECHO.name, "--port", "{port}"])  # found only from --launch-cwd
    options = [
        "--launch", launch,
        "--launch-cwd", str(ECHO.parent),
        "--launch-env", "ECHO_A=1",
        "--launch-env", "ECHO_B=two words",
        "--ls-wiring", "none",
        "--api-key", "k1",
        "--api-key", "k2",
        "--model", "m-test",
        "--ledger-path", "/v1/ledger",
        "--ready-timeout", "20",
        "--native-bridge",
        "--store-limits", "max_messages=3,max_entry_bytes=1k",
    ]  # fmt: skip
    report = tmp_path / "deep" / "r"  # made when the gateway's output is kept, the first thing written there
    argv = ["run", "--target", "http://127.0.0.1:0", *options, "--only", "WIRE-1", "--report", str(report)]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2] == f"reports: {report}/report.md {report}/junit.xml {report}/results.json {report}/gateway-output.log"
    assert "echo-gateway: serving on" in (report / "gateway-output.log").read_text(encoding="utf-8")
    facts = json.loads(out[4].removeprefix("WIRE-1 fail: "))
    assert facts == {
        "defaults": {
            "api_keys": ["k1", "k2"],
            "model": "m-test",
            "native_bridge": True,
            "cache_writes": None,
            "wait_limit_s": None,
            "heartbeat_s": None,
            "other_model": None,
            "resends_history": False,
        },
        "operations": ["gateway.chat", "gateway.ledger", "gateway.respond", "gateway.retrieve"],
        "store.open": None,
    }
    flags = (
        f"--launch {shlex.quote(launch)} --launch-cwd {ECHO.parent} --ls-wiring none --ready-timeout 20.0 "
        "--model m-test --ledger-path /v1/ledger --store-limits max_messages=3,max_entry_bytes=1k "
        "--native-bridge --launch-env ECHO_A=1 --launch-env 'ECHO_B=two words' --api-key k1 --api-key k2"
    )
    replay = f"  replay: {kit_program()} replay {report}/cases/wire-1.json --target http://127.0.0.1:0 {flags}"
    assert out[5:] == [replay]
    markdown = (report / "report.md").read_text(encoding="utf-8")
    assert replay.strip().removeprefix("replay: ") in markdown
    # Who the kit was: the signal it sent, never the signal's values (they differ every run).
    assert "\n- Callers: 2 API keys, per-user signal in user; reads scoped by none (--read-scope)\n" in markdown


def test_a_launched_gateway_wired_to_the_fake_has_the_store_limits_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", TELLS_TARGET))
    launch = shlex.join([sys.executable, str(ECHO), "--port", "{port}", "--ls-address", "{ls_address}"])
    argv = ["run", "--target", "http://127.0.0.1:0", "--launch", launch, "--only", "WIRE-1", "--report", str(tmp_path)]
    assert main([*argv, "--store-limits", "max_messages=3,max_entry_bytes=1k"]) == 1
    out = capsys.readouterr().out.splitlines()
    facts = json.loads(out[4].removeprefix("WIRE-1 fail: "))
    assert facts["store.open"] == {
        "fixed_limits": {"max_messages": 3, "max_entry_bytes": 1024},
        "shapes": ["responses"],
    }
    # Two callers under the one key: the key with two per-user signals (--caller-scope user, the default).
    assert facts["defaults"] == {
        "api_keys": ["conformance-key", "conformance-key"],
        "model": "claude-sonnet-4-6",
        "native_bridge": False,
        "cache_writes": None,
        "wait_limit_s": None,
        "heartbeat_s": None,
        "other_model": None,
        "resends_history": False,
    }
    assert out[5] == (
        f"  replay: {kit_program()} replay {tmp_path}/cases/wire-1.json --target http://127.0.0.1:0 "
        f"--launch {shlex.quote(launch)} --store-limits max_messages=3,max_entry_bytes=1k"
    )


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """The C locale for text files opened without an encoding (ASCII), as on a box without a UTF-8 locale."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


@pytest.mark.usefixtures("ascii_locale")
def test_a_launched_gateways_output_is_kept_as_utf_8_whatever_the_locale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES))
    serve = shlex.join([sys.executable, str(ECHO), "--port", "{port}"])
    launch = shlex.join(["sh", "-c", f"echo 'gateway — prêt'; exec {serve}"])
    argv = ["run", "--target", "http://127.0.0.1:0", "--launch", launch, "--ls-wiring", "none", "--only", "WIRE-1"]
    assert main([*argv, "--report", str(tmp_path)]) == 0
    assert (tmp_path / "gateway-output.log").read_text(encoding="utf-8").startswith("gateway — prêt\n")
    capsys.readouterr()


def _asks_to_die(target: Any, case: dict[str, Any], evidence: Any) -> None:
    target.call("gateway.chat", request={"model": "die", "messages": []}, api_key="k")


def test_a_launched_gateway_that_ends_during_the_run_stops_it_with_exit_2_and_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", PASSES), toy("WIRE-2", _asks_to_die), toy("WIRE-3", PASSES))
    launch = shlex.join([sys.executable, str(ECHO), "--port", "{port}"])
    argv = ["run", "--target", "http://127.0.0.1:0", "--launch", launch, "--ls-wiring", "none"]
    assert main([*argv, "--report", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert [line.split()[:2] for line in captured.out.splitlines() if line.startswith("WIRE-")] == [["WIRE-1", "pass"]]
    assert captured.err.splitlines()[-1] == (
        f"stopped during WIRE-2: the gateway ({launch}) exited with code 5 during the run; its last words: "
        "'echo-gateway: asked to die, exiting with code 5' (all of it: gateway-output.log); 1 of 3 finished, none "
        "judged after it ended"
    )
    assert not (tmp_path / "cases").exists()  # no case file: nothing was judged after it ended
    assert "**Stopped early**: stopped during WIRE-2" in (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "asked to die" in (tmp_path / "gateway-output.log").read_text(encoding="utf-8")


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port an older instance holds: it answers GET /v1/models like a gateway."""
    with echo_server() as (url, _):
        yield int(url.rsplit(":", 1)[1])


def test_a_fixed_port_another_process_holds_is_refused_before_anything_starts(
    held_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launch = shlex.join([sys.executable, str(ECHO), "--port", "{port}"])
    argv = ["run", "--target", f"http://127.0.0.1:{held_port}", "--launch", launch, "--ls-wiring", "none"]
    assert main([*argv, "--only", "WIRE-1", "--report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"cascade-conformance: the target failed to start: port {held_port} on 127.0.0.1 is taken (Address already "
        "in use): another process would answer in the gateway's place; stop it, or give port 0 in the target URL "
        "so the kit picks a free one"
    )


def _asks_after_a_while(target: Any, case: dict[str, Any], evidence: Any) -> None:
    time.sleep(2)  # the launched shell has exited by now; its background server still answers
    target.call("gateway.chat", request={"model": "m", "messages": []}, api_key="k")


def test_what_answers_after_the_launched_process_exited_is_never_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(monkeypatch, toy("WIRE-1", _asks_after_a_while))
    server = shlex.join([sys.executable, str(ECHO), "--port", "{port}"])
    launch = shlex.join(["sh", "-c", f"{server} & sleep 1; echo 'listen EADDRINUSE'; exit 3"])
    argv = ["run", "--target", "http://127.0.0.1:0", "--launch", launch, "--ls-wiring", "none"]
    assert main([*argv, "--report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"stopped during WIRE-1: the gateway ({launch}) exited with code 3 during the run; its last words: "
        "'listen EADDRINUSE' (all of it: gateway-output.log); 0 of 1 finished, none judged after it ended"
    )


@pytest.mark.parametrize("wiring", [None, "none"], ids=["not-launched", "launched-unwired"])
def test_on_a_gateway_whose_ls_the_kit_did_not_wire_img_and_store_say_to_launch_it(
    wiring: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with echo_server() as (url, _):
        target = ["--target", url] if wiring is None else ["--target", "http://127.0.0.1:0"]
        launch = shlex.join([sys.executable, str(ECHO), "--port", "{port}"])
        launched = [] if wiring is None else ["--launch", launch, "--ls-wiring", wiring]
        argv = ["run", *target, *launched, "--only", "IMG-1,IMG-4,STORE-8,OFF-2", "--report", str(tmp_path)]
        assert main(argv) == 1  # nothing judged
    capsys.readouterr()
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    messages = {entry["id"]: entry["message"] for entry in document["invariants"]}
    not_wired = "the gateway's language server is not wired to the kit (--launch with dial or spawn)"
    assert messages["IMG-1"] == f"not checkable on this target: it lacks engine.build_send_request: {not_wired}"
    assert messages["IMG-4"] == messages["IMG-1"]
    assert messages["STORE-8"] == (
        f"not checkable on this target: it lacks store.delete, store.get, store.open, store.put: {not_wired}"
    )
    assert f"examples {not_wired}" in messages["OFF-2"]  # the reason OFF already gave

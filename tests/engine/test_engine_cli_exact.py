"""``cascade-engine serve``'s command line in process: the help pages, the options each argument
becomes, and every refusal as its exact one-line message with exit 2 (exit 1 only once serving fails).

``run_serve`` is the real one: a refused option never reaches it, and a port held on loopback makes it
fail at once (exit 1) before any language server is dialled or spawned.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from engine.cli import _options, _parser, main
from engine.http.app import DEFAULT_HEARTBEAT_S, DEFAULT_MAX_BODY_BYTES, HttpSettings, caller_id_for_key
from engine.http.serve import ServeOptions
from engine.sessions.log import default_log_path
from engine.store import StoreLimits

DIAL = ["serve", "--port", "0", "--ls-address", "127.0.0.1:1"]
HELD = "<held port>"  # replaced by a port held on loopback: a wrongly accepted line fails fast, never serves
DIAL_HELD = ["serve", "--port", HELD, "--ls-address", "127.0.0.1:1"]

SERVE_HELP = """\
usage: cascade-engine serve [-h] --port PORT [--host HOST] (--ls-address HOST:PORT | --ls-binary PATH)
                            [--csrf-token CSRF_TOKEN] [--api-key KEY[=CALLER]] [--native-bridge]
                            [--max-body-bytes MAX_BODY_BYTES] [--heartbeat-s HEARTBEAT_S]
                            [--poll-interval-s POLL_INTERVAL_S] [--max-wait-s MAX_WAIT_S]
                            [--log-level {debug,info,warning,error}] [--store SPEC] [--store-ttl-s SECONDS]
                            [--store-max-age-s SECONDS] [--store-max-entries N] [--store-max-messages N]
                            [--store-max-bytes SIZE] [--store-max-entry-bytes SIZE] [--store-min-tenant-bytes SIZE]
                            [--session-log PATH|off]

Serve /v1/chat/completions, /v1/responses, /v1/models, /v1/ledger, /metrics and /metrics.json in front of a Cascade
language server, dialled at --ls-address or spawned from --ls-binary. Runs until SIGINT or SIGTERM, then stops the
language server it spawned and exits 0.

options:
  -h, --help            show this help message and exit
  --port PORT           HTTP port (0: the OS picks; the bound port is printed)
  --host HOST           address to bind (default 127.0.0.1)
  --ls-address HOST:PORT
                        a running language server to dial
  --ls-binary PATH      a language-server binary to spawn as real gateways do
  --csrf-token CSRF_TOKEN
                        the CSRF token of --ls-address (spawned LSs get a fresh one)
  --api-key KEY[=CALLER]
                        an accepted API key and the caller identity it stands for (repeatable); without any, requests
                        are not authenticated, which is allowed only on a loopback address
  --native-bridge       map tool history to Cascade steps (field 9)
  --max-body-bytes MAX_BODY_BYTES
                        largest request body
  --heartbeat-s HEARTBEAT_S
                        SSE heartbeat interval
  --poll-interval-s POLL_INTERVAL_S
                        the longest wait between two polls of a turn (default 0.5, the reference client's); the first
                        poll comes after 0.01 s (or this, if shorter) and the wait doubles up to it, so quick answers
                        come quickly
  --max-wait-s MAX_WAIT_S
                        how long a turn may run before the gateway stops waiting and reports it cut (default 600)
  --log-level {debug,info,warning,error}
  --session-log PATH|off
                        the SQLite session log behind X-Session-Id (docs/sessions.md): a file, or off (no sessions;
                        the header is ignored). Default: $XDG_STATE_HOME/cascade-engine/sessions.db

response store (/v1/responses, docs/responses-api.md):
  --store SPEC          where stored responses live: memory (default), sqlite:PATH (survives restarts) or off
  --store-ttl-s SECONDS
                        idle time to live (default 3600)
  --store-max-age-s SECONDS
                        absolute age limit (default 86400)
  --store-max-entries N
                        entries (default 2000)
  --store-max-messages N
                        items kept per entry (default 400)
  --store-max-bytes SIZE
                        total size, e.g. 400k, 64m (default 128m)
  --store-max-entry-bytes SIZE
                        size of one entry (default max(64k, max-bytes/4))
  --store-min-tenant-bytes SIZE
                        a tenant's byte floor (default max(256k, max-bytes/64))
"""

TOP_HELP = """\
usage: cascade-engine [-h] {serve} ...

The reference Cascade gateway.

positional arguments:
  {serve}
    serve     serve the OpenAI-compatible HTTP front

options:
  -h, --help  show this help message and exit
"""


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse wraps its help to $COLUMNS; fix it so the pages are stable."""
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port listening on loopback, so the real ``run_serve`` fails at once with exit 1."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``main`` on a refused command line: exit 2, nothing on stdout; the one stderr line."""
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n")
    assert err.count("\n") == 1
    return err.removesuffix("\n")


def rejected_by_argparse(capsys: pytest.CaptureFixture[str], held_port: int, *argv: str) -> str:
    """argparse's own refusal: SystemExit(2) and its usage + error lines; the last line."""
    with pytest.raises(SystemExit) as info:
        main([str(held_port) if arg == HELD else arg for arg in argv])
    assert info.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def options_of(held_port: int, capsys: pytest.CaptureFixture[str], *extra: str) -> ServeOptions:
    """The options the command line becomes (``main``'s own parser and validation); ``main`` then
    hands them to the real ``run_serve``, which fails to bind the held port and names host and port."""
    argv = ["serve", "--port", str(held_port), *extra]
    if "--ls-address" not in extra and "--ls-binary" not in extra:
        argv += ["--ls-address", "127.0.0.1:1"]
    chosen = _options(_parser().parse_args(argv))
    assert main(argv) == 1
    assert (
        capsys.readouterr().err
        == f"cascade-engine: cannot listen on {chosen.host}:{held_port}: Address already in use\n"
    )
    return chosen


# ---------------------------------------------------------------------------------------------- help


def test_the_serve_help_page_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out == SERVE_HELP


def test_the_top_help_page_lists_the_serve_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out == TOP_HELP


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ([], "cascade-engine: error: the following arguments are required: command"),
        (
            ["serve", "--ls-address", "127.0.0.1:1"],
            "cascade-engine serve: error: the following arguments are required: --port",
        ),
        (
            ["serve", "--port", HELD],
            "cascade-engine serve: error: one of the arguments --ls-address --ls-binary is required",
        ),
        (
            ["serve", "--port", HELD, "--ls-address", "127.0.0.1:1", "--ls-binary", "ls"],
            "cascade-engine serve: error: argument --ls-binary: not allowed with argument --ls-address",
        ),
        (
            ["serve", "--port", "x", "--ls-address", "a"],
            "cascade-engine serve: error: argument --port: invalid int value: 'x'",
        ),
        (
            [*DIAL_HELD, "--max-body-bytes", "1.5"],
            "cascade-engine serve: error: argument --max-body-bytes: invalid int value: '1.5'",
        ),
        (
            [*DIAL_HELD, "--heartbeat-s", "x"],
            "cascade-engine serve: error: argument --heartbeat-s: invalid float value: 'x'",
        ),
        (
            [*DIAL_HELD, "--poll-interval-s", "x"],
            "cascade-engine serve: error: argument --poll-interval-s: invalid float value: 'x'",
        ),
        (
            [*DIAL_HELD, "--log-level", "trace"],
            "cascade-engine serve: error: argument --log-level: invalid choice: 'trace' "
            "(choose from 'debug', 'info', 'warning', 'error')",
        ),
        (
            [*DIAL_HELD, "--store-ttl-s", "x"],
            "cascade-engine serve: error: argument --store-ttl-s: invalid float value: 'x'",
        ),
        (
            [*DIAL_HELD, "--store-max-age-s", "x"],
            "cascade-engine serve: error: argument --store-max-age-s: invalid float value: 'x'",
        ),
        (
            [*DIAL_HELD, "--store-max-entries", "1.5"],
            "cascade-engine serve: error: argument --store-max-entries: invalid int value: '1.5'",
        ),
        (
            [*DIAL_HELD, "--store-max-messages", "1.5"],
            "cascade-engine serve: error: argument --store-max-messages: invalid int value: '1.5'",
        ),
        ([*DIAL_HELD, "--native-bridge", "yes"], "cascade-engine: error: unrecognized arguments: yes"),
    ],
)
def test_argparse_refuses_malformed_command_lines(
    held_port: int, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    assert rejected_by_argparse(capsys, held_port, *argv) == error


# ---------------------------------------------------------------------------------------------- options


def test_the_defaults_dial_the_ls_on_loopback_without_authentication(
    held_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert options_of(held_port, capsys) == ServeOptions(
        host="127.0.0.1",
        port=held_port,
        http=HttpSettings(api_keys={}, max_body_bytes=DEFAULT_MAX_BODY_BYTES, heartbeat_s=DEFAULT_HEARTBEAT_S),
        ls_address="127.0.0.1:1",
        csrf_token="",
        ls_binary=None,
        native_mode=False,
        poll_interval_s=0.5,
        log_level="warning",
        store="memory",
        store_limits=StoreLimits(),
        session_log=str(default_log_path()),
    )


def test_every_option_reaches_the_serve_options(held_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = options_of(
        held_port,
        capsys,
        "--host", "127.0.0.1", "--ls-binary", "/opt/ls", "--csrf-token", "tok", "--api-key", "sk-a",
        "--api-key", "sk-b=bob=x", "--native-bridge", "--max-body-bytes", "7", "--heartbeat-s", "2.5",
        "--poll-interval-s", "0.25", "--max-wait-s", "30", "--log-level", "error", "--store", "sqlite:/tmp/s.db",
        "--store-ttl-s", "60",
        "--store-max-age-s", "120", "--store-max-entries", "3", "--store-max-messages", "4",
        "--store-max-bytes", "64k", "--store-max-entry-bytes", "2 KB", "--store-min-tenant-bytes", "1m",
        "--session-log", "off",
    )  # fmt: skip
    assert chosen == ServeOptions(
        host="127.0.0.1",
        port=held_port,
        http=HttpSettings(
            api_keys={"sk-a": caller_id_for_key("sk-a"), "sk-b": "bob=x"}, max_body_bytes=7, heartbeat_s=2.5
        ),
        ls_address=None,
        csrf_token="tok",
        ls_binary="/opt/ls",
        native_mode=True,
        poll_interval_s=0.25,
        max_wait_s=30.0,
        log_level="error",
        store="sqlite:/tmp/s.db",
        store_limits=StoreLimits(
            ttl_s=60.0,
            max_age_s=120.0,
            max_entries=3,
            max_messages=4,
            max_bytes=65536,
            entry_bytes=2048,
            tenant_bytes=1048576,
        ),
        session_log="off",
    )


def test_a_repeated_api_key_keeps_its_last_caller(held_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = options_of(held_port, capsys, "--api-key", "k=first", "--api-key", "k=second", "--api-key", "j")
    assert chosen.http.api_keys == {"k": "second", "j": caller_id_for_key("j")}


@pytest.mark.parametrize("seconds", [0.01, 86400.0])
def test_the_wait_cap_at_its_limits_is_accepted(
    held_port: int, capsys: pytest.CaptureFixture[str], seconds: float
) -> None:
    assert options_of(held_port, capsys, "--max-wait-s", str(seconds)).max_wait_s == seconds


@pytest.mark.parametrize("spec", ["memory", "off", "sqlite:x"])
def test_the_store_specs_that_are_accepted(held_port: int, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    assert options_of(held_port, capsys, "--store", spec).store == spec


@pytest.mark.parametrize("host", ["localhost", "127.0.0.2", "::1"])
def test_a_loopback_host_needs_no_api_key(host: str) -> None:
    assert _options(_parser().parse_args([*DIAL, "--host", host])).http.api_keys == {}


def test_a_non_loopback_host_is_accepted_with_an_api_key() -> None:
    chosen = _options(_parser().parse_args([*DIAL, "--host", "0.0.0.0", "--api-key", "k=c"]))
    assert (chosen.host, chosen.http.api_keys) == ("0.0.0.0", {"k": "c"})


def test_the_log_level_configures_the_root_logger(
    held_port: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.root, "handlers", [])  # basicConfig only configures an unconfigured root
    monkeypatch.setattr(logging.root, "level", logging.root.level)
    assert main(["serve", "--port", str(held_port), "--ls-address", "127.0.0.1:1", "--log-level", "debug"]) == 1
    capsys.readouterr()
    assert logging.root.level == logging.DEBUG
    logging.getLogger("engine.cli_probe").debug("probe %d", 1)
    assert capsys.readouterr().err == "DEBUG engine.cli_probe: probe 1\n"


# ---------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--api-key", "=x"], "--api-key '=x': expected KEY or KEY=CALLER"),
        (["--api-key", "k="], "--api-key 'k=': expected KEY or KEY=CALLER"),
        (["--api-key", ""], "--api-key '': expected KEY or KEY=CALLER"),
        (["--host", "0.0.0.0"], "--host 0.0.0.0 is not a loopback address: give at least one --api-key"),
        (["--host", "LOCALHOST"], "--host LOCALHOST is not a loopback address: give at least one --api-key"),
        (
            ["--host", "gateway.example"],
            "--host gateway.example is not a loopback address: give at least one --api-key",
        ),
        (["--port", "-1"], "--port -1: expected 0..65535"),
        (["--port", "65536"], "--port 65536: expected 0..65535"),
        (["--max-body-bytes", "0"], "--max-body-bytes must be >= 1 and --heartbeat-s > 0"),
        (["--heartbeat-s", "0"], "--max-body-bytes must be >= 1 and --heartbeat-s > 0"),
        (["--heartbeat-s", "nan"], "--max-body-bytes must be >= 1 and --heartbeat-s > 0"),
        (["--poll-interval-s", "0.0009"], "--poll-interval-s 0.0009: expected 0.001..10 seconds"),
        (["--poll-interval-s", "10.5"], "--poll-interval-s 10.5: expected 0.001..10 seconds"),
        (["--poll-interval-s", "nan"], "--poll-interval-s nan: expected 0.001..10 seconds"),
        (["--max-wait-s", "0.0099"], "--max-wait-s 0.0099: expected 0.01..86400 seconds"),
        (["--max-wait-s", "86400.5"], "--max-wait-s 86400.5: expected 0.01..86400 seconds"),
        (["--max-wait-s", "nan"], "--max-wait-s nan: expected 0.01..86400 seconds"),
        (["--store", "sqlite:"], "--store 'sqlite:': expected memory, sqlite:PATH or off"),
        (["--store", "sqlite"], "--store 'sqlite': expected memory, sqlite:PATH or off"),
        (["--store", "disk"], "--store 'disk': expected memory, sqlite:PATH or off"),
        (["--store-ttl-s", "0"], "--store-ttl-s 0.0: expected a positive number of seconds"),
        (["--store-ttl-s", "inf"], "--store-ttl-s inf: expected a positive number of seconds"),
        (["--store-ttl-s", "nan"], "--store-ttl-s nan: expected a positive number of seconds"),
        (["--store-max-age-s", "-1"], "--store-max-age-s -1.0: expected a positive number of seconds"),
        (["--store-max-age-s", "inf"], "--store-max-age-s inf: expected a positive number of seconds"),
        (["--store-max-entries", "0"], "--store-max-entries 0: expected a positive integer"),
        (["--store-max-messages", "0"], "--store-max-messages 0: expected a positive integer"),
        (
            ["--store-max-bytes", "nonsense"],
            "--store-max-bytes 'nonsense': expected a byte size such as 400k, 64m or 1g (units b, k, m, g)",
        ),
        (
            ["--store-max-entry-bytes", "1t"],
            "--store-max-entry-bytes '1t': expected a byte size such as 400k, 64m or 1g (units b, k, m, g)",
        ),
        (["--store-max-bytes", "0k"], "--store-max-bytes '0k': expected a size of at least 1 byte"),
        (["--store-min-tenant-bytes", "0"], "--store-min-tenant-bytes '0': expected a size of at least 1 byte"),
        (["--session-log", " "], "--session-log: expected a file path or off"),
        (["--session-log", ""], "--session-log: expected a file path or off"),
    ],
)
def test_a_nonsense_option_is_one_line_and_exit_2(
    held_port: int, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    # the held port: were the option accepted, run_serve would fail at once instead of serving
    argv = ["serve", "--ls-address", "127.0.0.1:1", *extra]
    if "--port" not in extra:
        argv += ["--port", str(held_port)]
    assert refused(capsys, *argv) == f"cascade-engine serve: {message}"


def test_the_first_refusal_in_option_order_is_reported(held_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Keys, then host, port, body/heartbeat, poll interval, store spec, store seconds, counts, sizes, session log."""
    everything_wrong = [
        "--api-key", "=x", "--host", "0.0.0.0", "--port", "-1", "--max-body-bytes", "0", "--poll-interval-s", "0",
        "--store", "disk", "--store-ttl-s", "0", "--store-max-age-s", "0", "--store-max-entries", "0",
        "--store-max-messages", "0", "--store-max-bytes", "0", "--store-max-entry-bytes", "0",
        "--store-min-tenant-bytes", "0", "--session-log", " ",
    ]  # fmt: skip
    expected = [
        "--api-key '=x': expected KEY or KEY=CALLER",
        "--host 0.0.0.0 is not a loopback address: give at least one --api-key",
        "--port -1: expected 0..65535",
        "--max-body-bytes must be >= 1 and --heartbeat-s > 0",
        "--poll-interval-s 0.0: expected 0.001..10 seconds",
        "--store 'disk': expected memory, sqlite:PATH or off",
        "--store-ttl-s 0.0: expected a positive number of seconds",
        "--store-max-age-s 0.0: expected a positive number of seconds",
        "--store-max-entries 0: expected a positive integer",
        "--store-max-messages 0: expected a positive integer",
        "--store-max-bytes '0': expected a size of at least 1 byte",
        "--store-max-entry-bytes '0': expected a size of at least 1 byte",
        "--store-min-tenant-bytes '0': expected a size of at least 1 byte",
        "--session-log: expected a file path or off",
    ]
    pairs = [everything_wrong[i : i + 2] for i in range(0, len(everything_wrong), 2)]
    for fixed in range(len(pairs)):
        argv = ["serve", "--ls-address", "127.0.0.1:1"] + [arg for pair in pairs[fixed:] for arg in pair]
        if not any(pair[0] == "--port" for pair in pairs[fixed:]):
            argv += ["--port", str(held_port)]
        assert refused(capsys, *argv) == f"cascade-engine serve: {expected[fixed]}"

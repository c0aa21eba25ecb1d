"""``cascade-conformance``'s pages in process: the help of every command (the options and their
defaults are the command line's contract, docs/cli.md "cascade-conformance"), ``list`` (each
invariant's statement, what its property needs and which kinds of target can check it, wrapped at
spaces), and ``operations`` (the adapter protocol, as text and as JSON Schemas)."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.listing import wrap
from tests.conformance.cli.cli_support import PASSES, only_these, toy

TOP_HELP = """\
usage: cascade-conformance [-h] {run,replay,save-case,merge,list,operations} ...

Conformance suites for Cascade gateways.

positional arguments:
  {run,replay,save-case,merge,list,operations}
    run                 run the invariant catalogue against a target
    replay              run one saved case file against a target
    save-case           copy a failing case from a report into a case file of your own
    merge               join the report folders of the shards of one run into its one report
    list                the whole catalogue: IDs, statements, the operations each property needs or 'not yet
                        implemented'
    operations          the adapter protocol's operations

options:
  -h, --help            show this help message and exit
"""

#: The "http:// targets" group, the same in the help of every command that opens a target.
HTTP_TARGET_OPTIONS = """\
http:// targets (docs/adapters.md, 'Black-box HTTP targets'):
  --launch COMMAND      start the gateway with this command (split like a shell would; no shell runs it) and stop it
                        at the end; placeholders: {ls_address} dial: the fake LS's HOST:PORT, {ls_h2_address} dial:
                        the same fake LS's hand-written gRPC port (LS failures at the HTTP level), {csrf_token} dial:
                        the CSRF token the fake LS checks, {ls_binary} spawn: the stand-in LS binary to spawn, {port}
                        the gateway's HTTP port, {python} the kit's own Python interpreter
  --launch-cwd DIR      the launched gateway's working folder (default: this one)
  --launch-env NAME=VALUE
                        an environment variable added to the kit's own for the launched gateway (repeatable;
                        placeholders are filled in VALUE)
  --ls-wiring {dial,spawn,none}
                        dial: the gateway dials the kit's fake LS ({ls_address}); spawn: it spawns the kit's stand-in
                        binary ({ls_binary}); none: no LS checks (default with --launch: dial)
  --ready-timeout S     seconds the launched gateway has to answer (default: 30)
  --api-key KEY         an API key the gateway accepts, sent as Authorization: Bearer KEY (repeatable: each is a
                        caller; default: conformance-key)
  --caller-scope SIGNAL
                        the per-user signal every request body carries, distinct per caller and per run: user,
                        safety_identifier, prompt_cache_key, metadata.conversation_id, metadata.session_id, none
                        (default: user; none: anonymous callers, which many gateways give no cache, store reads or
                        cascade reuse)
  --read-scope header:NAME|query:NAME
                        where GET and DELETE /v1/responses/... carry the caller's signal, as the gateway reads it
                        (repeatable; e.g. header:x-response-user or query:user)
  --model NAME          the model name requests use (default: claude-sonnet-4-6)
  --other-model NAME    another model the gateway serves; SCOPE-3 continues a conversation with it and expects a fresh
                        cascade (default: none, that change is not judged)
  --ledger-path PATH    where the gateway serves the kit's ledger document, e.g. /v1/ledger (default: not served;
                        ACC-1 and ACC-3 are then not checkable)
  --native-bridge       the gateway maps tool history to Cascade steps (field 9): native-mode examples run, the others
                        do not
  --store-limits LIMITS
                        the response store limits the gateway was launched with, max_messages=N,max_entry_bytes=SIZE;
                        STORE examples are drawn for them (default: the reference's,
                        max_messages=400,max_entry_bytes=32m)
  --cache-writes WHERE  where the gateway's usage counts the LS's cache-write tokens: prompt (in prompt_tokens) or
                        apart (not in it); ACC-4 judges prompt_tokens by it (default: undeclared, either passes, ACC-4
                        partially)
  --wait-limit S        seconds after which the gateway stops waiting on a turn the LS still runs, as launched (lower
                        it through the gateway's own settings); TURN-5 scripts a turn that outlasts it (default:
                        undeclared)
  --heartbeat-interval S
                        the longest the gateway leaves a stream silent while the LS is (it sends heartbeats); TURN-5
                        holds it to that (default: undeclared)
  --resends-history     the gateway sends a resumed cascade the whole history again, by design; SCOPE-3 then skips its
                        'only the turns added since' clause
  --rate-limit-wait S   seconds the kit waits, over all retries of one request, when the gateway answers 429 or 503
                        with a wait (Retry-After, retry_after_ms); past it the example is left unjudged (default: 60;
                        0: never wait)
  --max-rps N           the fastest pace the kit sends requests at, in requests per second (0.1 to 1000; default: as
                        fast as the gateway takes them; after a rate limit the kit halves its pace and speeds up again
                        step by step)
"""

RUN_HELP = (
    """\
usage: cascade-conformance run [-h] [--target TARGET] [--call-timeout CALL_TIMEOUT] [--launch COMMAND]
                               [--launch-cwd DIR] [--launch-env NAME=VALUE] [--ls-wiring {dial,spawn,none}]
                               [--ready-timeout S] [--api-key KEY] [--caller-scope SIGNAL]
                               [--read-scope header:NAME|query:NAME] [--model NAME] [--other-model NAME]
                               [--ledger-path PATH] [--native-bridge] [--store-limits LIMITS] [--cache-writes WHERE]
                               [--wait-limit S] [--heartbeat-interval S] [--resends-history] [--rate-limit-wait S]
                               [--max-rps N] [--only ONLY] [--known-failures KNOWN_FAILURES] [--report REPORT]
                               [--cache-dir CACHE_DIR] [--example-db DIR] [--profile {ci,thorough}] [--seed SEED]
                               [--max-examples N] [--no-shrink] [--shrink-budget S] [--jobs N] [--shard I/N]
                               [--log-level {DEBUG,INFO,WARNING,ERROR}]

options:
  -h, --help            show this help message and exit
  --target TARGET       python:PKG.MODULE:FACTORY, exec:COMMAND, http://127.0.0.1:PORT (port 0 with --launch: the kit
                        picks one) or reference (the default)
  --call-timeout CALL_TIMEOUT
                        seconds an adapter may take per call (default: calibrated), or an HTTP request (default: 120)
  --only ONLY           comma-separated invariant IDs or families, in any case, e.g. WIRE or wire-1,WIRE-3 (default:
                        every implemented invariant)
  --known-failures KNOWN_FAILURES
                        JSON/YAML file of invariants expected to fail
  --report REPORT       report folder
  --cache-dir CACHE_DIR
                        where Hypothesis keeps its own storage, never .hypothesis/ in the current folder (default:
                        REPORT/hypothesis)
  --example-db DIR      where failing examples are kept between runs, per target, and tried first (default:
                        REPORT/examples)
  --profile {ci,thorough}
                        ci: derandomized, bounded; thorough: more
  --seed SEED           Hypothesis seed (reproduces a thorough run)
  --max-examples N      at most N examples per invariant: a quick pass, e.g. over a slow gateway (default: the
                        profile's)
  --no-shrink           report each failure with the example that first showed it, unshrunk: the same verdict, much
                        sooner over a slow gateway, but bigger counterexamples, and failures only shrinking tells
                        apart come as one
  --shrink-budget S     seconds shrinking may take per invariant from its first failing example; then each failure is
                        reported with the smallest case found so far (default: 60 for exec: and http:// targets, no
                        limit for python: and the reference)
  --jobs N              judge N invariants at once, each in a worker process of its own: a whole number or auto (two
                        per CPU); the output and the reports are a serial run's (default: auto for python: targets and
                        the reference, 1 for exec: and http:// targets, which may not take concurrent examples)
  --shard I/N           judge only shard I of N: every N-th selected invariant from the I-th, for a CI matrix of N
                        machines; `merge` joins the N report folders into one
  --log-level {DEBUG,INFO,WARNING,ERROR}
                        log level of the reference implementations while they are checked (default ERROR: the engine
                        warns about every image it drops, which the properties provoke on purpose)

"""
    + HTTP_TARGET_OPTIONS
)

REPLAY_HELP = (
    """\
usage: cascade-conformance replay [-h] [--report REPORT] [--target TARGET] [--call-timeout CALL_TIMEOUT]
                                  [--launch COMMAND] [--launch-cwd DIR] [--launch-env NAME=VALUE]
                                  [--ls-wiring {dial,spawn,none}] [--ready-timeout S] [--api-key KEY]
                                  [--caller-scope SIGNAL] [--read-scope header:NAME|query:NAME] [--model NAME]
                                  [--other-model NAME] [--ledger-path PATH] [--native-bridge] [--store-limits LIMITS]
                                  [--cache-writes WHERE] [--wait-limit S] [--heartbeat-interval S] [--resends-history]
                                  [--rate-limit-wait S] [--max-rps N] [--cache-dir CACHE_DIR]
                                  case

positional arguments:
  case

options:
  -h, --help            show this help message and exit
  --report REPORT       report folder (default: reports/replay)
  --target TARGET       python:PKG.MODULE:FACTORY, exec:COMMAND, http://127.0.0.1:PORT (port 0 with --launch: the kit
                        picks one) or reference (the default)
  --call-timeout CALL_TIMEOUT
                        seconds an adapter may take per call (default: calibrated), or an HTTP request (default: 120)
  --cache-dir CACHE_DIR
                        where Hypothesis keeps its own storage, never .hypothesis/ in the current folder (default:
                        reports/conformance/hypothesis)

"""
    + HTTP_TARGET_OPTIONS
)

SAVE_CASE_HELP = """\
usage: cascade-conformance save-case [-h] [--report REPORT] --out OUT invariant

positional arguments:
  invariant        the invariant ID whose case to save

options:
  -h, --help       show this help message and exit
  --report REPORT
  --out OUT
"""

LIST_HELP = """\
usage: cascade-conformance list [-h]

options:
  -h, --help  show this help message and exit
"""

MERGE_HELP = """\
usage: cascade-conformance merge [-h] [--report REPORT] SHARD_REPORT_DIR [SHARD_REPORT_DIR ...]

positional arguments:
  SHARD_REPORT_DIR  the report folder of each shard's run

options:
  -h, --help        show this help message and exit
  --report REPORT   report folder (default: reports/conformance)
"""

OPERATIONS_HELP = """\
usage: cascade-conformance operations [-h] [--json]

options:
  -h, --help  show this help message and exit
  --json      the operations with their JSON Schemas
"""

WIRE_AND_IMG = """\
WIRE: the fake LS matches the real protocol (docs/invariants.md#wire)
  WIRE-1   Every RPC of the cascade flow decodes field for field as real clients encode it.
           needs: ls.decode_request
           checkable on: python, exec, not over http (needs ls.decode_request)
  WIRE-2   Unknown fields survive decoding and are reported in the journal (protocol drift).
           needs: gateway.chat
           checkable on: python, exec, http
  WIRE-3   Malformed frames or protobuf get a clean gRPC error; the server stays up; the journal
           records the rejected request.
           needs: gateway.chat, gateway.ledger
           checkable on: python, exec, http (with --ledger-path)
  WIRE-4   Stateful semantics: steps are cumulative from the requested offset, planner text grows
           append-only, run status goes RUNNING then IDLE, generator metadata honours its offset, an
           expired cascade answers with text the real clients classify as expired.
           not yet implemented
IMG: images of replayed turns (docs/invariants.md#img)
  IMG-1    Images of every replayed turn reach field 6, within the bounds, instead of a placeholder.
           needs: engine.play_turns or gateway.chat, ls.serve
           checkable on: python, exec, not over http (needs ls.serve)
  IMG-2    Ordinals: current-turn images are #1..k, history images follow chronologically; the
           marker `[Image #N attached to this request — from an earlier turn]` names the N-th
           field-6 image.
           needs: engine.play_turns or ls.journal, ls.serve
           checkable on: python, exec, not over http (needs engine.play_turns or ls.journal,
           ls.serve)
  IMG-3    Bounds: at most CASCADE_MAX_HISTORY_IMAGES (4) images and CASCADE_MAX_HISTORY_IMAGE_BYTES
           (1.6 MB) of history images, newest turn first, checked per image; 0 disables, still
           counted.
           not yet implemented
  IMG-4    Never silent: attached and dropped counters by reason (cap, bytes, truncated, no_vision,
           and one for attachments that yield no image) plus one structured log line per request.
           not yet implemented
  IMG-5    Vision gate: with a tool preamble and no native bridge, history images are not attached
           (counted no_vision) and never flip the planner mode.
           not yet implemented
  IMG-6    A cascade rebuilt after a rejected resume carries exactly what a fresh one would, counted
           once.
           not yet implemented
  IMG-7    History images pass the same guards as current ones (SSRF, 5 MB, MIME, decode,
           re-encode), and no image is fetched only to be dropped.
           not yet implemented
  IMG-8    The same conversation always yields byte-identical prompt text and field-6 list.
           not yet implemented
"""


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse wraps its help to $COLUMNS; fix it so the pages are stable."""
    monkeypatch.setenv("COLUMNS", "120")


@pytest.mark.parametrize(
    ("argv", "page"),
    [
        ([], TOP_HELP),
        (["run"], RUN_HELP),
        (["replay"], REPLAY_HELP),
        (["save-case"], SAVE_CASE_HELP),
        (["list"], LIST_HELP),
        (["operations"], OPERATIONS_HELP),
        (["merge"], MERGE_HELP),
    ],
)
def test_every_command_has_its_help_page(argv: list[str], page: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == page


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        ([], "the following arguments are required: command"),
        (["run", "--profile", "fast"], "argument --profile: invalid choice: 'fast' (choose from ci, thorough)"),
        (
            ["run", "--log-level", "TRACE"],
            "argument --log-level: invalid choice: 'TRACE' (choose from DEBUG, INFO, WARNING, ERROR)",
        ),
        (["run", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
        (
            ["run", "--shrink-budget", "-1"],
            "argument --shrink-budget: expected a non-negative finite number of seconds, got '-1'",
        ),
        (
            ["run", "--shrink-budget", "nan"],
            "argument --shrink-budget: expected a non-negative finite number of seconds, got 'nan'",
        ),
        (
            ["run", "--shrink-budget", "inf"],
            "argument --shrink-budget: expected a non-negative finite number of seconds, got 'inf'",
        ),
        (
            ["run", "--shrink-budget", "soon"],
            "argument --shrink-budget: expected seconds, a number such as 60 or 2.5, got 'soon'",
        ),
        (
            ["replay", "c.json", "--ls-wiring", "pipe"],
            "argument --ls-wiring: invalid choice: 'pipe' (choose from dial, spawn, none)",
        ),
        (["save-case", "WIRE-1"], "the following arguments are required: --out"),
    ],
)
def test_a_malformed_command_line_exits_2_with_argparse_usage(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    # Newer Pythons print the choices without quotes: compare without them.
    assert last.replace("'", "").endswith(f"error: {complaint}".replace("'", ""))


def test_list_shows_what_each_property_needs_and_which_targets_can_check_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only_these(
        monkeypatch,
        toy("WIRE-1", PASSES, needs=("ls.decode_request",)),
        toy("WIRE-2", PASSES, needs=("gateway.chat",)),
        toy("WIRE-3", PASSES, needs=("gateway.chat", "gateway.ledger")),
        toy("IMG-1", PASSES, needs=("engine.play_turns|gateway.chat", "ls.serve")),
        toy("IMG-2", PASSES, needs=("engine.play_turns|ls.journal", "ls.serve")),
    )
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines(keepends=True)
    assert "".join(lines[:43]) == WIRE_AND_IMG
    assert [line for line in lines if not line.startswith(" ")] == [
        "WIRE: the fake LS matches the real protocol (docs/invariants.md#wire)\n",
        "IMG: images of replayed turns (docs/invariants.md#img)\n",
        "OFF: offset continuity and tool-history delta (docs/invariants.md#off)\n",
        "SO: structured output (docs/invariants.md#so)\n",
        "ACC: cache-replay accounting (docs/invariants.md#acc)\n",
        "STORE: response store trimming (docs/invariants.md#store)\n",
        "ATT: durable tool-result attachments (docs/invariants.md#att)\n",
        "TURN: turns delivered, ended and failed as the LS ran them (docs/invariants.md#turn)\n",
        "SCOPE: what is shared and with whom (docs/invariants.md#scope)\n",
        "REQ: requests as the client sent them (docs/invariants.md#req)\n",
        "51 invariants: 5 implemented, 46 not yet implemented\n",
    ]
    assert max(len(line.rstrip("\n")) for line in lines) == 100


def test_operations_lists_each_operation_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operations"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == [
        "ls.decode_request", "ls.serve", "ls.journal", "ls.advance_clock", "ls.stop",
        "engine.build_send_request", "engine.parse_generator_metadata", "engine.store_offsets", "engine.play_turns",
        "gateway.start", "gateway.chat", "gateway.respond", "gateway.retrieve", "gateway.ledger", "gateway.stop",
        "store.open", "store.put", "store.get", "store.delete",
        "session.open", "session.commit", "session.build", "session.restore", "session.compact", "session.views",
    ]  # fmt: skip
    assert lines[4] == "ls.stop                Stop the served language server."
    assert lines[6] == (
        "engine.parse_generator_metadata Parse a GetCascadeTrajectoryGeneratorMetadataResponse: null only when it "
        "has no records."
    )


def test_operations_json_gives_each_operations_schemas_and_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operations", "--json"]) == 0
    text = capsys.readouterr().out
    assert text.startswith('{\n  "protocol": 1,\n  "operations": {\n    "ls.decode_request": {\n      "summary": "')
    document = json.loads(text)
    assert list(document) == ["protocol", "operations"]
    assert len(document["operations"]) == 25
    assert document["operations"]["ls.stop"] == {
        "summary": "Stop the served language server.",
        "params": {"type": "object", "additionalProperties": False, "properties": {}, "required": []},
        "result": {"type": "object", "additionalProperties": False, "properties": {}, "required": []},
        "optional": [],
        "capabilities": {"type": "object", "additionalProperties": False, "properties": {}},
    }
    build = document["operations"]["engine.build_send_request"]
    assert build["optional"] == ["attached", "drops"]
    assert build["capabilities"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"observes": {"type": "array", "items": {"enum": ["attached", "drops"]}, "uniqueItems": True}},
    }
    assert build["result"]["required"] == ["request_b64", "attached", "drops"]


def test_a_listed_statement_is_never_cut_inside_a_word_even_one_longer_than_the_line() -> None:
    word = "x" * 120
    assert (
        wrap(f"short {word} end", 100, "  WIRE-1   ", " " * 11) == f"  WIRE-1   short\n{' ' * 11}{word}\n{' ' * 11}end"
    )
    assert wrap("append-only " * 9, 40, "", "") == "append-only append-only append-only\n" * 2 + (
        "append-only append-only append-only"
    )

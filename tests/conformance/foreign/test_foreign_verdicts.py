"""The kit pointed, black box, at a gateway it has never seen: foreigngw (``tests/support/foreigngw``),
written apart from the engine, launched by the kit as a separate process and configured only by its
own environment, as a user points the kit at a third-party gateway (``docs/adapters.md``, "A foreign
gateway, worked through").

It behaves as real gateways do: refuses sampling parameters and empty last user messages, cools down
with 429 and ``retry_after_ms`` after its LS's rate limit, frames every prompt with its own system and
identity lines, makes tool calls only from its own markup, serves ``GET /v1/responses/{id}`` but not
``/input_items``. ``FGW_PERSONALITY=lean`` has no store, answers tools with 501, estimates usage from
text and starts a fresh cascade every request. Each row runs the real command line: the correct
gateway gets no ``fail`` and no ``error``; each defect switch fails exactly the invariants it breaks.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conformance.cli import main

REPO = Path(__file__).resolve().parents[3]
# Its own settings beside the kit's placeholders: none of them is a limit the kit's examples set. It dials the
# fake's hand-written gRPC port, so TURN-3 can fail its LS calls at the HTTP level too.
_ENV = (
    "FGW_PORT={port}",
    "FGW_LS_ADDRESS={ls_h2_address}",
    "FGW_CSRF_TOKEN={csrf_token}",
    "FGW_API_KEYS=fk-1,fk-2",
    "FGW_SKIP_DOTENV=1",
    "CASCADE_POLL_INTERVAL_MS=2",
    "FGW_COOLDOWN_S=0.2",
    "FGW_STORE_MAX_MESSAGES=12",
    "FGW_STORE_MAX_ENTRY_BYTES=65536",
    "CASCADE_MAX_WAIT_MS=1500",
)
_KIT = (
    "--api-key",
    "fk-1",
    "--api-key",
    "fk-2",
    "--store-limits",
    "max_messages=12,max_entry_bytes=64k",
    "--cache-writes",
    "apart",
    "--wait-limit",
    "1.5",
    "--other-model",
    "gpt-5",
)
# A quick pass per row (the docs' table comes from full runs, `benchmarks/bench_blackbox.py`). A switch's run
# needs fewer: the rows it leaves alone pass on few examples as on many, and its own row fails on its first ones,
# but for STORE's (a trim defect shows only on the examples whose sizes reach the limit).
EXAMPLES = 6
SWITCH_EXAMPLES = 2


def switch_examples(family: str) -> int:
    return EXAMPLES if family == "STORE" else SWITCH_EXAMPLES


_VERDICT = re.compile(r"^([A-Z]+-\d+)\s+(pass \(partial|pass|fail|error|not checkable|known failure)")

P, PARTIAL, FAIL, NC = "pass", "partial", "fail", "not checkable"

FULL = {
    "IMG": {
        "IMG-1": P,
        "IMG-2": P,
        "IMG-3": PARTIAL,  # no history-image counters: the bounds are judged on the wire
        "IMG-4": NC,  # about the counters alone
        "IMG-5": PARTIAL,
        "IMG-6": PARTIAL,
        "IMG-7": PARTIAL,
        "IMG-8": PARTIAL,
    },
    "OFF,SO,ACC": {
        "OFF-1": NC,
        "OFF-2": P,
        "OFF-3": NC,
        "OFF-4": P,
        "OFF-5": NC,  # no native bridge
        "SO-1": P,
        "SO-2": PARTIAL,  # no ledger
        "SO-3": P,
        "SO-4": NC,  # tool calls only from its own markup
        "ACC-1": NC,
        "ACC-2": P,
        "ACC-3": NC,
        "ACC-4": P,
    },
    "STORE": {
        "STORE-1": P,  # judged from what it replays: it serves no input_items
        "STORE-2": NC,  # call ids are not in what it replays
        "STORE-3": P,  # plain-text calls the client sent (it appends none for the LS's proposal)
        "STORE-4": PARTIAL,
        "STORE-5": P,
        "STORE-6": PARTIAL,
        "STORE-7": P,
        "STORE-8": P,
    },
    "REQ": {"REQ-1": P, "REQ-2": P},  # every turn in a fresh Send; stop cut, what it cannot serve refused
    # TURN-1: each turn's own text, resumed or not; TURN-3: LS failures are errors (its rate limit a 429), then a
    # cool-down it asks to wait out.
    # TURN-4: one status in the body and a read, a cut turn incomplete; it refuses streamed Responses and makes
    # tool calls only from its own markup: a partial pass.
    # TURN-5: a turn past its wait limit ends cut; it sends no heartbeats (none declared): a partial pass.
    # TURN-2: failed turns neither kept nor resumed; it refuses streamed Responses, whose failed turns would have
    # an id to read back: a partial pass.
    "TURN": {"TURN-1": P, "TURN-2": PARTIAL, "TURN-3": P, "TURN-4": PARTIAL, "TURN-5": PARTIAL},
    # It scopes by key alone, which a gateway may: two end users of one key are one caller to it (SCOPE-1 and
    # SCOPE-4 judge the two keys and say so of the end users).
    "SCOPE": {"SCOPE-1": PARTIAL, "SCOPE-2": P, "SCOPE-3": P, "SCOPE-4": PARTIAL},
}


def run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    only: str,
    *env: str,
    shrink: bool = True,
    gateway: tuple[str, ...] = _ENV,
    kit: tuple[str, ...] = _KIT,
    examples: int = EXAMPLES,
) -> tuple[int, dict[str, str], str]:
    """``cascade-conformance run`` against a launched foreigngw (``gateway``: its settings; ``kit``: the
    kit's own options for it); the exit code, each invariant's verdict word, and what it printed (stdout,
    then stderr if it wrote any)."""
    argv = [] if shrink else ["--no-shrink"]
    argv = ["run", *argv, "--target", "http://127.0.0.1:0", "--launch", f"{sys.executable} -m tests.support.foreigngw"]
    argv += ["--launch-cwd", str(REPO), *kit, "--only", only, "--report", str(tmp_path)]
    argv += ["--max-examples", str(examples)]
    for pair in (*gateway, *env):
        argv += ["--launch-env", pair]
    code = main(argv)
    printed = capsys.readouterr()
    verdicts = {}
    for line in printed.out.splitlines():
        found = _VERDICT.match(line)
        if found:
            verdicts[found.group(1)] = "partial" if found.group(2) == "pass (partial" else found.group(2)
    # A run that ended before its verdicts (a launch that failed) says why on stderr only.
    said = f"{printed.out}\n[stderr]\n{printed.err}" if printed.err else printed.out
    return code, verdicts, said


@pytest.mark.parametrize("families", list(FULL))
def test_the_correct_gateway_passes_all_it_can_be_checked_for(
    families: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run(tmp_path, capsys, families)
    assert verdicts == FULL[families], out
    assert code == 0, out


LEAN = {
    # Tools are refused with 501 (the vision gate is not checkable); no cascade is ever resumed.
    "IMG": FULL["IMG"] | {"IMG-5": NC, "IMG-6": NC},
    # SO-2: it caches nothing, resumes nothing and has no ledger: nothing a violating turn is kept in.
    # ACC-4: it estimates usage from text and never reads the LS's generator metadata.
    "OFF,SO,ACC": FULL["OFF,SO,ACC"] | {"OFF-2": NC, "OFF-4": NC, "SO-2": NC, "ACC-2": NC, "ACC-4": NC},
    "STORE": dict.fromkeys(FULL["STORE"], NC),
    "REQ": {
        "REQ-1": P,
        "REQ-2": P,
    },  # tool traffic is refused (501), the rest judged; it refuses stop: that honours REQ-2 too
    "TURN": FULL["TURN"],
    # No cache, pool or store: nothing to share (SCOPE-1, SCOPE-2, SCOPE-4); SCOPE-3 judges its fresh cascades.
    "SCOPE": {"SCOPE-1": NC, "SCOPE-2": NC, "SCOPE-3": PARTIAL, "SCOPE-4": NC},
}


@pytest.mark.parametrize("families", list(LEAN))
def test_the_lean_personality_is_not_checkable_for_what_it_lacks_and_fails_nothing(
    families: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run(tmp_path, capsys, families, "FGW_PERSONALITY=lean")
    assert verdicts == LEAN[families], out
    if families == "STORE":  # its first entry shows it keeps none; a run that judged nothing is no pass
        assert out.count("the gateway keeps no response store: GET /v1/responses/") == len(verdicts), out
        assert "\nnothing was judged: all 8 invariant(s) were not checkable" in out
        assert code == 1, out
    else:
        assert code == 0, out


@pytest.mark.parametrize(
    ("defect", "family", "failing"),
    [
        ("history-image-placeholder", "IMG", {"IMG-1"}),
        ("no-schema-validation", "SO", {"SO-1", "SO-2"}),
        ("splice-arguments", "STORE", {"STORE-1"}),
        # No notice at all: STORE-7 says the stored conversation still carries one when both limits bind.
        ("silent-count-drop", "STORE", {"STORE-4", "STORE-7"}),
        ("stop-ignored", "REQ", {"REQ-2"}),
        ("usage-twice", "ACC", {"ACC-4"}),
        ("error-as-empty-200", "TURN", {"TURN-3"}),
        ("resume-from-zero", "TURN", {"TURN-1"}),
        ("failed-turn-kept", "TURN", {"TURN-2"}),
        ("last-user-only", "REQ", {"REQ-1"}),
        ("parts-as-objects", "REQ", {"REQ-1"}),
        ("wait-limit-as-stop", "TURN", {"TURN-5"}),
        ("read-says-completed", "TURN", {"TURN-4"}),
        ("cache-key-without-caller", "SCOPE", {"SCOPE-1"}),
        ("image-placeholder-key", "SCOPE", {"SCOPE-2"}),
        ("user-only-fingerprint", "SCOPE", {"SCOPE-3"}),
        ("previous-response-id-ignored", "SCOPE", {"SCOPE-4"}),
    ],
)
def test_each_seed_defect_fails_exactly_its_invariants(
    defect: str, family: str, failing: set[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Unshrunk: the table is about verdicts, and shrinking over HTTP takes most of a failing row's time.
    code, verdicts, out = run(
        tmp_path, capsys, family, f"FGW_DEFECTS={defect}", shrink=False, examples=switch_examples(family)
    )
    assert {inv for inv, verdict in verdicts.items() if verdict == FAIL} == failing, out
    assert "error" not in verdicts.values(), out
    assert code == 1, out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Counterexample (as found, not shrunk):" in report
    assert "Minimal counterexample" not in report


@pytest.mark.parametrize(
    ("declared", "verdict"),
    [(("--cache-writes", "apart"), P), ((), PARTIAL), (("--cache-writes", "prompt"), FAIL)],
)
def test_acc_4_judges_prompt_tokens_by_the_declared_cache_write_policy(
    declared: tuple[str, ...], verdict: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """foreigngw leaves cache writes out of prompt_tokens: declared so it passes; undeclared, either policy is
    accepted and the pass is partial, naming what was not judged; declared the other way it fails."""
    kit = ("--api-key", "fk-1", "--api-key", "fk-2", *declared)
    code, verdicts, out = run(tmp_path, capsys, "ACC-4", shrink=False, kit=kit)
    assert verdicts == {"ACC-4": verdict}, out
    if verdict == PARTIAL:
        assert "where cache writes are counted (undeclared; --cache-writes prompt|apart declares it)" in out, out
    if verdict == FAIL:
        assert "prompt_tokens" in out, out
    assert code == (1 if verdict == FAIL else 0), out


# ---------------------------------------------------------------------- the scoped personality
# A public gateway at its defaults: one API key shared by many end users, the usual store caps (400
# messages, 100 KB), and cache, store reads and cascade reuse only for a caller with a per-user signal
# (reads scoped by X-Response-User). The kit sends `user` (the default --caller-scope) and says where reads
# carry it; with --caller-scope none it is an anonymous caller, who gets none of them.
_SCOPED_ENV = (
    "FGW_PORT={port}",
    "FGW_LS_ADDRESS={ls_address}",
    "FGW_CSRF_TOKEN={csrf_token}",
    "FGW_API_KEYS=fk-1",
    "FGW_SKIP_DOTENV=1",
    "CASCADE_POLL_INTERVAL_MS=2",
    "FGW_COOLDOWN_S=0.2",
    "FGW_PERSONALITY=scoped",
)
_SCOPED_KIT = (
    "--api-key",
    "fk-1",
    "--store-limits",
    "max_messages=400,max_entry_bytes=100k",
    "--cache-writes",
    "apart",
    "--other-model",
    "gpt-5",
)
_READS = ("--read-scope", "header:x-response-user")

SCOPED = {
    "IMG": FULL["IMG"],
    "OFF,SO,ACC": FULL["OFF,SO,ACC"],
    "STORE": FULL["STORE"],
    "REQ": FULL["REQ"],
    # Launched with its default wait limit (600 s), declared to no one; wired to fakels' grpcio port, where no LS
    # failure at the HTTP level can be scripted (TURN-3 partial).
    "TURN": FULL["TURN"] | {"TURN-3": PARTIAL, "TURN-5": NC},
    # It tells end users of one key apart: every clause is judged.
    "SCOPE": dict.fromkeys(FULL["SCOPE"], P),
}


def run_scoped(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    only: str,
    *env: str,
    anonymous: bool = False,
    examples: int = EXAMPLES,
) -> tuple[int, dict[str, str], str]:
    kit = (*_SCOPED_KIT, *(("--caller-scope", "none") if anonymous else _READS))
    return run(tmp_path, capsys, only, *env, shrink=False, gateway=_SCOPED_ENV, kit=kit, examples=examples)


@pytest.mark.parametrize("families", list(SCOPED))
def test_the_scoped_personality_passes_what_it_can_be_checked_for(
    families: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run_scoped(tmp_path, capsys, families)
    assert verdicts == SCOPED[families], out
    assert code == 0, out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "\n- Callers: 1 API key, per-user signal in user; reads scoped by header:x-response-user\n" in report


@pytest.mark.parametrize(
    ("defect", "family", "row", "failing"),
    [
        ("no-schema-validation", "SO", "SO-2", {"SO-1", "SO-2"}),  # a violating turn cached for its scoped caller
        ("splice-arguments", "STORE", "STORE-1", {"STORE-1"}),  # JSON arguments the client sent, spliced
        # A drop at the default 400 cap with no notice (STORE-7: none either when both limits bind).
        ("silent-count-drop", "STORE", "STORE-4", {"STORE-4", "STORE-7"}),
        ("cache-hit-without-usage", "ACC", "ACC-2", {"ACC-2"}),  # a cache hit replayed without its usage
    ],
)
def test_each_scoped_defect_fails_for_a_scoped_caller_and_is_not_checkable_for_an_anonymous_one(
    defect: str, family: str, row: str, failing: set[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run_scoped(
        tmp_path / "scoped", capsys, family, f"FGW_DEFECTS={defect}", examples=switch_examples(family)
    )
    assert {inv for inv, verdict in verdicts.items() if verdict == FAIL} == failing, out
    assert "error" not in verdicts.values(), out
    assert code == 1, out
    code, verdicts, out = run_scoped(
        tmp_path / "anonymous", capsys, row, f"FGW_DEFECTS={defect}", anonymous=True, examples=switch_examples(family)
    )
    assert verdicts == {row: NC}, out
    reason = out.split(f"{row} ", 1)[1].split("\n\n", 1)[0]
    assert "--caller-scope" in reason, out  # the hint
    assert code == 1, out


def test_a_blank_user_taken_as_a_scope_fails_scope_1_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``user: ""`` is a scope of its own (one for every blank spelling): the blank end users of one key share a
    cache that the key without a signal does not have."""
    code, verdicts, out = run_scoped(
        tmp_path, capsys, "SCOPE", "FGW_DEFECTS=blank-user-scope", examples=SWITCH_EXAMPLES
    )
    assert {inv for inv, verdict in verdicts.items() if verdict == FAIL} == {"SCOPE-1"}, out
    assert "error" not in verdicts.values(), out
    assert "a blank user is not the same caller as none" in out, out
    assert code == 1, out


# ---------------------------------------------------------------------- a busy gateway
# One upstream account: after every few turns it cools down, answering a 200 whose only content is an
# error frame with its wait in the message text ("retry in 1 s"), or 429 with retry_after_ms. The kit
# waits those out: the correct rows hold, with no fail and no error. Every 24 turns: the run meets each kind
# of busy answer more than once (2 and 3 times), and waits out a few seconds, not twenty.
_BUSY = ("FGW_BUSY_EVERY=24", "FGW_COOLDOWN_S=0.3")


@pytest.mark.parametrize("families", ["OFF,SO,ACC"])
def test_a_busy_gateway_is_waited_out_and_judged_as_an_idle_one(
    families: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run(tmp_path, capsys, families, *_BUSY)
    assert verdicts == FULL[families], out
    assert code == 0, out
    log = (tmp_path / "gateway-output.log").read_text(encoding="utf-8")
    assert "busy: answered 429" in log, log[-2000:]  # both kinds of busy answer were met and waited out
    assert "busy: answered an in-band error" in log, log[-2000:]
    # The waits are the gateway's time, shown apart from the kit's: per invariant in the progress lines and
    # report.md, in all in the summary.
    assert re.search(r"\ntime: [\d.]+ s, of which [\d.]+ s waiting for the gateway \(\d+ wait\(s\)", out), out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "\n## Waiting for the gateway\n" in report, report


# ---------------------------------------------------------------------- a polling gateway
# It streams what each window of polls found, reasoning included, and alternate turns find the channels
# in opposite orders (tests/support/foreigngw/polling.py): the json_schema run and the plain run of SO-3
# interleave reasoning and content differently, as the real gateway did. No row may notice.
def test_a_polling_gateway_is_judged_as_one_that_streams_as_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run(tmp_path, capsys, "OFF,SO,ACC", "FGW_POLLING=1")
    assert verdicts == FULL["OFF,SO,ACC"], out
    assert code == 0, out


@pytest.mark.parametrize("polling", [False, True])
def test_a_json_schema_stream_gathered_into_one_frame_fails_so3_alone(
    polling: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = ("FGW_DEFECTS=schema-stream-merged", *(("FGW_POLLING=1",) if polling else ()))
    code, verdicts, out = run(tmp_path, capsys, "SO", *env, shrink=False)
    assert {inv for inv, verdict in verdicts.items() if verdict == FAIL} == {"SO-3"}, out
    assert "error" not in verdicts.values(), out
    assert "it buffers beyond what the plain stream shows" in out, out
    assert code == 1, out

"""The options of an http:// target that both fronts declare, ``cascade-conformance`` (``--launch``)
and the pytest plugin (``--cascade-launch``), and the placeholders a launch command may use.

One table, :data:`HTTP_FLAGS`: each flag's name, value and meaning are the same on both fronts; each
front keeps its own help text and the order its help page has always had. No fakels import and
nothing of the suite: the pytest plugin reads this module at start-up in every pytest run, including
trees whose ``fakels`` is another package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

PLACEHOLDERS: dict[str, str] = {
    "ls_address": "dial: the fake LS's HOST:PORT",
    "ls_h2_address": "dial: the same fake LS's hand-written gRPC port (LS failures at the HTTP level)",
    "csrf_token": "dial: the CSRF token the fake LS checks",
    "ls_binary": "spawn: the stand-in LS binary to spawn",
    "port": "the gateway's HTTP port",
    "python": "the kit's own Python interpreter",
}

# The per-user signals --caller-scope can send (conformance.targets._scope sends them).
CALLER_SCOPE_CHOICES = (
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "metadata.conversation_id",
    "metadata.session_id",
    "none",
)

# Where a gateway's usage counts the LS's cache-write tokens (ACC-4): in prompt_tokens, or apart from it.
CACHE_WRITES_CHOICES = ("prompt", "apart")

Front = Literal["cli", "pytest"]
PREFIXES: dict[Front, str] = {"cli": "--", "pytest": "--cascade-"}


@dataclass(frozen=True)
class HttpFlag:
    """One http:// target option: ``--NAME`` on the command line, ``--cascade-NAME`` in pytest."""

    name: str
    keyword: str  # the keyword argument of conformance.targets.http_options it fills
    cli_help: str
    pytest_help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    number: bool = False  # seconds, a float
    repeated: bool = False  # may be given several times: a list, empty when not given
    switch: bool = False  # takes no value

    @property
    def dest(self) -> str:
        """The attribute argparse stores the value in."""
        return self.name.replace("-", "_")

    def option(self, front: Front) -> str:
        return PREFIXES[front] + self.name

    def declaration(self, front: Front) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` (argparse) or ``addoption`` (pytest)."""
        declared: dict[str, Any] = {"help": self.cli_help if front == "cli" else self.pytest_help}
        if self.metavar is not None:
            declared["metavar"] = self.metavar
        if self.choices is not None:
            declared["choices"] = self.choices
        if self.number:
            declared["type"] = float
        if self.repeated:
            declared.update(action="append", default=[])
        if self.switch:
            declared["action"] = "store_true"
            if front == "pytest":  # None: not given, which the plugin tells from a given option
                declared["default"] = None
        return declared


# In the order conformance.targets.http_options names them in its usage errors.
HTTP_FLAGS: tuple[HttpFlag, ...] = (
    HttpFlag(
        "launch",
        "launch",
        metavar="COMMAND",
        cli_help="start the gateway with this command (split like a shell would) and stop it at the end; "
        "placeholders: " + ", ".join(f"{{{name}}} {what}" for name, what in PLACEHOLDERS.items()),
        pytest_help="http:// targets: start the gateway with this command; placeholders: "
        + ", ".join(f"{{{name}}}" for name in PLACEHOLDERS),
    ),
    HttpFlag(
        "launch-cwd",
        "launch_cwd",
        metavar="DIR",
        cli_help="the launched gateway's working folder",
        pytest_help="the launched gateway's working folder",
    ),
    HttpFlag(
        "launch-env",
        "launch_env",
        metavar="NAME=VALUE",
        repeated=True,
        cli_help="an environment variable for the launched gateway (repeatable; placeholders filled)",
        pytest_help="repeatable; placeholders",
    ),
    HttpFlag(
        "ls-wiring",
        "ls_wiring",
        choices=("dial", "spawn", "none"),
        cli_help="dial: the gateway dials the kit's fake LS ({ls_address}); spawn: it spawns the kit's stand-in "
        "binary ({ls_binary}); none: no LS checks (default with --launch: dial)",
        pytest_help="default with a launch: dial",
    ),
    HttpFlag(
        "api-key",
        "api_keys",
        repeated=True,
        cli_help="an API key the gateway accepts (repeatable: each is a caller; default: conformance-key)",
        pytest_help="repeatable (default: conformance-key)",
    ),
    HttpFlag(
        "model",
        "model",
        cli_help="the model name requests use (default: claude-sonnet-4-6)",
        pytest_help="the model name requests use (default: claude-sonnet-4-6)",
    ),
    HttpFlag(
        "ledger-path",
        "ledger_path",
        metavar="PATH",
        cli_help="where the gateway serves the kit's ledger (/v1/ledger)",
        pytest_help="where the gateway serves the ledger (/v1/ledger)",
    ),
    HttpFlag(
        "ready-timeout",
        "ready_timeout_s",
        metavar="S",
        number=True,
        cli_help="seconds the launched gateway has to answer (default: 30)",
        pytest_help="seconds to answer (default: 30)",
    ),
    HttpFlag(
        "native-bridge",
        "native_bridge",
        switch=True,
        cli_help="the gateway maps tool history to Cascade steps (field 9): native-mode examples run, the others "
        "do not",
        pytest_help="the gateway maps tool history to Cascade steps: native-mode examples run, the others do not",
    ),
    HttpFlag(
        "store-limits",
        "store_limits",
        metavar="LIMITS",
        cli_help="the response store limits the gateway was launched with, max_messages=N,max_entry_bytes=SIZE "
        "(default: the reference's, max_messages=400,max_entry_bytes=32m)",
        pytest_help="the gateway's response store limits: max_messages=N,max_entry_bytes=SIZE (default: the "
        "reference's)",
    ),
    HttpFlag(
        "cache-writes",
        "cache_writes",
        metavar="WHERE",
        choices=CACHE_WRITES_CHOICES,
        cli_help="where the gateway's usage counts the LS's cache-write tokens: prompt (in prompt_tokens) or apart "
        "(not in it); ACC-4 judges prompt_tokens by it (default: undeclared, either passes, ACC-4 partially)",
        pytest_help="where usage counts cache-write tokens: prompt or apart (default: undeclared)",
    ),
    HttpFlag(
        "wait-limit",
        "wait_limit_s",
        metavar="S",
        number=True,
        cli_help="seconds after which the gateway stops waiting on a turn the LS still runs, as launched (lower it "
        "through the gateway's own settings); TURN-5 scripts a turn that outlasts it (default: undeclared)",
        pytest_help="seconds the gateway waits on a running turn (default: undeclared)",
    ),
    HttpFlag(
        "heartbeat-interval",
        "heartbeat_s",
        metavar="S",
        number=True,
        cli_help="the longest the gateway leaves a stream silent while the LS is (it sends heartbeats); TURN-5 "
        "holds it to that (default: undeclared)",
        pytest_help="the longest silence in a stream (default: undeclared)",
    ),
    HttpFlag(
        "other-model",
        "other_model",
        metavar="NAME",
        cli_help="another model the gateway serves; SCOPE-3 continues a conversation with it and expects a fresh "
        "cascade (default: none, that change is not judged)",
        pytest_help="another model the gateway serves (SCOPE-3; default: none)",
    ),
    HttpFlag(
        "resends-history",
        "resends_history",
        switch=True,
        cli_help="the gateway sends a resumed cascade the whole history again, by design; SCOPE-3 then skips its "
        "'only the turns added since' clause",
        pytest_help="a resumed cascade gets the whole history again, by design (SCOPE-3)",
    ),
    HttpFlag(
        "rate-limit-wait",
        "rate_limit_wait_s",
        metavar="S",
        number=True,
        cli_help="seconds the kit waits, over all retries of one request, when the gateway answers 429 or 503 with "
        "a wait (Retry-After, retry_after_ms); past it the example is left unjudged (default: 60; 0: never wait)",
        pytest_help="seconds to wait out 429/503 answers per request (default: 60)",
    ),
    HttpFlag(
        "max-rps",
        "max_rps",
        metavar="N",
        number=True,
        cli_help="the fastest pace the kit sends requests at, in requests per second (0.1 to 1000; default: as "
        "fast as the gateway takes them; after a rate limit the kit halves its pace and speeds up again step by "
        "step)",
        pytest_help="the fastest pace in requests per second (default: as fast as the gateway takes them)",
    ),
    HttpFlag(
        "caller-scope",
        "caller_scope",
        metavar="SIGNAL",
        choices=CALLER_SCOPE_CHOICES,
        cli_help="the per-user signal every request body carries, distinct per caller and per run: "
        + ", ".join(CALLER_SCOPE_CHOICES)
        + " (default: user; none: anonymous callers, which many gateways give no cache, store reads or cascade "
        "reuse)",
        pytest_help="the per-user signal request bodies carry: " + ", ".join(CALLER_SCOPE_CHOICES) + " (default: user)",
    ),
    HttpFlag(
        "read-scope",
        "read_scope",
        metavar="header:NAME|query:NAME",
        repeated=True,
        cli_help="where GET and DELETE /v1/responses/... carry the caller's signal, as the gateway reads it "
        "(repeatable; e.g. header:x-response-user or query:user)",
        pytest_help="repeatable: header:NAME or query:NAME",
    ),
)

# The order each front's help page lists them in (the pages are published and tested as they are).
_HELP_ORDER: dict[Front, tuple[str, ...]] = {
    "cli": (
        "launch",
        "launch-cwd",
        "launch-env",
        "ls-wiring",
        "api-key",
        "model",
        "ledger-path",
        "native-bridge",
        "store-limits",
        "cache-writes",
        "wait-limit",
        "heartbeat-interval",
        "other-model",
        "resends-history",
        "ready-timeout",
        "rate-limit-wait",
        "max-rps",
        "caller-scope",
        "read-scope",
    ),
    "pytest": (
        "launch",
        "launch-cwd",
        "launch-env",
        "ls-wiring",
        "api-key",
        "model",
        "ledger-path",
        "native-bridge",
        "ready-timeout",
        "rate-limit-wait",
        "store-limits",
        "cache-writes",
        "wait-limit",
        "heartbeat-interval",
        "other-model",
        "resends-history",
        "max-rps",
        "caller-scope",
        "read-scope",
    ),
}


def declared_flags(front: Front) -> list[HttpFlag]:
    """:data:`HTTP_FLAGS` in the order ``front`` declares them."""
    by_name = {flag.name: flag for flag in HTTP_FLAGS}
    return [by_name[name] for name in _HELP_ORDER[front]]


def http_values(value_of: Callable[[HttpFlag], Any]) -> dict[str, Any]:
    """The keyword arguments of ``http_options`` for every flag, each value read by ``value_of`` (a
    switch's as a bool)."""
    return {flag.keyword: bool(value_of(flag)) if flag.switch else value_of(flag) for flag in HTTP_FLAGS}


def given_words(front: Front, value_of: Callable[[HttpFlag], Any]) -> list[str]:
    """The flags given, as the words of a ``front`` command line that repeats them (the replay commands):
    flags with one value in :data:`HTTP_FLAGS`'s order, then switches, then repeatable flags once per
    value. ``value_of`` reads a flag's value (None, False or empty: not given)."""
    words: list[str] = []
    for flag in sorted(HTTP_FLAGS, key=lambda flag: (flag.repeated, flag.switch)):
        value = value_of(flag)
        if flag.repeated:
            for item in value or ():
                words += [flag.option(front), item]
        elif flag.switch:
            words += [flag.option(front)] if value else []
        elif value is not None:
            words += [flag.option(front), str(value)]
    return words

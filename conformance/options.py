"""The options of an http:// target that both fronts declare, ``cascade-conformance`` (``--launch``)
and the pytest plugin (``--cascade-launch``), and the placeholders a launch command may use.

One table, :data:`HTTP_FLAGS`: each flag's name, value, help text and place in the order are the same on
both fronts and in the docs (:func:`docs_table`). No fakels import and
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
    """One http:// target option: ``--NAME`` on the command line (``run``, ``replay``), ``--cascade-NAME``
    in pytest, one row of the docs' table; the same help text everywhere."""

    name: str
    keyword: str  # the keyword argument of conformance.targets.http_options it fills
    help: str
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
        declared: dict[str, Any] = {"help": self.help}
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

    def usage(self, front: Front) -> str:
        """``--store-limits LIMITS``, ``--ls-wiring dial|spawn|none``, ``--native-bridge``."""
        if self.switch:
            return self.option(front)
        value = self.metavar or ("|".join(self.choices) if self.choices else self.name.upper().replace("-", "_"))
        return f"{self.option(front)} {value}"


# Every option once, in the one order the help pages, the docs and the usage errors give them: how the
# gateway is launched, who the kit is on it, what the gateway declares, how fast the kit may go.
HTTP_FLAGS: tuple[HttpFlag, ...] = (
    HttpFlag(
        "launch",
        "launch",
        metavar="COMMAND",
        help="start the gateway with this command (split like a shell would; no shell runs it) and stop it at the "
        "end; placeholders: " + ", ".join(f"{{{name}}} {what}" for name, what in PLACEHOLDERS.items()),
    ),
    HttpFlag(
        "launch-cwd", "launch_cwd", metavar="DIR", help="the launched gateway's working folder (default: this one)"
    ),
    HttpFlag(
        "launch-env",
        "launch_env",
        metavar="NAME=VALUE",
        repeated=True,
        help="an environment variable added to the kit's own for the launched gateway (repeatable; placeholders "
        "are filled in VALUE)",
    ),
    HttpFlag(
        "ls-wiring",
        "ls_wiring",
        choices=("dial", "spawn", "none"),
        help="dial: the gateway dials the kit's fake LS ({ls_address}); spawn: it spawns the kit's stand-in "
        "binary ({ls_binary}); none: no LS checks (default with --launch: dial)",
    ),
    HttpFlag(
        "ready-timeout",
        "ready_timeout_s",
        metavar="S",
        number=True,
        help="seconds the launched gateway has to answer (default: 30)",
    ),
    HttpFlag(
        "api-key",
        "api_keys",
        metavar="KEY",
        repeated=True,
        help="an API key the gateway accepts, sent as Authorization: Bearer KEY (repeatable: each is a caller; "
        "default: conformance-key)",
    ),
    HttpFlag(
        "caller-scope",
        "caller_scope",
        metavar="SIGNAL",
        choices=CALLER_SCOPE_CHOICES,
        help="the per-user signal every request body carries, distinct per caller and per run: "
        + ", ".join(CALLER_SCOPE_CHOICES)
        + " (default: user; none: anonymous callers, which many gateways give no cache, store reads or cascade "
        "reuse)",
    ),
    HttpFlag(
        "read-scope",
        "read_scope",
        metavar="header:NAME|query:NAME",
        repeated=True,
        help="where GET and DELETE /v1/responses/... carry the caller's signal, as the gateway reads it "
        "(repeatable; e.g. header:x-response-user or query:user)",
    ),
    HttpFlag("model", "model", metavar="NAME", help="the model name requests use (default: claude-sonnet-4-6)"),
    HttpFlag(
        "other-model",
        "other_model",
        metavar="NAME",
        help="another model the gateway serves; SCOPE-3 continues a conversation with it and expects a fresh "
        "cascade (default: none, that change is not judged)",
    ),
    HttpFlag(
        "ledger-path",
        "ledger_path",
        metavar="PATH",
        help="where the gateway serves the kit's ledger document, e.g. /v1/ledger (default: not served; ACC-1 and "
        "ACC-3 are then not checkable)",
    ),
    HttpFlag(
        "native-bridge",
        "native_bridge",
        switch=True,
        help="the gateway maps tool history to Cascade steps (field 9): native-mode examples run, the others do not",
    ),
    HttpFlag(
        "store-limits",
        "store_limits",
        metavar="LIMITS",
        help="the response store limits the gateway was launched with, max_messages=N,max_entry_bytes=SIZE; STORE "
        "examples are drawn for them (default: the reference's, max_messages=400,max_entry_bytes=32m)",
    ),
    HttpFlag(
        "cache-writes",
        "cache_writes",
        metavar="WHERE",
        choices=CACHE_WRITES_CHOICES,
        help="where the gateway's usage counts the LS's cache-write tokens: prompt (in prompt_tokens) or apart "
        "(not in it); ACC-4 judges prompt_tokens by it (default: undeclared, either passes, ACC-4 partially)",
    ),
    HttpFlag(
        "wait-limit",
        "wait_limit_s",
        metavar="S",
        number=True,
        help="seconds after which the gateway stops waiting on a turn the LS still runs, as launched (lower it "
        "through the gateway's own settings); TURN-5 scripts a turn that outlasts it (default: undeclared)",
    ),
    HttpFlag(
        "heartbeat-interval",
        "heartbeat_s",
        metavar="S",
        number=True,
        help="the longest the gateway leaves a stream silent while the LS is (it sends heartbeats); TURN-5 "
        "holds it to that (default: undeclared)",
    ),
    HttpFlag(
        "resends-history",
        "resends_history",
        switch=True,
        help="the gateway sends a resumed cascade the whole history again, by design; SCOPE-3 then skips its "
        "'only the turns added since' clause",
    ),
    HttpFlag(
        "rate-limit-wait",
        "rate_limit_wait_s",
        metavar="S",
        number=True,
        help="seconds the kit waits, over all retries of one request, when the gateway answers 429 or 503 with "
        "a wait (Retry-After, retry_after_ms); past it the example is left unjudged (default: 60; 0: never wait)",
    ),
    HttpFlag(
        "max-rps",
        "max_rps",
        metavar="N",
        number=True,
        help="the fastest pace the kit sends requests at, in requests per second (0.1 to 1000; default: as "
        "fast as the gateway takes them; after a rate limit the kit halves its pace and speeds up again step by "
        "step)",
    ),
)


def http_values(value_of: Callable[[HttpFlag], Any]) -> dict[str, Any]:
    """The keyword arguments of ``http_options`` for every flag, each value read by ``value_of`` (a
    switch's as a bool)."""
    return {flag.keyword: bool(value_of(flag)) if flag.switch else value_of(flag) for flag in HTTP_FLAGS}


def given_flags(values: dict[str, Any]) -> list[HttpFlag]:
    """The flags given among ``values`` (``http_options``'s keyword arguments), in the one order."""
    return [flag for flag in HTTP_FLAGS if _given(values.get(flag.keyword))]


def _given(value: Any) -> bool:
    """None, False and an empty list are options not given; 0 and 0.0 are given (``in`` would take 0.0 for
    False)."""
    return value is not None and value is not False and not (isinstance(value, list | tuple) and not value)


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


def docs_table() -> str:
    """The docs' table of the options (docs/adapters.md, "Black-box HTTP targets"), one row per flag."""
    rows = [f"| `{_cell(flag.usage('cli'))}` | {_cell(flag.help)} |" for flag in HTTP_FLAGS]
    return "\n".join(["| option | meaning |", "|---|---|", *rows])


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell: a ``|`` escaped, even inside backticks (it would end the cell)."""
    return text.replace("|", "\\|")

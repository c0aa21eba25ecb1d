"""How the kit reaches an ``http://`` target: :class:`HttpOptions`, and :func:`http_options`, which
checks the command line's (or the pytest plugin's) options and builds them. Usage errors are
:class:`~conformance.errors.TargetSpecError` with one line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import TargetSpecError
from conformance.options import CACHE_WRITES_CHOICES, given_flags
from conformance.targets._http_store import parse_store_limits
from conformance.targets._launch import WIRINGS, LaunchSpec, Wiring
from conformance.targets._pace import MAX_RPS, MIN_RPS
from conformance.targets._scope import CALLER_SCOPES, DEFAULT_CALLER_SCOPE, CallerScope, parse_read_scope

DEFAULT_API_KEY = "conformance-key"
DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_REQUEST_TIMEOUT_S = 120.0
DEFAULT_RATE_LIMIT_WAIT_S = 60.0
MAX_RATE_LIMIT_WAIT_S = 3600.0
# The longest wait limit or heartbeat interval a target may declare.
MAX_DECLARED_S = 3600.0

_WIRING_NAMES: dict[str, Wiring] = {name: name for name in WIRINGS}


@dataclass(frozen=True)
class HttpOptions:
    """How to reach an ``http://`` target: launch it (or not), the callers' API keys, the model
    name requests use, where it exposes the kit's ledger document (None: it does not)."""

    launch: LaunchSpec | None = None
    api_keys: tuple[str, ...] = (DEFAULT_API_KEY,)
    model: str = DEFAULT_MODEL
    ledger_path: str | None = None
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    # The gateway maps tool history to Cascade steps (field 9): examples played in native mode run
    # only on such a gateway, the others only on one without.
    native_bridge: bool = False
    # The response store's limits the gateway was launched with (max_messages, max_entry_bytes).
    store_limits: dict[str, int] | None = None
    # The longest the kit waits, over all retries of one request, when the gateway rate-limits it.
    rate_limit_wait_s: float = DEFAULT_RATE_LIMIT_WAIT_S
    # The per-user signal every request carries, and where bodyless requests carry it.
    caller_scope: CallerScope = field(default_factory=CallerScope)
    # The fastest pace the kit sends requests at (None: as fast as the gateway's limiter lets it).
    max_rps: float | None = None
    # Where the gateway's usage counts the LS's cache-write tokens: "prompt", "apart" or None (undeclared).
    cache_writes: str | None = None
    # Seconds after which the gateway stops waiting on a running turn, and its longest silence in a stream.
    wait_limit_s: float | None = None
    heartbeat_s: float | None = None
    # Another model the gateway serves (SCOPE-3 continues a conversation with it), and whether it declares that
    # a resumed cascade gets the whole history again (SCOPE-3 then skips its "only the new turns" clause).
    other_model: str | None = None
    resends_history: bool = False


def http_options(
    target: str | None,
    *,
    launch: str | None = None,
    launch_cwd: str | Path | None = None,
    launch_env: Sequence[str] = (),
    ls_wiring: str | None = None,
    api_keys: Sequence[str] = (),
    model: str | None = None,
    ledger_path: str | None = None,
    ready_timeout_s: float | None = None,
    native_bridge: bool = False,
    store_limits: str | None = None,
    rate_limit_wait_s: float | None = None,
    caller_scope: str | None = None,
    read_scope: Sequence[str] = (),
    max_rps: float | None = None,
    cache_writes: str | None = None,
    wait_limit_s: float | None = None,
    heartbeat_s: float | None = None,
    other_model: str | None = None,
    resends_history: bool = False,
    prefix: str = "--",
) -> HttpOptions | None:
    """The options of the command line (``prefix``: ``--`` or ``--cascade-``) as HttpOptions;
    None when none is given. Usage errors are TargetSpecError with one line."""
    flags = given_flags(dict(locals()))  # the keyword arguments above, before anything else is bound
    given = {flag.name for flag in flags}
    named = [f"{prefix}{flag.name}" for flag in flags]
    if not named:
        return None
    if not (target or "").startswith("http:"):
        verb = "applies" if len(named) == 1 else "apply"
        raise TargetSpecError(f"{', '.join(named)} {verb} only to an http:// target ({prefix}target http://HOST:PORT)")
    if launch is None:
        needing = [f"{prefix}{n}" for n in ("launch-cwd", "launch-env", "ls-wiring", "ready-timeout") if n in given]
        if needing:
            verb = "needs" if len(needing) == 1 else "need"
            raise TargetSpecError(f"{', '.join(needing)} {verb} {prefix}launch: how the kit starts the gateway")
    if ls_wiring is not None and ls_wiring not in WIRINGS:
        raise TargetSpecError(f"{prefix}ls-wiring must be one of {', '.join(WIRINGS)}, got {ls_wiring!r}")
    if ledger_path is not None and not ledger_path.startswith("/"):
        raise TargetSpecError(f"{prefix}ledger-path is a path on the gateway, e.g. /v1/ledger, got {ledger_path!r}")
    if any(not key for key in api_keys):
        raise TargetSpecError(f"{prefix}api-key cannot be empty")
    if model is not None and not model:
        raise TargetSpecError(f"{prefix}model cannot be empty")
    if other_model is not None and (not other_model or other_model == (model or DEFAULT_MODEL)):
        raise TargetSpecError(
            f"{prefix}other-model must name a model other than {prefix}model ({model or DEFAULT_MODEL}), "
            f"got {other_model!r}"
        )
    if rate_limit_wait_s is not None and not 0 <= rate_limit_wait_s <= MAX_RATE_LIMIT_WAIT_S:
        raise TargetSpecError(
            f"{prefix}rate-limit-wait is seconds from 0 (never wait) to {MAX_RATE_LIMIT_WAIT_S:g}, "
            f"got {rate_limit_wait_s:g}"
        )
    if max_rps is not None and not MIN_RPS <= max_rps <= MAX_RPS:
        raise TargetSpecError(
            f"{prefix}max-rps is requests per second from {MIN_RPS:g} to {MAX_RPS:g}, got {max_rps:g}"
        )
    if cache_writes is not None and cache_writes not in CACHE_WRITES_CHOICES:
        raise TargetSpecError(
            f"{prefix}cache-writes must be one of {', '.join(CACHE_WRITES_CHOICES)}, got {cache_writes!r}"
        )
    for flag, seconds in (("wait-limit", wait_limit_s), ("heartbeat-interval", heartbeat_s)):
        if seconds is not None and not 0 < seconds <= MAX_DECLARED_S:
            raise TargetSpecError(f"{prefix}{flag} is seconds above 0, at most {MAX_DECLARED_S:g}, got {seconds:g}")
    if caller_scope is not None and caller_scope not in CALLER_SCOPES:
        raise TargetSpecError(f"{prefix}caller-scope must be one of {', '.join(CALLER_SCOPES)}, got {caller_scope!r}")
    if caller_scope == "none" and read_scope:
        raise TargetSpecError(
            f"{prefix}read-scope carries the caller's per-user signal, and {prefix}caller-scope none sends none"
        )
    reads = tuple(parse_read_scope(text, f"{prefix}read-scope") for text in read_scope)
    if len(set(reads)) != len(reads):
        raise TargetSpecError(f"{prefix}read-scope: each header or query parameter once, got {', '.join(read_scope)}")
    spec = None
    if launch is not None:
        spec = LaunchSpec(
            command=launch,
            cwd=Path(launch_cwd) if launch_cwd is not None else None,
            env=_env_pairs(launch_env, f"{prefix}launch-env"),
            wiring=_WIRING_NAMES[ls_wiring or "dial"],
            ready_timeout_s=ready_timeout_s if ready_timeout_s is not None else LaunchSpec.ready_timeout_s,
        )
    return HttpOptions(
        launch=spec,
        api_keys=tuple(api_keys) or (DEFAULT_API_KEY,),
        model=model or DEFAULT_MODEL,
        ledger_path=ledger_path,
        native_bridge=native_bridge,
        store_limits=parse_store_limits(store_limits, f"{prefix}store-limits") if store_limits is not None else None,
        rate_limit_wait_s=DEFAULT_RATE_LIMIT_WAIT_S if rate_limit_wait_s is None else rate_limit_wait_s,
        caller_scope=CallerScope(caller_scope or DEFAULT_CALLER_SCOPE, reads),
        max_rps=max_rps,
        cache_writes=cache_writes,
        wait_limit_s=wait_limit_s,
        heartbeat_s=heartbeat_s,
        other_model=other_model,
        resends_history=resends_history,
    )


def _env_pairs(pairs: Iterable[str], flag: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier() or not key.isascii():
            raise TargetSpecError(f"{flag} {pair!r}: expected NAME=VALUE, e.g. {flag} PORT={{port}}")
        env[key] = value
    return env

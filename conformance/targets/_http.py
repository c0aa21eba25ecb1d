"""Black-box HTTP targets: ``http://HOST:PORT``, a whole gateway driven over its OpenAI API.

The kit speaks to the gateway with the official ``openai`` client (what its users run) and reads
what the fake LS decoded from the wire through :meth:`HttpTarget.wired_ls`. The gateway is either
already running at the URL, or launched by the kit (:class:`LaunchSpec`), which also wires its LS.
Loopback only: the kit never leaves the machine.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import json
import sys
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from conformance.errors import GatewayGone, PreconditionNotMet, TargetError, TargetHung, TargetSpecError
from conformance.example_tags import tagged
from conformance.ls_handle import NOT_WIRED, LsHandle
from conformance.models.img import DEFAULT_HISTORY_BYTES, ENV_HISTORY, EXAMPLE_LIMITS, env_limit
from conformance.refusals import refusal
from conformance.targets._base import DeclaredOperations, check_result, observed
from conformance.targets._http_options import (
    HttpOptions,
)
from conformance.targets._http_responses import HttpResponses, body_of, what_it_said
from conformance.targets._http_store import DEFAULT_STORE_LIMITS, HttpStore
from conformance.targets._launch import LaunchedGateway, describe_exit
from conformance.targets._loopback import loopback_url
from conformance.targets._pace import Patience, Waits
from conformance.targets._scope import Caller, CallerScope
from conformance.targets._sse import sse_events, sse_lines
from conformance.targets._stale import StaleConnection, once_more_if_stale, stale, transport_failures

if TYPE_CHECKING:
    import openai

# openai is imported where a request is made, not with this module: it costs most of a second, and
# every process that loads the reference target (each CLI run and adapter) loads this module too.
try:
    import httpx2 as _transport
except ImportError:  # openai before 3.x drives httpx
    import httpx as _transport  # type: ignore[no-redef]

# The open probe of an external gateway waits at most this long (or the request timeout, when shorter).
PROBE_TIMEOUT_S = 10.0
# The stream deadline's clock (module-level, so a test can put a reading exactly on the boundary),
# and the rate-limit wait's sleep (so a test can count the waits without taking them).
_clock = time.monotonic
_sleep = time.sleep
# The pace's clock, apart from the stream deadline's (a test controls each alone).
_pace_clock = time.monotonic


def say(line: str) -> None:
    """A line for the person at the terminal while the run waits (stderr, beside the progress)."""
    print(line, file=sys.stderr, flush=True)


_CHAT_PATH = "/v1/chat/completions"
# gateway.retrieve without a signal: the read carries the signal of this example's caller with that key.
_EXAMPLE = object()
_CLIENT_ONLY = frozenset({"self", "extra_headers", "extra_query", "extra_body", "timeout"})
# What a gateway wired to the kit's fake offers besides HTTP: the Send it builds, read from the fake's wire,
# and its response store, whose turns that fake answers.
_WIRE_OPERATIONS = frozenset({"engine.build_send_request", "store.open", "store.put", "store.get", "store.delete"})


class HttpTarget(DeclaredOperations):
    """A gateway at an ``http://`` loopback URL: ``gateway.chat`` always, ``gateway.ledger`` when it
    exposes the ledger. Wired at launch, so no ``gateway.start``: properties take the LS from
    :meth:`wired_ls` and the keys and model from :meth:`gateway_defaults`."""

    kind = "http"

    def __init__(self, url: str, options: HttpOptions) -> None:
        host, port = loopback_url(url)
        if port == 0 and options.launch is None:
            raise TargetSpecError(f"{url!r}: port 0 means 'the kit picks one', needing --launch (the kit starts it)")
        if options.request_timeout_s <= 0:
            raise TargetSpecError(f"the request timeout must be positive, got {options.request_timeout_s}")
        self._options = options
        self._caps: dict[str, dict[str, Any]] = {}
        ledger = {"gateway.ledger"} if options.ledger_path else set()
        self._ops = frozenset({"gateway.chat", "gateway.respond", "gateway.retrieve"} | ledger)
        if options.launch is not None and options.launch.wiring != "none":
            # The Send it builds for a conversation is read from the wire of the fake it is wired to, and
            # the turns its response store keeps are answered by that fake.
            self._ops |= _WIRE_OPERATIONS
            limits = options.store_limits or DEFAULT_STORE_LIMITS
            self._caps["store.open"] = {"fixed_limits": dict(limits), "shapes": ["responses"]}
        self._caps["gateway.chat"] = {"hang_up": True}
        self._clients: dict[str, openai.OpenAI] = {}
        self._scope = options.caller_scope
        self._callers = self._scope.callers(options.api_keys)
        # The callers of the example in progress: the first, and the other one (they alternate).
        self._example: list[Caller] = self._callers[:2]
        self._examples = 0  # how many examples began (next_example)
        self._store = HttpStore(
            self._send,
            callers=self._callers,
            model=options.model,
            limits=options.store_limits or DEFAULT_STORE_LIMITS,
            ls=self.wired_ls,
            describe=self._failed,
            scope=self._scope,
            history_budget=_history_budget(options),
        )
        self._create_params: frozenset[str] | None = None
        # Waits out rate limits within --rate-limit-wait and keeps the pace (the sleep looked up when
        # taken, so a test can count the waits without taking them).
        self._patience = Patience(
            options.rate_limit_wait_s, options.max_rps, clock=lambda: _pace_clock(), sleep=lambda s: _sleep(s), say=say
        )
        self._waiting = self._patience.run
        self._gateway: LaunchedGateway | None = None
        import openai

        # Loopback, plain HTTP (https is refused): never through a proxy, and no CA bundle to load for
        # each target (loading it was a twentieth of a whole run).
        self._http = openai.DefaultHttpxClient(trust_env=False, verify=False)
        self._responses = HttpResponses(
            client=self._http,
            url=lambda: self._url,
            timeout_s=self._timeout,
            patience=self._patience,
            read=self._read_as,
            lines=lambda lines, what: self._lines(lines, _clock(), [], what),
            failed=self._failed,
        )
        try:
            if options.launch is not None:
                self._gateway = LaunchedGateway(options.launch, host=host, port=port).start()
                port = self._gateway.port
            self._url = f"http://{'[::1]' if host == '::1' else host}:{port}"
            if self._gateway is None:
                self._probe()
        except BaseException:
            self._http.close()
            raise

    @property
    def waited_s(self) -> float:
        """How long the last request waited out rate limits."""
        return self._patience.waited_s

    def waited(self) -> Waits:
        """Every wait for the gateway so far (rate limits and pace)."""
        return self._patience.waits.copy()

    @contextlib.contextmanager
    def impatient(self) -> Iterator[None]:
        """Requests in the block get the gateway's first answer: a rate limit is returned, not waited out
        (a property that judges how the gateway passes on a rate limit)."""
        budget, self._patience.budget_s = self._patience.budget_s, 0.0
        try:
            yield
        finally:
            self._patience.budget_s = budget

    @property
    def url(self) -> str:
        return self._url

    @property
    def description(self) -> str:
        if self._gateway is None:
            return self._url
        return f"{self._url} (launched: {self._gateway.spec.command}, LS: {self._gateway.spec.wiring})"

    @property
    def callers(self) -> str:
        """Who the kit is on this gateway, for the report: the keys, the per-user signal, the read scope."""
        return self._scope.describe(len(self._options.api_keys))

    def fixed_env(self) -> dict[str, str]:
        """The limits the kit's examples set (the history-image caps and history budget) as the gateway
        was launched with them; every other variable of its environment is the gateway's business."""
        launched = dict(self._gateway.spec.env) if self._gateway is not None else {}
        return {k: v for k, v in launched.items() if k in EXAMPLE_LIMITS}

    def why_lacking(self, needs: list[str]) -> str | None:
        """Why this target lacks operations the kit's HTTP target can offer: the wire's, when the kit did
        not wire the gateway's LS (None: no such reason)."""
        wanted = {op for need in needs for op in need.split("|")}
        return NOT_WIRED if wanted & _WIRE_OPERATIONS and self.wired_ls() is None else None

    def wired_ls(self) -> LsHandle | None:
        """The fake LS the gateway talks to; None when the kit did not wire one (no --launch, or
        --ls-wiring none): then nothing of the wire can be judged on this target."""
        return self._gateway.ls if self._gateway is not None else None

    def gateway_defaults(self) -> dict[str, Any]:
        """What gateway.start answers on other targets: the API keys of this example's callers (the
        first, then the other one, see :meth:`next_example`) and the model name. Each request's body
        gets its caller's signal from :meth:`scoped_body`."""
        return {
            "api_keys": [caller.api_key for caller in self._example],
            "model": self._options.model,
            "native_bridge": self._options.native_bridge,
            "cache_writes": self._options.cache_writes,
            "wait_limit_s": self._options.wait_limit_s,
            "heartbeat_s": self._options.heartbeat_s,
            "other_model": self._options.other_model,
            "resends_history": self._options.resends_history,
        }

    def example_callers(self) -> list[Caller]:
        """This example's callers: the first, then the other one (see :meth:`next_example`)."""
        return list(self._example)

    def all_callers(self) -> list[Caller]:
        """Every caller the kit is on this gateway: one per key, then the first key with another signal."""
        return list(self._callers)

    @property
    def caller_scope(self) -> CallerScope:
        """The per-user signal the kit sends, and where bodyless requests carry it."""
        return self._scope

    def next_example(self) -> None:
        """A new example begins: its other caller is the next of the callers after the first, so with
        two keys it alternates between the second key and the first key with another signal."""
        self._examples += 1
        others = self._callers[1:]
        other = [others[self._examples % len(others)]] if others else []
        self._example = [self._callers[0], *other]

    def scoped_body(self, body: Mapping[str, Any], caller: int) -> dict[str, Any]:
        """``body`` carrying the per-user signal of the example's caller ``caller`` (--caller-scope)."""
        return self._scope.body(body, self._example[caller % len(self._example)])

    def launch_output(self) -> str | None:
        """What the launched gateway wrote to stdout and stderr (None: the kit did not launch it)."""
        return self._gateway.output() if self._gateway is not None else None

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        self._before_call(op, params)
        self._still_launched()
        try:
            result = self._call(op, params)
        except BaseException:
            self._still_launched()  # what a dead gateway's port answered is no verdict
            raise
        self._still_launched()
        return result

    def _still_launched(self) -> None:
        """Raise GatewayGone when the gateway the kit launched has ended."""
        gone = self._gateway.gone() if self._gateway is not None else None
        if gone is not None:
            raise GatewayGone(gone)

    def _call(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        if op == "gateway.chat":
            result = self._chat(params["request"], params["api_key"], params.get("hang_up_after"))
        elif op == "gateway.respond":
            result = self._responses.respond(params["request"], params["api_key"])
        elif op == "gateway.retrieve":
            result = self._responses.retrieve(params["response_id"], params["api_key"], params.get("signal", _EXAMPLE))
        elif op == "engine.build_send_request":
            result = self._build_send_request(**params)
        elif op.startswith("store."):
            result = getattr(self._store, op.removeprefix("store."))(**params)
        else:
            result = self._ledger()
        return check_result(op, result, self.description, observed(self.capabilities(op)))

    def close(self) -> None:
        if self._gateway is not None:
            self._gateway.stop()
        self._http.close()

    # ------------------------------------------------------------------ gateway.chat

    def _chat(self, request: dict[str, Any], api_key: str, hang_up_after: int | None = None) -> dict[str, Any]:
        """One chat request; a rate limit is waited out (:meth:`_waiting`), the last answer returned. With
        ``hang_up_after``, a stream's connection is closed once that many events were read."""
        return self._waiting(
            lambda: self._chat_once(request, api_key, hang_up_after),
            what_it_said,
            "the gateway",
        )[0]

    def _chat_once(
        self, request: dict[str, Any], api_key: str, hang_up_after: int | None
    ) -> tuple[dict[str, Any], Mapping[str, str]]:
        return once_more_if_stale(
            lambda: self._chat_attempt(request, api_key, hang_up_after), self._failed, f"POST {_CHAT_PATH}"
        )

    def _chat_attempt(
        self, request: dict[str, Any], api_key: str, hang_up_after: int | None
    ) -> tuple[dict[str, Any], Mapping[str, str]]:
        import openai

        client = self._client(api_key)
        kwargs, extra = self._split(request)
        if not api_key:  # an empty key: the request goes without an Authorization header
            kwargs["extra_headers"] = {"Authorization": openai.omit}
        stream = request.get("stream") is True
        started = _clock()
        try:
            if not stream:
                raw = client.chat.completions.with_raw_response.create(**kwargs, extra_body=extra)
                return {"status": raw.status_code, "body": body_of(raw.http_response.content)}, raw.headers
            with client.chat.completions.with_streaming_response.create(**kwargs, extra_body=extra) as response:
                answer = response.http_response
                if not answer.headers.get("content-type", "").lower().startswith("text/event-stream"):
                    return {"status": answer.status_code, "body": body_of(answer.read())}, answer.headers
                silences: list[float] = []
                read = sse_events(self._lines(sse_lines(answer.iter_text()), started, silences))
                events = list(itertools.islice(read, hang_up_after)) if hang_up_after else list(read)
                timed = {"longest_silence_s": round(max(silences), 3)} if silences else {}
                return {"status": answer.status_code, "events": events, **timed}, answer.headers
        except openai.APIStatusError as exc:
            return {"status": exc.status_code, "body": body_of(exc.response.content)}, exc.response.headers
        except openai.APITimeoutError:
            raise TargetHung(self._failed(f"no answer to POST {_CHAT_PATH} within {self._timeout():g} s")) from None
        except openai.APIConnectionError as exc:
            if stale(exc):
                raise StaleConnection from exc
            reason = exc.__cause__ or exc
            raise TargetError(self._failed(f"POST {_CHAT_PATH} failed: {reason}")) from None
        except (_transport.HTTPError, _transport.StreamError) as exc:
            raise TargetError(self._failed(f"the event stream of POST {_CHAT_PATH} broke off: {exc}")) from None

    def _lines(
        self, lines: Iterator[str], started: float, silences: list[float], what: str = f"POST {_CHAT_PATH}"
    ) -> Iterator[str]:
        """The stream's lines, within the request timeout overall (heartbeats do not extend it); ``silences``
        gets the time before each line (comments included), from the answer's headers on."""
        last = _clock()
        for line in lines:
            now = _clock()
            silences.append(now - last)
            last = now
            if now - started > self._timeout():
                raise TargetError(self._failed(f"the event stream of {what} did not end within {self._timeout():g} s"))
            yield line

    def _split(self, request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request's fields the client knows, as its arguments, and the others for ``extra_body``
        (the body is sent as given; a missing model or messages stays missing)."""
        if self._create_params is None:
            signature = inspect.signature(self._client(self._options.api_keys[0]).chat.completions.create)
            self._create_params = frozenset(signature.parameters) - _CLIENT_ONLY
        kwargs = {k: v for k, v in request.items() if k in self._create_params}
        if not isinstance(kwargs.get("stream", False), bool):
            del kwargs["stream"]
        extra = {k: v for k, v in request.items() if k not in kwargs}
        import openai

        for required in ("messages", "model"):
            kwargs.setdefault(required, openai.omit)
        return kwargs, extra

    def _client(self, api_key: str) -> openai.OpenAI:
        import openai

        client = self._clients.get(api_key)
        if client is None:
            client = openai.OpenAI(
                base_url=self._url + "/v1",
                api_key=api_key or "unused",  # the client needs one; an empty key's header is left out
                max_retries=0,
                timeout=self._timeout(),
                http_client=self._http,
            )
            self._clients[api_key] = client
        return client

    # ------------------------------------------------------------------ engine.build_send_request

    def _build_send_request(
        self,
        messages: list[dict[str, Any]],
        model_uid: str,
        tool_preamble: str,
        native_mode: bool,
        is_resume: bool,
        env: dict[str, str],
    ) -> dict[str, Any]:
        """The Send the gateway puts on the wire for ``messages``, sent as one chat request (its own
        model; a tool preamble stands for a request with tools). Only fresh builds with the gateway's
        own limits can be asked; other examples are not checkable here (PreconditionNotMet)."""
        if is_resume:
            raise PreconditionNotMet("a black-box gateway builds a resume only for a cascade it continues itself")
        if native_mode != self._options.native_bridge:
            raise PreconditionNotMet(
                f"the example needs the native bridge {'on' if native_mode else 'off'}; this gateway has it "
                f"{'on' if self._options.native_bridge else 'off'} (--native-bridge)"
            )
        launched = self.fixed_env()
        differing = sorted(k for k in {*env, *launched} if env.get(k) != launched.get(k))
        if differing:
            shown = ", ".join(f"{k}={env[k]}" if k in env else f"{k} unset" for k in differing)
            raise PreconditionNotMet(
                f"the example needs the limits {shown}, which the gateway was not launched with (launch it with "
                "--launch-env NAME=VALUE to check such examples)"
            )
        handle = self.wired_ls()
        assert handle is not None  # the operation exists only with a wired LS
        handle.reset()
        # The example's unique tag keeps a gateway's response cache and pool from answering it with an
        # earlier example's turn (a real client's text, not a sampling parameter the gateway may refuse).
        body: dict[str, Any] = {"model": self._options.model, "messages": tagged(messages)}
        if tool_preamble:
            tool = {"name": "conformance_tool", "description": tool_preamble[:200], "parameters": {"type": "object"}}
            body["tools"] = [{"type": "function", "function": tool}]
        first = self._callers[0]
        answer = self._chat(self._scope.body(body, first), first.api_key)
        said = answer.get("body", answer.get("events"))
        refused = refusal(f"POST {_CHAT_PATH}", answer["status"], said, waited_s=self.waited_s)
        if refused is not None:
            raise refused
        entries = handle.journal()
        sends = [e for e in entries if e.get("method") == "SendUserCascadeMessage"]
        if not sends:
            raise TargetError(
                f"{self.description}: no SendUserCascadeMessage reached the LS for the conversation; the gateway "
                f"answered {json.dumps(answer)[:400]}"
            )
        started = {
            (e.get("response") or {}).get("cascade_id")
            for e in entries
            if e.get("method") == "StartCascade" and e.get("status") == "OK"
        }
        if (sends[0].get("request") or {}).get("cascade_id") not in started:
            raise PreconditionNotMet("the gateway continued a cascade it had pooled instead of building a fresh one")
        return {"request_b64": sends[0]["raw_b64"]}

    # ------------------------------------------------------------------ gateway.ledger

    def _ledger(self) -> dict[str, Any]:
        path = self._options.ledger_path or ""
        answer = self._send("GET", path, self._callers[0])
        if answer.status_code != 200:
            text = answer.text[:500]
            raise TargetError(f"{self.description}: GET {path} (--ledger-path) answered {answer.status_code}: {text}")
        body = body_of(answer.content)
        if isinstance(body, str):
            raise TargetError(f"{self.description}: GET {path} answered something that is not JSON: {body[:300]!r}")
        return {"ledger": body}

    # ------------------------------------------------------------------ helpers

    def _send(
        self,
        method: str,
        path: str,
        caller: Caller,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> _transport.Response:
        """One request to the gateway as ``caller``: a body carries its per-user signal, a bodyless
        request carries it as --read-scope says. A timeout or a broken connection is the target's
        failure (TargetError), an HTTP status is the caller's to judge."""
        headers = {"Authorization": f"Bearer {caller.api_key}"}
        if json is not None:
            sent: dict[str, Any] = {"json": self._scope.body(json, caller)}
        else:
            headers |= self._scope.read_headers(caller)
            query = {**(params or {}), **self._scope.read_params(caller)}
            sent = {"params": query} if query else {}
        return self._waiting(
            lambda: self._send_once(method, path, headers, sent),
            lambda answer: (answer.status_code, answer.headers, body_of(answer.content)),
            f"{method} {path}",
        )

    def _send_once(
        self, method: str, path: str, headers: Mapping[str, str], sent: Mapping[str, Any]
    ) -> _transport.Response:
        return once_more_if_stale(
            lambda: self._send_attempt(method, path, headers, sent), self._failed, f"{method} {path}"
        )

    def _send_attempt(
        self, method: str, path: str, headers: Mapping[str, str], sent: Mapping[str, Any]
    ) -> _transport.Response:
        with transport_failures(f"{method} {path}", self._failed, self._timeout()):
            return self._http.request(method, self._url + path, headers=headers, timeout=self._timeout(), **sent)

    def _read_as(self, path: str, api_key: str, signal: object = None) -> tuple[int, Any]:
        """A bodyless GET as the caller of ``api_key`` with ``signal`` (:data:`_EXAMPLE`: this example's caller
        holding that key), the signal where --read-scope says."""
        if signal is _EXAMPLE:
            caller = next((c for c in self._example if c.api_key == api_key), self._example[0])
        else:
            caller = Caller(api_key, signal if isinstance(signal, str) else None)
        answer = self._send("GET", path, caller)
        return answer.status_code, body_of(answer.content)

    def _timeout(self) -> float:
        return self._options.request_timeout_s

    def _probe(self) -> None:
        """An external gateway must answer at open (any status), so a wrong URL fails before any property."""
        try:
            self._http.get(self._url + "/v1/models", timeout=min(PROBE_TIMEOUT_S, self._timeout()))
        except _transport.HTTPError as exc:
            raise TargetError(
                f"nothing answers at {self._url} (GET /v1/models: {exc}); start the gateway first, or let the kit "
                "start it with --launch"
            ) from None

    def _failed(self, what: str) -> str:
        message = f"{self.description}: {what}"
        if self._gateway is None:
            return message
        code = self._gateway.exit_code()
        state = f"the gateway {describe_exit(code)}" if code is not None else "the gateway is still running"
        tail = self._gateway.output_tail()
        return f"{message}; {state}" + (f"; its output ends:\n{tail}" if tail else "")


def _history_budget(options: HttpOptions) -> int:
    """The history budget the launched gateway was given (CASCADE_MAX_HISTORY_BYTES), else the default."""
    launched = options.launch.env if options.launch is not None else {}
    return env_limit(launched, ENV_HISTORY, DEFAULT_HISTORY_BYTES, allow_zero=False)

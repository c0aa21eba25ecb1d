"""A gateway under test, whichever kind of target it is, for the end-to-end families (SO, ACC).

``open_gateway(target, scenario)`` gives a :class:`GatewayUnderTest` whose language server is a
fake the kit controls, playing ``scenario``:

* an HTTP target was wired to its fake at launch (``target.wired_ls()``): the fake is reset and
  loaded with the scenario; the gateway itself keeps its state between examples, so every request
  carries a fresh tag (:meth:`GatewayUnderTest.tag`) and ledgers are judged by their deltas;
* an in-process or adapter target starts a fresh gateway (``gateway.start``) against a fresh
  :class:`fakels.FakeLSThread` per example, and stops it afterwards (``gateway.stop``).
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from conformance.errors import InputRefused, PreconditionNotMet, TargetError, TransientRefusal, excerpt
from conformance.example_tags import tagged
from conformance.ls_handle import NOT_WIRED, InProcessLs, LsHandle
from conformance.models.stream import StreamView
from conformance.refusals import refusal
from conformance.targets import Caller, CallerScope, Target
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread

_CSRF = "conformance-gateway-csrf-token"
# Kinds of answer a property may judge instead of leaving the example unjudged (GatewayUnderTest.chat).
REFUSAL = "refusal"
RATE_LIMIT = "rate limit"
# The model uid conversations are played with on in-process targets (HTTP targets use their --model).
MODEL_UID = "claude-sonnet-4-6"


@dataclass(frozen=True)
class ChatAnswer:
    """``longest_silence_s``: the longest a stream went without a line (comments included), when the target
    times its streams."""

    status: int
    body: Any = None
    events: list[str] | None = None
    longest_silence_s: float | None = None

    @property
    def streamed(self) -> bool:
        return self.events is not None

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, **({"events": self.events} if self.streamed else {"body": self.body})}

    @property
    def content(self) -> str:
        """The chat content delivered: the stream's content deltas, or the choices' message content."""
        if self._view is not None:
            return self._view.content
        return "".join(str((c.get("message") or {}).get("content") or "") for c in self._choices())

    @property
    def finish_reasons(self) -> list[str]:
        """The finish reasons delivered, in order, streamed or not."""
        if self._view is not None:
            return self._view.finish_reasons
        return [str(c["finish_reason"]) for c in self._choices() if c.get("finish_reason")]

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The error objects inside the answer: a stream's error events, or a body's ``error``."""
        if self._view is not None:
            return self._view.errors
        return [self.body["error"]] if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict) else []

    @property
    def error(self) -> Any:
        """The error the client got: the status of a non-2xx answer, the first error inside a 2xx one, or None."""
        if self.status >= 300:
            return self.status
        errors = self.errors
        return errors[0] if errors else None

    @functools.cached_property
    def _view(self) -> StreamView | None:
        """The stream read once as chunks (None: not a stream)."""
        return StreamView(self.events) if self.events is not None else None

    def _choices(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        return [c for c in body.get("choices") or () if isinstance(c, dict)]


# How an in-process target's callers name their end user (an HTTP target says how, --caller-scope).
_BODY_SCOPE = CallerScope("user")


@dataclass(frozen=True)
class CallerPair:
    """Two callers a gateway must keep apart, and how they differ (``kind``). ``key_alone``: for two end users of
    one key, that key with no signal; a gateway that shares something of the first with it scopes that by the
    key alone, which a gateway may (gateway-fixes P5), and then the two users are one caller to it."""

    kind: str
    first: Caller
    second: Caller
    key_alone: Caller | None = None


@dataclass(frozen=True)
class TimeLimits:
    """What a gateway declares of its time limits: after how many seconds it stops waiting on a turn the LS
    still runs, and the longest it leaves a stream silent (None: undeclared)."""

    wait_limit_s: float | None = None
    heartbeat_s: float | None = None

    @classmethod
    def declared(cls, facts: Mapping[str, Any]) -> TimeLimits:
        return cls(facts.get("wait_limit_s"), facts.get("heartbeat_s"))


class GatewayUnderTest:
    """``callers``: the example's callers, caller 0 first (an HTTP target's carry its per-user signal,
    --caller-scope; an in-process target's are its API keys); ``scope``: how a signal travels in a body.
    ``cache_writes``: where the gateway declares its usage counts the LS's cache-write tokens ("prompt" or
    "apart"; None: undeclared)."""

    def __init__(
        self,
        target: Target,
        ls: LsHandle,
        callers: Sequence[Caller],
        model: str,
        scope: CallerScope = _BODY_SCOPE,
        *,
        cache_writes: str | None = None,
        time_limits: TimeLimits = TimeLimits(),
        all_callers: Sequence[Caller] = (),
        other_model: str | None = None,
        resends_history: bool = False,
    ) -> None:
        self.target = target
        self.ls = ls
        self.callers = list(callers)
        self.model = model
        self.scope = scope
        self.cache_writes = cache_writes
        self.time_limits = time_limits
        self.other_model = other_model
        self.resends_history = resends_history
        self._all_callers = list(all_callers) or self.callers
        self.run_tag = uuid.uuid4().hex[:12]
        self.exchanges: list[dict[str, Any]] = []

    @property
    def api_keys(self) -> list[str]:
        return [caller.api_key for caller in self.callers]

    def caller_pairs(self) -> list[CallerPair]:
        """The pairs of callers this gateway can be shown: two API keys (when it has two), and two end users of
        one key (when the kit sends a per-user signal), each pair's first caller carrying a signal if any does."""
        pairs: list[CallerPair] = []
        first = self._all_callers[0]
        other_key = next((c for c in self._all_callers if c.api_key != first.api_key), None)
        if other_key is not None:
            pairs.append(CallerPair("two API keys", first, other_key))
        if self.scope.sends_signal:
            users = [c for c in self._all_callers if c.api_key == first.api_key and c.signal is not None]
            if len(users) < 2:
                users = [Caller(first.api_key, f"{self.run_tag}-end-user-{n}") for n in (1, 2)]
            pairs.append(CallerPair("two end users of one key", users[0], users[1], Caller(first.api_key, None)))
        return pairs

    def blank_scope(self) -> CallerScope:
        """Where a blank per-user signal goes: the gateway's signal field, or ``user`` when the kit sends none."""
        return self.scope if self.scope.sends_signal else _BODY_SCOPE

    def tag(self, text: str) -> str:
        """``text`` made unique to this example (a gateway that outlives examples must not answer
        from a cache or a pooled cascade filled by an earlier one)."""
        return f"{text} [case {self.run_tag}]"

    def chat(
        self,
        request: Mapping[str, Any],
        *,
        caller: int | Caller = 0,
        judged: Collection[str] = (),
        hang_up_after: int | None = None,
        scope: CallerScope | None = None,
    ) -> ChatAnswer:
        """The gateway's answer to ``request``. A refusal leaves the example unjudged (it raises), except the
        kinds in ``judged``, which are then the answer the property judges: ``"refusal"``, a 4xx refusal of
        the input; ``"rate limit"``, a rate limit (429, 503, a transient error inside a 2xx), which is then
        not waited out either. ``hang_up_after`` (see :attr:`can_hang_up`): the client leaves a stream once it
        has read that many events. ``caller``: one of :attr:`callers` by index, or a caller; ``scope``: where its
        signal goes, when not where the gateway reads one (a blank signal, :meth:`blank_scope`)."""
        hang_up = {"hang_up_after": hang_up_after} if hang_up_after is not None else {}
        return self._post("gateway.chat", "POST /v1/chat/completions", request, caller, judged, scope, **hang_up)

    @property
    def can_hang_up(self) -> bool:
        """Whether the target can leave a stream part way (capability ``hang_up`` of ``gateway.chat``)."""
        return self.target.capabilities("gateway.chat").get("hang_up") is True

    def respond(
        self, request: Mapping[str, Any], *, caller: int | Caller = 0, judged: Collection[str] = ()
    ) -> ChatAnswer:
        """The gateway's answer to a Responses request (``gateway.respond``), refusals as :meth:`chat` says."""
        return self._post("gateway.respond", "POST /v1/responses", request, caller, judged, None)

    def retrieve(self, response_id: str, *, caller: int | Caller = 0) -> tuple[int, Any]:
        """A stored response read back (``gateway.retrieve``) as ``caller``, its signal where the gateway reads
        one: the status and the body, whatever they are."""
        who = self._caller(caller)
        answer = self.target.call("gateway.retrieve", response_id=response_id, api_key=who.api_key, signal=who.signal)
        self.exchanges.append({"read": response_id, "caller": _shown(who), "answer": excerpt(answer)})
        return answer["status"], answer.get("body")

    def _caller(self, caller: int | Caller) -> Caller:
        return caller if isinstance(caller, Caller) else self.callers[caller % len(self.callers)]

    def _post(
        self,
        op: str,
        what: str,
        request: Mapping[str, Any],
        caller: int | Caller,
        judged: Collection[str],
        scope: CallerScope | None,
        **extra: Any,
    ) -> ChatAnswer:
        unknown = set(judged) - {REFUSAL, RATE_LIMIT}
        assert not unknown, f"unknown kinds of answer to judge: {unknown}"
        who = self._caller(caller)
        body = (scope or self.scope).body({"model": self.model, **request}, who)
        with _impatient(self.target) if RATE_LIMIT in judged else contextlib.nullcontext():
            answer = self.target.call(op, request=body, api_key=who.api_key, **extra)
        result = ChatAnswer(answer["status"], answer.get("body"), answer.get("events"), answer.get("longest_silence_s"))
        self.exchanges.append({"request": excerpt(body), "caller": _shown(who), "answer": result.summary()})
        said = result.events if result.streamed else result.body
        refused = refusal(what, result.status, said, waited_s=_waited(self.target))
        if refused is None:
            return result
        if isinstance(refused, InputRefused) and REFUSAL in judged:
            return result
        if isinstance(refused, TransientRefusal) and RATE_LIMIT in judged:
            return result
        raise refused

    def journal(self) -> list[dict[str, Any]]:
        return self.ls.journal()

    @property
    def has_ledger(self) -> bool:
        return "gateway.ledger" in self.target.operations()

    def ledger(self) -> dict[str, Any]:
        document: dict[str, Any] = self.target.call("gateway.ledger")["ledger"]
        return document


@contextmanager
def open_gateway(
    target: Target, scenario: Mapping[str, Any], *, http_faults: bool = False
) -> Iterator[GatewayUnderTest]:
    """``http_faults``: a gateway the kit starts dials the fake's hand-written gRPC port, where a scenario can
    fail a call at the HTTP level (a launched one was wired once: ``gw.ls.http_faults`` says how)."""
    wired = getattr(target, "wired_ls", None)
    if callable(wired):
        handle = wired()
        if handle is None:
            raise PreconditionNotMet(NOT_WIRED)
        handle.reset()
        handle.load_scenario(dict(scenario))
        target.next_example()  # type: ignore[attr-defined]
        defaults = target.gateway_defaults()  # type: ignore[attr-defined]
        yield GatewayUnderTest(
            target,
            handle,
            target.example_callers(),  # type: ignore[attr-defined]
            defaults["model"],
            target.caller_scope,  # type: ignore[attr-defined]
            cache_writes=defaults.get("cache_writes"),
            time_limits=TimeLimits.declared(defaults),
            all_callers=target.all_callers(),  # type: ignore[attr-defined]
            other_model=defaults.get("other_model"),
            resends_history=defaults.get("resends_history") is True,
        )
        return
    if "gateway.start" not in target.operations():
        raise TargetError(f"{target.description} implements gateway.chat but not gateway.start, which it needs")
    played = parse_scenario(dict(scenario), source="gateway scenario")
    with FakeLSThread(csrf_token=_CSRF, scenario=played, grpc_h2_port=0 if http_faults else None) as fake:
        ls = InProcessLs(fake, _CSRF, http_faults=http_faults)
        started = target.call("gateway.start", ls_address=ls.address, csrf_token=_CSRF)
        try:
            yield GatewayUnderTest(
                target,
                ls,
                [Caller(key, None) for key in started["api_keys"]],
                started["model"],
                cache_writes=started.get("cache_writes"),
                time_limits=TimeLimits.declared(started),
                other_model=started.get("other_model"),
                resends_history=started.get("resends_history") is True,
            )
        finally:
            if "gateway.stop" in target.operations():
                target.call("gateway.stop")


@dataclass(frozen=True)
class Played:
    """A conversation played through a target: what each turn added as sent (the first user message
    may carry the example's tag), the target's own per-turn report (evidence only) and the fake's
    journal."""

    turns: list[list[dict[str, Any]]]
    reports: list[dict[str, Any]]
    journal: list[dict[str, Any]]


def play_conversation(
    target: Target,
    scenario: Mapping[str, Any],
    turns: Sequence[Sequence[Mapping[str, Any]]],
    *,
    native_mode: bool,
    model_uid: str = MODEL_UID,
) -> Played:
    """Play ``turns`` (each the messages it adds) against a fake playing ``scenario``; each answer is
    appended as the assistant message before the next turn. Through ``engine.play_turns`` on a fresh
    kit-started fake when the target has it (as ``model_uid``), else turn by turn through ``gateway.chat``
    (with the gateway's own model)."""
    wired = callable(getattr(target, "wired_ls", None))
    if not wired and "engine.play_turns" in target.operations():
        return _play_in_process(target, scenario, turns, native_mode, model_uid)
    if wired:
        native = bool(target.gateway_defaults().get("native_bridge", False))  # type: ignore[attr-defined]
        if native != native_mode:
            raise PreconditionNotMet(
                f"the example needs a gateway with the native bridge {_on(native_mode)}, "
                f"this one has it {_on(native)} (declare it with --native-bridge)"
            )
    # The first message is tagged, so a gateway that outlives examples never continues a cascade an
    # earlier example left in its pool.
    sent = [[dict(m) for m in added] for added in turns]
    if sent and sent[0]:
        sent[0] = tagged(sent[0])
    reports: list[dict[str, Any]] = []
    with open_gateway(target, scenario) as gw:
        conversation: list[dict[str, Any]] = []
        try:
            for index, added in enumerate(sent):
                conversation.extend(added)
                answer = gw.chat({"messages": conversation, "stream": False})
                if answer.status != 200 or not isinstance(answer.body, dict):
                    raise TargetError(f"turn {index + 1} of the conversation was answered {answer.summary()}")
                message = answer.body["choices"][0]["message"]
                reports.append({"text": message.get("content") or ""})
                conversation.append({"role": "assistant", "content": message.get("content") or ""})
        finally:
            journal = gw.journal()
    return Played(sent, reports, journal)


def _play_in_process(
    target: Target,
    scenario: Mapping[str, Any],
    turns: Sequence[Sequence[Mapping[str, Any]]],
    native_mode: bool,
    model_uid: str,
) -> Played:
    with FakeLSThread(csrf_token=_CSRF, scenario=parse_scenario(dict(scenario), source="the case's scenario")) as fake:
        try:
            answer = target.call(
                "engine.play_turns",
                ls_address=fake.address,
                csrf_token=_CSRF,
                model_uid=model_uid,
                native_mode=native_mode,
                turns=[list(added) for added in turns],
            )
        finally:
            journal = [entry.to_json() for entry in fake.journal.entries()]
    return Played([[dict(m) for m in added] for added in turns], answer["turns"], journal)


def _impatient(target: Target) -> contextlib.AbstractContextManager[object]:
    """A block in which ``target`` answers rate limits as they come (an HTTP target waits them out otherwise)."""
    impatient = getattr(target, "impatient", None)
    return impatient() if callable(impatient) else contextlib.nullcontext()


def _waited(target: Target) -> float:
    """How long the target's last request waited out rate limits (0 for targets that do not wait)."""
    waited = getattr(target, "waited_s", 0.0)
    return float(waited) if isinstance(waited, int | float) else 0.0


def _shown(caller: Caller) -> dict[str, Any]:
    """A caller as the report shows it: its key and its signal (None: none; a blank one as sent)."""
    return {"api_key": caller.api_key, "signal": caller.signal}


def _on(flag: bool) -> str:
    return "on" if flag else "off"

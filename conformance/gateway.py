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

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from conformance.ls_handle import InProcessLs, LsHandle
from conformance.targets import Target, TargetError
from fakels.scenario import parse_scenario
from fakels.server import FakeLSThread

_CSRF = "conformance-gateway-csrf-token"


@dataclass(frozen=True)
class ChatAnswer:
    status: int
    body: Any = None
    events: list[str] | None = None

    @property
    def streamed(self) -> bool:
        return self.events is not None

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, **({"events": self.events} if self.streamed else {"body": self.body})}


class GatewayUnderTest:
    def __init__(self, target: Target, ls: LsHandle, api_keys: Sequence[str], model: str) -> None:
        self.target = target
        self.ls = ls
        self.api_keys = list(api_keys)
        self.model = model
        self.run_tag = uuid.uuid4().hex[:12]
        self.exchanges: list[dict[str, Any]] = []

    def tag(self, text: str) -> str:
        """``text`` made unique to this example (a gateway that outlives examples must not answer
        from a cache or a pooled cascade filled by an earlier one)."""
        return f"{text} [case {self.run_tag}]"

    def chat(self, request: Mapping[str, Any], *, caller: int = 0) -> ChatAnswer:
        body = {"model": self.model, **request}
        answer = self.target.call("gateway.chat", request=body, api_key=self.api_keys[caller % len(self.api_keys)])
        result = ChatAnswer(answer["status"], answer.get("body"), answer.get("events"))
        self.exchanges.append({"request": _shortened(body), "caller": caller, "answer": result.summary()})
        return result

    def journal(self) -> list[dict[str, Any]]:
        return self.ls.journal()

    @property
    def has_ledger(self) -> bool:
        return "gateway.ledger" in self.target.operations()

    def ledger(self) -> dict[str, Any]:
        document: dict[str, Any] = self.target.call("gateway.ledger")["ledger"]
        return document


@contextmanager
def open_gateway(target: Target, scenario: Mapping[str, Any]) -> Iterator[GatewayUnderTest]:
    wired = getattr(target, "wired_ls", None)
    if callable(wired):
        handle = wired()
        handle.reset()
        handle.load_scenario(dict(scenario))
        defaults = target.gateway_defaults()  # type: ignore[attr-defined]
        yield GatewayUnderTest(target, handle, defaults["api_keys"], defaults["model"])
        return
    if "gateway.start" not in target.operations():
        raise TargetError(f"{target.description} implements gateway.chat but not gateway.start, which it needs")
    with FakeLSThread(csrf_token=_CSRF, scenario=parse_scenario(dict(scenario), source="gateway scenario")) as fake:
        started = target.call("gateway.start", ls_address=fake.address, csrf_token=_CSRF)
        try:
            yield GatewayUnderTest(target, InProcessLs(fake, _CSRF), started["api_keys"], started["model"])
        finally:
            if "gateway.stop" in target.operations():
                target.call("gateway.stop")


def _shortened(value: Any) -> Any:
    if isinstance(value, str) and len(value) > 200:
        return f"{value[:100]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: _shortened(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shortened(v) for v in value]
    return value

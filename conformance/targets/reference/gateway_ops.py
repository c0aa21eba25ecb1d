"""The gateway operations on the reference target: the engine's real HTTP front, served in-process.

``gateway.start`` serves a fresh :class:`engine.http.gateway.Gateway` with uvicorn on a loopback port;
``gateway.chat``, ``gateway.respond``, ``gateway.retrieve`` and ``gateway.ledger`` then go through the same
HTTP client as a black-box target (:class:`conformance.targets.HttpTarget`), so the reference is judged over
real HTTP.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from conformance.targets import CallerScope, HttpOptions, HttpTarget, ReadScope
from engine.cascade import ClientIdentity, PollSettings
from engine.http import Gateway, GatewayConfig, HttpSettings, ServedGateway

_KEYS = {"conformance-key-alpha": "caller-alpha", "conformance-key-beta": "caller-beta"}
_MODEL = "claude-sonnet-4-6"
_OTHER_MODEL = "gpt-5"
# The kit's requests carry their end user in the body as given; a read carries it where the engine reads one.
_SCOPE = CallerScope("user", (ReadScope("header", "x-response-user"),))
_FAST_POLL_S = 0.002
# The reference gateway's declared time limits (TURN-5): short, so a turn that outlasts them is quick to play.
_WAIT_LIMIT_S = 1.5
_HEARTBEAT_S = 0.25
_IDENTITY = ClientIdentity(os="linux", hardware="x86_64", extension_version="2.0.67", request_id=lambda: 1)


# How long the target's close waits for gateways still stopping in the background.
_STOP_JOIN_S = 15.0


class GatewayOperations:
    _served_gateway: ServedGateway | None = None
    _gateway_client: HttpTarget | None = None
    _stopping: tuple[threading.Thread, ...] = ()

    def _new_gateway(self, ls_address: str, csrf_token: str) -> Gateway:
        """The gateway one ``gateway.start`` serves (a hook for deliberately broken variants)."""
        config = GatewayConfig(
            ls_address=ls_address,
            csrf_token=csrf_token,
            http=HttpSettings(api_keys=_KEYS, heartbeat_s=_HEARTBEAT_S),
            poll=PollSettings(poll_interval_s=_FAST_POLL_S, max_wait_s=_WAIT_LIMIT_S),
            identity=_IDENTITY,
        )
        return Gateway(config)

    def gateway_start(self, ls_address: str, csrf_token: str) -> dict[str, Any]:
        self.gateway_stop()
        self._served_gateway = ServedGateway(self._new_gateway(ls_address, csrf_token)).start()
        options = HttpOptions(api_keys=tuple(_KEYS), model=_MODEL, ledger_path="/v1/ledger", caller_scope=_SCOPE)
        self._gateway_client = HttpTarget(self._served_gateway.url, options)
        # The engine counts cache writes as prompt tokens (engine.http.shapes.openai_usage).
        return {
            "api_keys": list(_KEYS),
            "model": _MODEL,
            "other_model": _OTHER_MODEL,
            "cache_writes": "prompt",
            "wait_limit_s": _WAIT_LIMIT_S,
            "heartbeat_s": _HEARTBEAT_S,
        }

    def gateway_chat(self, request: dict[str, Any], api_key: str, hang_up_after: int | None = None) -> dict[str, Any]:
        hang_up = {"hang_up_after": hang_up_after} if hang_up_after is not None else {}
        return self._http().call("gateway.chat", request=request, api_key=api_key, **hang_up)

    @contextlib.contextmanager
    def impatient(self) -> Iterator[None]:
        """A rate limit the served gateway answers reaches the property as it came (a property judging how
        the gateway passes one on), not waited out by the HTTP client in between."""
        with self._http().impatient():
            yield

    def gateway_respond(self, request: dict[str, Any], api_key: str) -> dict[str, Any]:
        return self._http().call("gateway.respond", request=request, api_key=api_key)

    def gateway_retrieve(self, response_id: str, api_key: str, **signal: str | None) -> dict[str, Any]:
        return self._http().call("gateway.retrieve", response_id=response_id, api_key=api_key, **signal)

    def gateway_ledger(self) -> dict[str, Any]:
        return self._http().call("gateway.ledger")

    def gateway_stop(self) -> dict[str, Any]:
        if self._gateway_client is not None:
            self._gateway_client.close()
            self._gateway_client = None
        if self._served_gateway is not None:
            served, self._served_gateway = self._served_gateway, None
            # uvicorn's shutdown sleeps 0.1 s whatever is still open; the next example need not wait for it.
            stopping = threading.Thread(target=served.stop, name="reference-gateway-stop", daemon=True)
            stopping.start()
            self._stopping = (*(t for t in self._stopping if t.is_alive()), stopping)
        return {}

    def _finish_stopping(self) -> None:
        """Wait for the gateways still stopping (the target is closing)."""
        for thread in self._stopping:
            thread.join(_STOP_JOIN_S)
        self._stopping = ()

    def _http(self) -> HttpTarget:
        if self._gateway_client is None:
            raise RuntimeError("no gateway is being served: call gateway.start first")
        return self._gateway_client

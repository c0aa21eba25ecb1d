"""``FGW_BUSY_EVERY=N``: a gateway with one upstream account, as a busy public one is. After every N
requests that reach a turn it cools down for ``FGW_COOLDOWN_S``; a request meanwhile is answered, in
turn, with HTTP 200 and an event stream (or body) holding one error whose wait is only in its message
text ("retry in 1 s"), or with 429 and ``retry_after_ms``. 0 (the default): never busy."""

from __future__ import annotations

import itertools
import math
import threading
import time

from tests.support.foreigngw.http_io import GatewayError, Reply, dumps, log


class Busy:
    def __init__(self, every: int, cooldown_s: float) -> None:
        self._every = every
        self._cooldown_s = cooldown_s
        self._lock = threading.Lock()
        self._turns = 0
        self._until = 0.0
        self._answers = itertools.cycle(("in-band", "429"))

    def gate(self, reply: Reply, stream: bool) -> bool:
        """True when the request was answered busy (nothing else is to be done for it)."""
        if self._every <= 0:
            return False
        with self._lock:
            now = time.monotonic()
            remaining = self._until - now
            if remaining <= 0:
                self._turns += 1
                if self._turns % self._every == 0:
                    self._until = now + self._cooldown_s
                return False
            answer = next(self._answers)
        seconds = max(1, math.ceil(remaining))
        message = f"all accounts temporarily unavailable, retry in {seconds} s"
        log(f"busy: answered {'429' if answer == '429' else 'an in-band error'} ({message})")
        if answer == "429":
            raise GatewayError(
                429, message, "rate_limit_error", "rate_limited", retry_after_ms=math.ceil(remaining * 1000)
            )
        document = {"error": {"message": message, "type": "rate_limit_error"}}
        if stream:
            reply.start_events()
            reply.event(dumps(document))
            reply.event("[DONE]")
        else:
            reply.json(200, document)
        return True

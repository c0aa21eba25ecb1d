"""The request pace the kit keeps with a gateway: additive increase, multiplicative decrease.

A gateway's own limiter answers a client that comes too fast with 429s (or with errors inside 200
streams). Waiting each one out and coming back at full speed meets the limiter again at once. The
pace starts free (or at ``--max-rps``); a rate-limit signal halves the rate the kit was keeping (the
rate it was actually sending at, when free), and every answer that was no rate limit raises it by a
step, until it is free again (or back at ``--max-rps``). The pace waits before each request are
tallied with the rate-limit waits (:class:`Waits`): the report shows them per invariant.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from conformance.interrupts import raise_if_stopping
from conformance.refusals import wait_hint

_T = TypeVar("_T")

# The slowest pace a run of rate limits can bring the kit down to, and the slowest --max-rps: one
# request in ten seconds. The fastest --max-rps.
MIN_RPS = 0.1
MAX_RPS = 1000.0
# What an answer without a rate limit adds to the pace, in requests per second.
STEP_RPS = 1.0
# A pace this fast, with no --max-rps, is no pace at all: the kit sends freely again.
FREE_RPS = 20.0
# How many recent requests measure the rate the kit was sending at when the first rate limit came.
_WINDOW = 8


@dataclass
class Waits:
    """How often and how long the kit waited for the gateway (rate limits and pace)."""

    count: int = 0
    seconds: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds

    def since(self, before: Waits) -> Waits:
        return Waits(self.count - before.count, self.seconds - before.seconds)

    def copy(self) -> Waits:
        return Waits(self.count, self.seconds)


class Pace:
    """Requests per second, or free (None) when no rate limit was met and no ``max_rps`` caps it."""

    def __init__(
        self,
        max_rps: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_rps = max_rps
        self.rps: float | None = max_rps
        self._clock = clock
        self._sleep = sleep
        self._sent: deque[float] = deque(maxlen=_WINDOW)
        self._rested = False

    def before_request(self) -> float:
        """Wait for the request's slot; the seconds waited (0.0 when free, on time, or right after a wait
        the gateway asked for)."""
        waited = 0.0
        if self._rested:
            self._rested = False
        elif self.rps is not None and self._sent:
            due = self._sent[-1] + 1 / self.rps
            waited = max(0.0, due - self._clock())
            if waited > 0:
                self._sleep(waited)
        self._sent.append(self._clock())
        return waited

    def limited(self) -> None:
        """A rate-limit signal: half the pace the kit was keeping (or sending at). The request that
        follows the wait the gateway asked for goes at once: that wait was its slot."""
        current = self.rps if self.rps is not None else min(FREE_RPS, self._sending_rate())
        self.rps = max(MIN_RPS, current / 2)
        self._rested = True

    def passed(self) -> None:
        """An answer that was no rate limit: a step faster, up to ``max_rps`` (or free)."""
        if self.rps is None:
            return
        self.rps += STEP_RPS
        ceiling = self.max_rps if self.max_rps is not None else FREE_RPS
        if self.rps >= ceiling:
            self.rps = self.max_rps

    def describe(self) -> str:
        """``pace now 2.5 requests/s``, for the line the terminal shows at a wait."""
        return "pace: free" if self.rps is None else f"pace now {self.rps:g} requests/s"

    def _sending_rate(self) -> float:
        if len(self._sent) < 2:
            return FREE_RPS
        span = self._sent[-1] - self._sent[0]
        return (len(self._sent) - 1) / span if span > 0 else FREE_RPS * 2


class Patience:
    """How the kit waits for one gateway: each request in its pace's slot, a rate limit (429, 503, a
    transient error inside a 2xx) waited out as the gateway asks within ``budget_s`` over all tries of
    one request, every wait tallied."""

    def __init__(
        self,
        budget_s: float,
        max_rps: float | None,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        say: Callable[[str], None],
    ) -> None:
        self.budget_s = budget_s
        self.pace = Pace(max_rps, clock=clock, sleep=sleep)
        self.waits = Waits()
        self.waited_s = 0.0  # how long the last request waited out rate limits
        self._sleep = sleep
        self._say = say

    def run(self, attempt: Callable[[], _T], read: Callable[[_T], tuple[int, Any, Any]], who: str) -> _T:
        """``attempt()`` until its answer (``read``: status, headers, body) is no rate limit, or the next
        wait would overrun the budget; the last answer."""
        waited = 0.0
        while True:
            paced = self.pace.before_request()
            if paced > 0:
                self.waits.add(paced)
            answer = attempt()
            status, headers, body = read(answer)
            wait = wait_hint(status, headers, body)
            if wait is None:
                self.pace.passed()
            else:
                self.pace.limited()
            if wait is None or waited + wait > self.budget_s:
                self.waited_s = waited
                return answer
            self._say(
                f"  {who} answered {status} ({'rate limited' if status >= 300 else 'a transient error inside'}): "
                f"waiting {wait:.1f} s as it asks, then trying again "
                f"({self.budget_s - waited - wait:.0f} s of --rate-limit-wait left; {self.pace.describe()})"
            )
            self._sleep(wait)
            raise_if_stopping()  # no retry after a stop signal that landed where it could not raise
            self.waits.add(wait)
            waited += wait

"""A stop signal that lands where Python cannot raise it (a finalizer, a garbage-collector callback) is
remembered, not lost: the waiting loops the command's own loop does not drive (a launched gateway's wait
until it answers, a wait a rate-limited gateway asked for) stop at their next step, instead of waiting out
their whole timeout with the signal already received."""

from __future__ import annotations

import shlex
import signal
import sys
import time

import pytest

from conformance.interrupts import Interrupted, raise_if_stopping, stop_signals_interrupt
from conformance.targets import LaunchedGateway, LaunchSpec
from conformance.targets._pace import Patience
from tests.support.procs import alive

_NEVER_LISTENS = shlex.join([sys.executable, "-c", "import time; time.sleep(60)"]) + " {port}"


class _SignalledInFinalizer:
    """Its finalizer receives SIGTERM: the handler's Interrupted is raised inside ``__del__``, where Python
    can only report it as unraisable and carry on."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)


def _swallow_a_sigterm() -> None:
    _SignalledInFinalizer()  # dropped at once: its finalizer runs here


def test_a_swallowed_signal_stops_the_wait_for_a_launched_gateway_that_never_answers() -> None:
    gateway = LaunchedGateway(LaunchSpec(_NEVER_LISTENS, wiring="none", ready_timeout_s=30), host="127.0.0.1", port=0)
    with stop_signals_interrupt() as watch:
        _swallow_a_sigterm()
        assert watch.signum == signal.SIGTERM, "the finalizer's signal was not received"
        started = time.monotonic()
        with pytest.raises(Interrupted) as stopped:
            gateway.start()
    assert stopped.value.signum == signal.SIGTERM
    assert time.monotonic() - started < 10, "waited for the gateway with the signal already received"
    assert gateway.pid is not None
    assert not alive(gateway.pid), "the launched gateway outlived the interrupted start"


def test_raise_if_stopping_raises_only_for_a_signal_received_outside_a_shield() -> None:
    raise_if_stopping()  # no block running: nothing to stop
    with stop_signals_interrupt() as watch:
        raise_if_stopping()  # no signal yet
        with watch.shield():
            _swallow_a_sigterm()
            raise_if_stopping()  # shielded: clean-up is not cut short
        with pytest.raises(Interrupted):
            raise_if_stopping()
    raise_if_stopping()  # the block is over: its watch no longer counts


def test_a_signal_swallowed_during_a_rate_limit_wait_sends_no_retry() -> None:
    """The wait a 429 asked for ends with the signal received: the request is not tried again."""
    attempts: list[int] = []
    patience = Patience(60, None, clock=time.monotonic, sleep=lambda _s: _swallow_a_sigterm(), say=lambda _t: None)

    def attempt() -> int:
        attempts.append(429)
        return 429

    with stop_signals_interrupt(), pytest.raises(Interrupted):
        patience.run(attempt, lambda status: (status, {"retry-after": "1"}, b""), "the gateway")
    assert attempts == [429]

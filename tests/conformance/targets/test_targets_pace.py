"""The pace an HTTP target keeps with a gateway (conformance/targets/_pace.py): after a rate limit it
halves its pace instead of coming back at full speed, speeds up a step per answer that was no rate
limit, never beyond ``--max-rps``, and every wait is tallied for the report."""

from __future__ import annotations

import pytest

from conformance.errors import TargetSpecError
from conformance.targets import HttpOptions, HttpTarget, _http, http_options
from conformance.targets._pace import FREE_RPS, MIN_RPS, STEP_RPS, Pace, Waits
from tests.conformance.targets.test_targets_http_waits import COMPLETION, REQUEST, cooling, queued


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def _pace(max_rps: float | None = None) -> tuple[Pace, _Clock]:
    clock = _Clock()
    return Pace(max_rps, clock=clock, sleep=clock.sleep), clock


def test_free_until_a_rate_limit_then_half_the_rate_it_was_sending_at() -> None:
    pace, clock = _pace()
    for _ in range(5):
        assert pace.before_request() == 0.0
        clock.now += 0.25  # 4 requests per second
    pace.limited()
    assert pace.rps == 2.0
    assert pace.before_request() == 0.0  # the retry after the wait the gateway asked for: its slot
    assert pace.before_request() == pytest.approx(0.5)  # then one every half second
    assert clock.slept == [0.5]


def test_a_first_rate_limit_never_starts_above_half_the_free_pace() -> None:
    pace, _clock = _pace()
    for _ in range(3):
        pace.before_request()  # no time passes: an endless rate
    pace.limited()
    assert pace.rps == FREE_RPS / 2


@pytest.mark.parametrize(("limits", "rps"), [(6, 10 / 64), (7, MIN_RPS), (8, MIN_RPS)])
def test_halving_stops_at_the_slowest_pace(limits: int, rps: float) -> None:
    pace, _clock = _pace(max_rps=10.0)
    for _ in range(limits):
        pace.limited()
    assert pace.rps == pytest.approx(rps)  # 10/64 = 0.156, 10/128 = 0.078 is below the floor of 0.1


def test_each_answer_that_is_no_rate_limit_speeds_up_a_step_until_free_again() -> None:
    pace, _clock = _pace()
    pace.before_request()
    pace.limited()  # free -> 10 requests/s
    steps = round((FREE_RPS - FREE_RPS / 2) / STEP_RPS)
    for _ in range(steps - 1):
        pace.passed()
    assert pace.rps == pytest.approx(FREE_RPS - STEP_RPS)  # one under: still paced
    pace.passed()
    assert pace.rps is None  # at the free pace: free


@pytest.mark.parametrize(("passes", "rps"), [(1, 3.0), (2, 4.0), (3, 4.0)])
def test_max_rps_is_the_ceiling_of_the_speed_up(passes: int, rps: float) -> None:
    pace, _clock = _pace(max_rps=4.0)
    pace.limited()  # 4 -> 2
    for _ in range(passes):
        pace.passed()
    assert pace.rps == rps


def test_max_rps_spaces_requests_from_the_first() -> None:
    pace, clock = _pace(max_rps=4.0)
    assert [pace.before_request() for _ in range(3)] == [0.0, 0.25, 0.25]
    clock.now += 1.0
    assert pace.before_request() == 0.0  # its slot has long come


def test_waits_are_counted_and_summed() -> None:
    waits = Waits()
    waits.add(1.5)
    before = waits.copy()
    waits.add(0.25)
    assert (waits.count, waits.seconds) == (2, 1.75)
    assert waits.since(before) == Waits(1, 0.25)


# ---------------------------------------------------------------------- through the HTTP target


def test_after_a_rate_limit_the_target_slows_down_and_tallies_every_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(_http, "_pace_clock", clock)
    monkeypatch.setattr(_http, "_sleep", clock.sleep)
    with queued(cooling(1500), (200, {}, COMPLETION)) as (url, seen):
        target = HttpTarget(url, HttpOptions(rate_limit_wait_s=10))
        try:
            for _ in range(3):
                assert target.call("gateway.chat", request=REQUEST, api_key="k")["status"] == 200
            waits = target.waited()
        finally:
            target.close()
    assert seen == ["/v1/chat/completions"] * 4
    # The 429's wait, the retry at once (10 per s; it passes: 11), the next two requests paced (then 12).
    assert clock.slept == [1.5, pytest.approx(1 / 11, abs=1e-6), pytest.approx(1 / 12, abs=1e-6)]
    assert waits.count == 3
    assert waits.seconds == pytest.approx(1.5 + 1 / 11 + 1 / 12, abs=1e-5)


@pytest.mark.parametrize(("given", "kept"), [(0.1, 0.1), (1000.0, 1000.0), (None, None)])
def test_max_rps_is_requests_per_second_from_a_tenth_to_a_thousand(given: float | None, kept: float | None) -> None:
    options = http_options("http://127.0.0.1:9", max_rps=given, model="m")
    assert options is not None
    assert options.max_rps == kept


@pytest.mark.parametrize("given", [0.09, 1000.1, 0.0, float("nan")])
def test_max_rps_outside_that_range_is_a_usage_error(given: float) -> None:
    with pytest.raises(TargetSpecError) as info:
        http_options("http://127.0.0.1:9", max_rps=given)
    assert str(info.value) == f"--max-rps is requests per second from 0.1 to 1000, got {given:g}"

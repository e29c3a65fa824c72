"""Token buckets per key: burst, even refill, all-or-nothing takes, refunds, bounded keys."""

from __future__ import annotations

import pytest

from tickets.buckets import IDLE, Buckets


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_bucket_allows_its_burst_then_says_how_long_to_wait(clock: Clock) -> None:
    buckets = Buckets(10, 60.0, clock=clock)
    assert [buckets.take("a") for _ in range(10)] == [0.0] * 10
    assert buckets.take("a") == pytest.approx(6.0)  # one token every 6 s
    assert buckets.take("b") == 0.0  # another key has its own bucket


def test_a_bucket_refills_evenly_and_never_past_its_capacity(clock: Clock) -> None:
    buckets = Buckets(10, 60.0, clock=clock)
    assert buckets.take("a", 10) == 0.0
    clock.now += 18
    assert buckets.take("a", 3) == 0.0
    assert buckets.take("a") == pytest.approx(6.0)
    clock.now += 3600
    assert buckets.take("a", 10) == 0.0
    assert buckets.take("a") > 0


def test_a_take_is_all_or_nothing(clock: Clock) -> None:
    buckets = Buckets(10, 60.0, clock=clock)
    assert buckets.take("a", 8) == 0.0
    assert buckets.take("a", 5) == pytest.approx(18.0)
    assert buckets.take("a", 2) == 0.0  # the refused 5 took nothing


def test_a_refund_gives_a_token_back_up_to_the_capacity(clock: Clock) -> None:
    buckets = Buckets(2, 60.0, clock=clock)
    buckets.take("a", 2)
    buckets.give_back("a")
    assert buckets.take("a") == 0.0
    assert buckets.take("a") > 0
    buckets.give_back("b", 5)
    assert buckets.take("b", 2) == 0.0
    assert buckets.take("b") > 0


def test_check_spends_nothing_and_waits_for_a_refused_request_to_fit(clock: Clock) -> None:
    buckets = Buckets(60, 60.0, clock=clock)
    assert buckets.check("a") == 0.0
    assert len(buckets) == 0  # looking keeps no state
    assert buckets.take("a", 50) == 0.0
    assert buckets.take("a", 30) == pytest.approx(20.0)
    assert buckets.check("a") == pytest.approx(20.0)  # 10 are free, but not the 30
    clock.now += 20
    assert buckets.check("a") == 0.0
    assert buckets.take("a", 30) == 0.0


def test_a_bucket_idle_past_the_idle_time_starts_full(clock: Clock) -> None:
    buckets = Buckets(3, 3600.0, clock=clock)  # a window longer than the idle time
    assert buckets.take("a", 3) == 0.0
    clock.now += IDLE
    assert buckets.take("a") > 0  # 600 s refilled half a token
    clock.now += IDLE + 1
    assert buckets.take("a", 3) == 0.0


def test_keys_are_bounded_and_the_least_recently_seen_goes_first(clock: Clock) -> None:
    buckets = Buckets(1, 60.0, clock=clock, max_keys=3)
    for key in ("a", "b", "c"):
        buckets.take(key)
    buckets.take("a")  # a is seen again, so b is now the oldest
    buckets.take("d")
    assert len(buckets) == 3
    assert buckets.take("b") == 0.0  # b was dropped: it starts full
    assert buckets.take("a") > 0  # a was kept, still empty
    assert len(buckets) == 3

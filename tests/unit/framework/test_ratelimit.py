from __future__ import annotations

import pytest

from ome.framework import ratelimit

from .fakeclock import FakeClock


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 0.005), (1, 0.010), (2, 0.020), (4, 0.080), (17, 655.36), (18, 1000.0), (5000, 1000.0)],
    ids=["first", "second", "third", "fifth", "below-cap", "capped", "huge-no-overflow"],
)
def test_item_backoff_doubles_then_caps(failures: int, delay: float) -> None:
    limiter = ratelimit.ItemExponentialFailureRateLimiter(base=0.005, max_delay=1000.0)
    delays = [limiter.when("ns/a") for _ in range(failures + 1)]
    assert delays[-1] == pytest.approx(delay)
    assert limiter.num_requeues("ns/a") == failures + 1


def test_item_backoff_is_per_item_and_forget_resets() -> None:
    limiter = ratelimit.ItemExponentialFailureRateLimiter()
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == pytest.approx(0.005)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_bucket_allows_burst_then_reserves_at_qps() -> None:
    clock = FakeClock()
    bucket = ratelimit.BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    # Reservations stack up: each further token exists 100 ms after the previous one.
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    clock.step(0.2)
    assert bucket.when("z") == pytest.approx(0.1)


def test_bucket_spaces_callers_that_wait_their_delay_100ms_apart() -> None:
    clock = FakeClock()
    bucket = ratelimit.BucketRateLimiter(qps=10, burst=100, clock=clock)
    for i in range(100):
        bucket.when(i)
    delays = []
    for i in range(5):
        delay = bucket.when(i)
        delays.append(delay)
        clock.step(delay)
    assert delays == pytest.approx([0.1] * 5)


def test_bucket_refills_up_to_burst_only() -> None:
    clock = FakeClock()
    bucket = ratelimit.BucketRateLimiter(qps=10, burst=3, clock=clock)
    clock.step(3600)
    assert [bucket.when(i) for i in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_max_of_returns_longest_and_every_limiter_records_the_failure() -> None:
    short = ratelimit.ItemExponentialFailureRateLimiter(base=0.001, max_delay=1.0)
    long = ratelimit.ItemExponentialFailureRateLimiter(base=0.5, max_delay=10.0)
    limiter = ratelimit.MaxOfRateLimiter(short, long)
    assert limiter.when("a") == pytest.approx(0.5)
    assert limiter.when("a") == pytest.approx(1.0)
    assert short.num_requeues("a") == 2
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert short.num_requeues("a") == 0 and long.num_requeues("a") == 0


def test_default_controller_limiter_is_item_backoff_until_bucket_runs_dry() -> None:
    clock = FakeClock()
    limiter = ratelimit.default_controller_rate_limiter(clock=clock)
    assert [limiter.when(i) for i in range(100)] == pytest.approx([0.005] * 100)
    assert limiter.when("one-too-many") == pytest.approx(0.1)


@pytest.mark.parametrize(("base", "max_delay"), [(0.0, 1.0), (1.0, 0.5)], ids=["zero-base", "max<base"])
def test_item_backoff_rejects_bad_settings(base: float, max_delay: float) -> None:
    with pytest.raises(ValueError):
        ratelimit.ItemExponentialFailureRateLimiter(base=base, max_delay=max_delay)

"""The per-client window limit: a count per client, a retry time, and state bounded by the window and a cap."""

from __future__ import annotations

from saip.gateway.surface.limits import OVERFLOW, WindowLimit, seconds_left


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_over_its_limit_is_told_when_the_window_ends_and_others_still_pass() -> None:
    clock = Clock()
    limit = WindowLimit(3, 60, clock=clock)
    assert [limit.take("a") for _ in range(3)] == [None, None, None]
    clock.now += 15
    assert limit.take("a") == 45.0  # the window [1000, 1060) ends in 45 s
    assert limit.take("b") is None
    clock.now += 45
    assert limit.take("a") is None


def test_the_windows_start_when_the_limit_is_made_not_at_a_multiple_of_the_clock() -> None:
    clock = Clock()
    clock.now = 3599.5  # the monotonic clock half a second before a multiple of the hour
    limit = WindowLimit(2, 3600, clock=clock)
    assert [limit.take("a") for _ in range(2)] == [None, None]
    clock.now += 1
    assert limit.take("a") == 3599.0  # the count runs on: the window began at 3599.5
    clock.now += 3599
    assert limit.take("a") is None


def test_the_state_holds_only_the_current_window_s_clients_and_at_most_the_cap() -> None:
    clock = Clock()
    limit = WindowLimit(2, 60, clock=clock, max_clients=100)
    for index in range(5000):
        limit.take(f"client-{index}")
    assert len(limit) == 101  # 100 clients and the shared count of the others
    assert limit.take(OVERFLOW) is not None  # the others share one count, already spent
    clock.now += 60
    limit.take("late")
    assert len(limit) == 1


def test_no_limit_counts_nothing() -> None:
    limit = WindowLimit(0, 60)
    assert all(limit.take("a") is None for _ in range(1000))
    assert len(limit) == 0


def test_the_retry_is_whole_seconds_and_at_least_one() -> None:
    assert (seconds_left(0.01), seconds_left(4.2), seconds_left(5.0)) == (1, 5, 5)

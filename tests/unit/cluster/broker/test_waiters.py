"""Waiters (Kafka's purgatories as conditions), on an injected monotonic clock."""

import threading

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.waiters import Waiters


class Monotonic:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_a_commit_wait_ends_at_its_deadline_on_the_injected_clock():
    clock = Monotonic()
    waiters = Waiters(clock)
    asked = []

    def outcome():
        asked.append(clock.now_s)
        clock.now_s += 1.0          # each look at the partition "takes" a second
        return None

    assert waiters.await_commit(outcome, deadline=101.5) == ErrorCode.request_timed_out
    assert asked == [100.0, 101.0]


def test_a_commit_wait_returns_the_outcome_once_a_notification_brings_it():
    waiters = Waiters()
    committed = threading.Event()
    result = []
    waiter = threading.Thread(target=lambda: result.append(waiters.await_commit(
        lambda: ErrorCode.none if committed.is_set() else None, deadline=waiters.monotonic() + 10)))
    waiter.start()
    committed.set()
    waiters.notify(followers=False, consumers=False)
    waiter.join(5)
    assert result == [ErrorCode.none]


def test_each_kind_of_change_wakes_only_its_waiters():
    waiters = Waiters()
    follower, consumer = waiters.follower_generation, waiters.data_generation
    waiters.notify(commits=False, consumers=False)          # an append
    assert waiters.wait_for_data(0, follower, follower=True)
    assert not waiters.wait_for_data(0, consumer)
    waiters.notify(followers=False)                         # a high watermark move
    assert waiters.wait_for_data(0, consumer)

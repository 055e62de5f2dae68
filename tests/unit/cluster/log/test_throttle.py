"""The background I/O throttle (throttle.py): a burst, then the rate; a new rate at once."""

import threading
import time

import pytest

from kafkactl.cluster.log.throttle import Throttle


def test_throttle_allows_a_burst_then_the_rate():
    now = [100.0]
    throttle = Throttle(1000, clock=lambda: now[0])
    assert throttle.record(500) == 0              # within the one-second burst
    assert throttle.record(500) == 0
    assert throttle.record(1000) == pytest.approx(1.0)
    now[0] += 1.0
    assert throttle.record(1000) == pytest.approx(1.0)
    assert Throttle(2**63 - 1).record(10**9) == 0


def test_a_new_rate_forgives_what_was_counted_at_the_old_one():
    now = [100.0]
    throttle = Throttle(1, clock=lambda: now[0])
    assert throttle.record(100_000) == pytest.approx(99_999)      # a day's work at 1 byte/s
    throttle.set_rate(1_000_000)
    assert throttle.record(100_000) == 0                           # not behind the old schedule


def test_a_pause_ends_when_the_rate_changes_or_the_work_stops():
    throttle, stop = Throttle(1), threading.Event()
    threading.Timer(0.3, throttle.set_rate, args=(10**9,)).start()
    started = time.monotonic()
    assert throttle.pause(3600, stop) is True                     # woke by the new rate, not stopped
    assert time.monotonic() - started < 2
    threading.Timer(0.3, stop.set).start()
    assert throttle.pause(3600, stop) is False
    assert throttle.pause(0.05, threading.Event()) is True         # a short wait runs its course

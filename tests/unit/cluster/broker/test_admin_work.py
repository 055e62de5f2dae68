"""The admin-work thread: ZooKeeper work off the request threads, bounded."""

import threading

import pytest

from kafkactl.cluster.broker.admin_work import AdminBusy, AdminWork


def test_work_runs_on_its_own_thread_in_order_and_failures_reach_the_future():
    work = AdminWork(lambda: "zk")
    work.start()
    try:
        seen = []
        first = work.submit(lambda zk: seen.append((zk, threading.current_thread().name)) or 1)
        failing = work.submit(lambda zk: 1 / 0)
        assert first.result(5) == 1 and seen == [("zk", "admin-work")]
        with pytest.raises(ZeroDivisionError):
            failing.result(5)
    finally:
        work.stop()


def test_a_full_queue_and_a_passed_deadline_refuse_without_waiting():
    clock = [100.0]
    work = AdminWork(lambda: None, monotonic=lambda: clock[0], bound=1)   # not started: nothing drains
    work.submit(lambda zk: None)
    with pytest.raises(AdminBusy):
        work.submit(lambda zk: None).result(0)
    late = AdminWork(lambda: None, monotonic=lambda: clock[0])
    stale = late.submit(lambda zk: "ran", deadline=99.0)
    late.start()
    try:
        with pytest.raises(AdminBusy):
            stale.result(5)
        assert late.submit(lambda zk: "ran", deadline=101.0).result(5) == "ran"
    finally:
        late.stop()

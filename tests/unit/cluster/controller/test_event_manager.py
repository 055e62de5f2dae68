import threading

import pytest

from kafkactl.cluster.controller.event_manager import ControllerEventManager, EventQueueFull


def test_events_run_one_at_a_time_in_order_on_one_thread():
    manager = ControllerEventManager()
    seen, threads, done = [], set(), threading.Event()
    for i in range(100):
        def run(i=i):
            seen.append(i)
            threads.add(threading.current_thread().name)
            if i == 99:
                done.set()
        manager.put(f"e{i}", run)
    manager.start()
    assert done.wait(5)
    manager.stop()
    assert seen == list(range(100)) and threads == {"controller-event-thread"}


def test_a_failing_event_does_not_stop_the_loop():
    manager = ControllerEventManager()
    done = threading.Event()
    manager.put("boom", lambda: 1 / 0)
    manager.put("after", done.set)
    manager.start()
    assert done.wait(5)
    manager.stop()


def test_the_queue_is_bounded():
    manager = ControllerEventManager(max_queue_size=2, put_timeout_s=0.05)
    manager.put("a", lambda: None)
    manager.put("b", lambda: None)
    with pytest.raises(EventQueueFull):
        manager.put("c", lambda: None)

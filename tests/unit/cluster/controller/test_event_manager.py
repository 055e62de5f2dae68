import threading
import time
from dataclasses import dataclass
from typing import ClassVar

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import events as ev
from kafkactl.cluster.controller.event_manager import ControllerEventManager, EventQueueFull
from kafkactl.cluster.invariant import InvariantViolation


@dataclass(frozen=True)
class Numbered(ev.ControllerEvent):
    number: int
    name: ClassVar[str] = "Numbered"


def test_events_run_one_at_a_time_in_order_on_one_thread():
    seen, threads, done = [], set(), threading.Event()

    def process(event):
        seen.append(event.number)
        threads.add(threading.current_thread().name)
        if event.number == 99:
            done.set()
    manager = ControllerEventManager(process)
    for i in range(100):
        manager.put(Numbered(i))
    manager.start()
    assert done.wait(5)
    manager.stop()
    assert seen == list(range(100)) and threads == {"controller-event-thread"}
    assert manager.processed == 100 and manager.max_queue_time_s >= 0


def test_a_failing_event_does_not_stop_the_loop():
    done = threading.Event()

    def process(event):
        if event.number == 0:
            raise ZeroDivisionError()
        done.set()
    manager = ControllerEventManager(process)
    manager.put(Numbered(0))
    manager.put(Numbered(1))
    manager.start()
    assert done.wait(5)
    manager.stop()


def test_the_queue_is_bounded():
    manager = ControllerEventManager(lambda event: None, max_queue_size=2, put_timeout_s=0.05)
    manager.put(Numbered(1))
    manager.put(Numbered(2))
    started = time.monotonic()
    with pytest.raises(EventQueueFull):
        manager.put(Numbered(3))
    assert time.monotonic() - started < 2
    assert [e.number for e in manager.queued()] == [1, 2]


def test_a_blocked_put_goes_in_once_the_thread_takes_an_event():
    release = threading.Event()
    manager = ControllerEventManager(lambda event: release.wait(5), max_queue_size=1, put_timeout_s=5)
    manager.put(Numbered(1))
    manager.start()
    manager.put(Numbered(2))            # the thread took 1: room for 2
    release.set()
    manager.stop()


def _shutdown_waiter():
    answers = []
    return answers, ev.ControlledShutdown(3, 7, answers.append)


def test_preempt_answers_a_queued_controlled_shutdown_not_controller_and_drops_the_rest():
    manager = ControllerEventManager(lambda event: pytest.fail("nothing may be processed"))
    answers, shutdown = _shutdown_waiter()
    manager.put(ev.TopicChange())
    manager.put(shutdown)
    manager.put(ev.Reelect())
    assert manager.preempt(lambda event: event.needs_active) == 2
    assert answers == [(ErrorCode.not_controller, [])]
    assert manager.queued() == [ev.Reelect()]        # lifecycle events stay


def test_stop_preempts_what_is_queued_and_what_comes_after():
    block, blocked = threading.Event(), threading.Event()

    def process(event):
        blocked.set()
        block.wait(5)
    manager = ControllerEventManager(process)
    manager.put(Numbered(0))
    answers, shutdown = _shutdown_waiter()
    manager.put(shutdown)
    manager.start()
    assert blocked.wait(5)
    threading.Timer(0.2, block.set).start()
    started = time.monotonic()
    manager.stop()
    assert answers == [(ErrorCode.not_controller, [])]
    late_answers, late = _shutdown_waiter()
    manager.put(late)
    assert late_answers == [(ErrorCode.not_controller, [])]
    assert time.monotonic() - started < 5


def test_an_invariant_violation_goes_to_on_fatal_not_to_the_log():
    fatal, done = [], threading.Event()

    def process(event):
        if event.number == 0:
            raise InvariantViolation("broken")
        done.set()
    manager = ControllerEventManager(process, on_fatal=lambda violation, event: fatal.append((str(violation), event)))
    manager.put(Numbered(0))
    manager.put(Numbered(1))
    manager.start()
    assert done.wait(5)
    manager.stop()
    assert fatal == [("broken", Numbered(0))]

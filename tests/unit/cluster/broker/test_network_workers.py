"""The worker pool never queues a task behind busy workers: handlers block
(an acks=-1 produce waits for the followers' fetches, which need workers of
their own), so a fixed pool could deadlock; idle workers are reused and end
after their idle time."""

import threading
import time

from kafkactl.cluster.broker.network.workers import WorkerPool


def test_tasks_waiting_for_a_later_task_all_finish():
    pool = WorkerPool(idle_thread_s=1.0)
    released = threading.Event()
    finished = []
    lock = threading.Lock()

    def waits_for_release(n):        # a produce waiting for its ISR
        assert released.wait(5), "deadlocked: the releasing task never ran"
        with lock:
            finished.append(n)

    for n in range(40):
        pool.submit(waits_for_release, n)
    pool.submit(released.set)        # the follower fetch that commits them
    deadline = time.monotonic() + 5
    while len(finished) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(finished) == list(range(40))
    assert pool.threads == 41
    pool.stop()


def test_idle_workers_are_reused_then_end():
    pool = WorkerPool(idle_thread_s=0.3)
    done = threading.Semaphore(0)
    for _ in range(20):              # one after the other: one thread is enough
        pool.submit(done.release)
        assert done.acquire(timeout=5)
        time.sleep(0.005)
    assert pool.threads == 1
    deadline = time.monotonic() + 5
    while pool.threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.threads == 0

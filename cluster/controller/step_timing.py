"""Where a controller step's time goes, and the garbage collector kept out of it.

The I/O layer's instruments around `Controller._run`: PausedCollector (the
cyclic collector off while a step runs), StepTimer (decision, writes,
requests, logged for big steps) and TimedPort (the ZooKeeper port, timed).
They change no decision.
"""

from __future__ import annotations

import gc
import logging
import time

from kafkactl.cluster.controller.zk_port import ZkPort

log = logging.getLogger("kafkactl.cluster.controller.controller")   # the step reports stay where they were logged


class PausedCollector:
    """Python's cyclic garbage collector off while a step runs.

    A failover decision allocates 100,000s of objects that live on (the new
    states, writes and request entries); the collector, triggered by the
    allocation count, traverses them again and again: 30+ ms of collections
    between the broker's death and the LeaderAndIsr, and more while the
    sender threads encode the requests (they run during the step's invariant
    checks). Deferred to the end of the step, the same work runs once the
    requests are on their way. Nothing is lost meanwhile: reference counting
    still frees what it can, and cycles are collected once the collector is
    back (it is process-wide, off for one step at a time).

    gc.freeze() after the context is loaded was measured too
    (bench/controller_decide.py --gc): with the collector on, it shortened
    full collections of a 10,000-partition step but made them more frequent
    in a 50,000-partition one (the frozen heap no longer counts towards the
    threshold), and it keeps cyclic garbage of the whole broker from being
    collected while this broker is controller. Pausing makes it unnecessary."""

    def __init__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def resume(self) -> None:
        if self._was_enabled:
            self._was_enabled = False
            gc.enable()


class StepTimer:
    """Where a step's time went, logged for steps big enough to matter (a
    failover of thousands of partitions): decision, ZooKeeper writes, until
    the requests are queued, and the invariant checks after."""

    REPORT_WRITES = 1000

    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self.decided_s = start_s
        self.writes = 0
        self.writes_s = 0.0
        self.first_send_s: float | None = None
        self.requests = 0

    def sent(self, count: int) -> None:
        if self.first_send_s is None:
            self.first_send_s = time.monotonic()
        self.requests += count

    def report(self, broker_id: int) -> None:
        if self.writes < self.REPORT_WRITES:
            return
        ms = lambda t: (t - self.start_s) * 1000  # noqa: E731
        sent = f"{ms(self.first_send_s):.0f}" if self.first_send_s is not None else "-"
        log.info("controller %s: step of %d writes: decided at %.0f ms, writes took %.0f ms, "
                 "%d requests queued at %s ms, done at %.0f ms", broker_id, self.writes,
                 ms(self.decided_s), self.writes_s * 1000, self.requests, sent, ms(time.monotonic()))


class TimedPort:
    """The ZooKeeper port, timing the writes for StepTimer."""

    def __init__(self, port: ZkPort, timer: StepTimer) -> None:
        self._port = port
        self._timer = timer

    def apply_writes(self, writes, controller_epoch_zk_version):
        start_s = time.monotonic()
        try:
            return self._port.apply_writes(writes, controller_epoch_zk_version)
        finally:
            self._timer.writes += len(writes)
            self._timer.writes_s += time.monotonic() - start_s

    def read_partition_states(self, partitions):
        return self._port.read_partition_states(partitions)

"""The fault tests' load: an idempotent acks=-1 producer on its own thread
that records every delivery report.

It writes values `b"<seq>"` (seq = 0, 1, 2, ... in produce order) to
partition `seq % partitions`; support.acked_check compares the log with
what it recorded.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass

from confluent_kafka import Producer

from support.waiting import wait_for

# Every LoadProducer of the running test, so the teardown of a failed test can
# print what their clients logged (conftest clears it after each test).
PRODUCERS: list["LoadProducer"] = []


class RingLogger(logging.Logger):
    """A logger that keeps its last `capacity` formatted records in memory."""

    def __init__(self, name: str, capacity: int = 600) -> None:
        super().__init__(name, logging.DEBUG)
        self.propagate = False
        self.lines: deque[str] = deque(maxlen=capacity)
        handler = logging.Handler()
        handler.emit = lambda record: self.lines.append(
            f"{time.strftime('%H:%M:%S', time.localtime(record.created))}"
            f".{int(record.msecs):03d} {record.getMessage()}")
        self.addHandler(handler)

    def tail(self, limit: int = 80) -> list[str]:
        return list(self.lines)[-limit:]

@dataclass(frozen=True)
class Ack:
    seq: int
    partition: int
    offset: int
    at: float          # monotonic time of the delivery report


@dataclass(frozen=True)
class Failure:
    seq: int
    partition: int
    error: str
    at: float


class LoadProducer:
    """An idempotent acks=-1 producer on its own thread, `rate` messages per
    second round-robin over the partitions, recording every delivery report."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float = 300.0,
                 config: dict | None = None) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.log_ring = RingLogger(f"load-producer-{topic}")
        settings = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 30000,
            "request.timeout.ms": 5000,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 500,
            "socket.connection.setup.timeout.ms": 3000,
            "topic.metadata.refresh.interval.ms": 2000,
            # The idempotence state machine's log (PID, epoch bumps, drains) is
            # what explains a producer that stops making progress; kept in a
            # ring buffer and printed when a test fails.
            "debug": os.environ.get("KAFKACTL_TEST_RDKAFKA_DEBUG", "eos,topic,metadata,broker"),
            "logger": self.log_ring,
        }
        settings.update(config or {})
        self.producer = Producer(settings)
        PRODUCERS.append(self)
        self.lock = threading.Lock()
        self.sent_at: list[float] = []        # index: seq
        self.acks: list[Ack] = []
        self.failures: list[Failure] = []
        self.unfinished = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-producer", daemon=True)

    def start(self) -> "LoadProducer":
        self._thread.start()
        return self

    def _report(self, seq: int, partition: int):
        def report(error, message) -> None:
            now = time.monotonic()
            with self.lock:
                if error is not None:
                    self.failures.append(Failure(seq, partition, error.name(), now))
                else:
                    self.acks.append(Ack(seq, message.partition(), message.offset(), now))
        return report

    def _run(self) -> None:
        started = time.monotonic()
        seq = 0
        while not self._stopping.is_set():
            due = int((time.monotonic() - started) * self.rate) + 1
            while seq < due and not self._stopping.is_set():
                partition = seq % self.partitions
                try:
                    with self.lock:
                        self.sent_at.append(time.monotonic())
                    self.producer.produce(self.topic, value=str(seq).encode(), partition=partition,
                                          on_delivery=self._report(seq, partition))
                except BufferError:
                    with self.lock:
                        self.sent_at.pop()
                    self.producer.poll(0.05)
                    continue
                seq += 1
            self.producer.poll(0.01)

    def stop(self, flush_timeout_s: float = 40.0) -> "LoadProducer":
        """Stop producing and wait for the delivery report of every message."""
        self._stopping.set()
        self._thread.join(10)
        self.unfinished = self.producer.flush(flush_timeout_s)
        return self

    # -- observing while it runs

    @property
    def produced(self) -> int:
        with self.lock:
            return len(self.sent_at)

    def ack_count(self, partition: int | None = None) -> int:
        with self.lock:
            return sum(1 for a in self.acks if partition is None or a.partition == partition)

    def wait_progress(self, count: int = 50, partition: int | None = None, timeout_s: float = 20.0,
                      diagnose=None) -> None:
        """Wait until `count` more messages (of `partition`) are acknowledged."""
        target = self.ack_count(partition) + count
        where = "" if partition is None else f" on partition {partition}"
        wait_for(lambda: self.ack_count(partition) >= target, timeout_s,
                 f"{count} more acknowledged messages{where} (have {target - count}, "
                 f"{len(self.failures)} failures so far)", diagnose=diagnose)

    def summary(self) -> str:
        with self.lock:
            errors = Counter(f.error for f in self.failures)
            return (f"produced {len(self.sent_at)}, acknowledged {len(self.acks)}, "
                    f"failed {len(self.failures)} {dict(errors)}, unfinished {self.unfinished}")


"""Producers that run beside a test and remember what was acknowledged."""

from __future__ import annotations

import threading
import time


class BackgroundProducer:
    """confluent-kafka, acks=all, idempotent, from a thread: message `index` is
    `value(index)`, sent to partition `index % partitions` (partition 0 unless
    told); keeps each acknowledged one's offset by index.

    Sends `burst` messages, then sleeps `pause_s`: a steady stream at a bounded
    rate rather than one burst."""

    def __init__(self, bootstrap: str, topic: str, value, linger_ms: int, burst: int, pause_s: float,
                 keyed: bool = False, partitions: int = 1, config: dict | None = None) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.value = value
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": linger_ms, "message.timeout.ms": 90000, "reconnect.backoff.max.ms": 200,
            **(config or {}),
        })
        self.lock = threading.Lock()
        self.acknowledged: dict[int, int] = {}
        self.errors: list[str] = []
        self.sent = 0
        self._burst = burst
        self._pause_s = pause_s
        self._keyed = keyed
        self.partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)

    def _on_delivery(self, index: int, error, message) -> None:
        with self.lock:
            if error is not None:
                self.errors.append(f"{index}: {error}")
            else:
                self.acknowledged[index] = message.offset()

    def _run(self) -> None:
        while not self._stop.is_set():
            index = self.sent
            try:
                self.producer.produce(
                    self.topic, value=self.value(index), key=b"%d" % index if self._keyed else None,
                    partition=index % self.partitions, on_delivery=lambda error, message, i=index: self._on_delivery(i, error, message))
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.sent += 1
            self.producer.poll(0)
            if self.sent % self._burst == 0:
                time.sleep(self._pause_s)

    def start(self) -> None:
        self._thread.start()

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acknowledged)

    def stop_and_flush(self, timeout_s: float = 90) -> int:
        """Stops sending; the number of messages still unacknowledged after the flush."""
        self._stop.set()
        self._thread.join(10)
        return self.producer.flush(timeout_s)

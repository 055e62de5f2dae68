"""Replication throttles, Kafka's way (KIP-73).

Topic configs `leader.replication.throttled.replicas` and
`follower.replication.throttled.replicas` name the replicas that are
throttled ("partition:broker,..." or "*"); the broker configs
`leader.replication.throttled.rate` and `follower.replication.throttled.rate`
(dynamic, from /config/brokers/<id> or /config/brokers/<default>) bound the
bytes per second they may move. A leader serves a throttled replica that is
not in the ISR nothing while its rate is exceeded, and a follower leaves such
partitions out of its fetches; replicas in the ISR are never throttled, so a
throttle slows a reassignment down but never shrinks an ISR.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

ALL_REPLICAS = "*"
UNLIMITED = 2**63 - 1             # Kafka's default rate: Long.MAX_VALUE
WINDOW_S = 2.0


class ThrottledReplicasError(ValueError):
    pass


def parse_throttled_replicas(value: str) -> frozenset[tuple[int, int]] | str:
    """'0:1,1:2' -> {(0, 1), (1, 2)}; '*' -> ALL_REPLICAS; '' -> none."""
    value = value.strip()
    if value == ALL_REPLICAS:
        return ALL_REPLICAS
    pairs = set()
    for item in filter(None, (part.strip() for part in value.split(","))):
        partition, sep, broker = item.partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().lstrip("-").isdigit():
            raise ThrottledReplicasError(f"{item!r} is not PARTITION:BROKER")
        pairs.add((int(partition), int(broker)))
    return frozenset(pairs)


def is_throttled(throttled: frozenset[tuple[int, int]] | str, partition: int, broker_id: int) -> bool:
    return throttled == ALL_REPLICAS or (partition, broker_id) in throttled


class ReplicationQuota:
    """Bytes moved over a sliding window against a rate; thread-safe."""

    def __init__(self, rate_bytes_per_s: int = UNLIMITED, clock: Callable[[], float] = time.monotonic,
                 window_s: float = WINDOW_S) -> None:
        self.rate_bytes_per_s = rate_bytes_per_s
        self._clock = clock
        self._window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()
        self._total = 0
        self._lock = threading.Lock()

    def set_rate(self, rate_bytes_per_s: int) -> None:
        self.rate_bytes_per_s = rate_bytes_per_s

    def record(self, size_bytes: int) -> None:
        if size_bytes <= 0 or self.rate_bytes_per_s >= UNLIMITED:
            return
        with self._lock:
            self._samples.append((self._clock(), size_bytes))
            self._total += size_bytes

    def is_exceeded(self) -> bool:
        if self.rate_bytes_per_s >= UNLIMITED:
            return False
        with self._lock:
            now = self._clock()
            while self._samples and self._samples[0][0] <= now - self._window_s:
                self._total -= self._samples.popleft()[1]
            return self._total > self.rate_bytes_per_s * self._window_s


class ReplicationThrottles:
    """This broker's two quotas and the topics' throttled replicas, as the
    fetch paths ask about them: the leader side (a follower's fetch) and
    the follower side (the replica fetcher threads, through `follower`).

    `topic_config(topic)`: the topic's overrides (the replica manager's,
    replaced whole by the zk-agent thread); `isr_of(topic, index)`: the
    partition's ISR, or None if not hosted."""

    def __init__(self, topic_config: Callable[[str], dict[str, str]],
                 isr_of: Callable[[str, int], tuple[int, ...] | None]) -> None:
        self._topic_config = topic_config
        self._isr_of = isr_of
        self.leader_quota = ReplicationQuota()
        self.follower_quota = ReplicationQuota()
        self.follower = FollowerThrottle(self)

    def set_rates(self, leader_rate: int, follower_rate: int) -> None:
        """Dynamic leader/follower.replication.throttled.rate (broker.py resolves them)."""
        self.leader_quota.set_rate(leader_rate)
        self.follower_quota.set_rate(follower_rate)

    def throttled_replicas(self, topic: str, direction: str):
        value = self._topic_config(topic).get(f"{direction}.replication.throttled.replicas", "")
        try:
            return parse_throttled_replicas(value)
        except ThrottledReplicasError:
            return frozenset()

    def leader_throttled_replica(self, topic: str, index: int, follower_id: int) -> bool:
        """The follower's replica is throttled and out of sync (ISR members never are)."""
        isr = self._isr_of(topic, index)
        if isr is None or follower_id in isr:
            return False
        return is_throttled(self.throttled_replicas(topic, "leader"), index, follower_id)

    def leader_throttled(self, topic: str, index: int, follower_id: int) -> bool:
        """Serve this follower nothing now: a throttled replica while over the rate."""
        return self.leader_quota.is_exceeded() and self.leader_throttled_replica(topic, index, follower_id)


class FollowerThrottle:
    """What the replica fetcher threads ask about `follower.replication.throttled.*`."""

    def __init__(self, throttles: ReplicationThrottles) -> None:
        self._throttles = throttles

    def is_throttled(self, partition) -> bool:
        throttled = self._throttles.throttled_replicas(partition.topic, "follower")
        return is_throttled(throttled, partition.index, partition.broker_id) \
            and partition.broker_id not in partition.isr

    def exceeded(self) -> bool:
        """Over `follower.replication.throttled.rate`: throttled partitions sit out."""
        return self._throttles.follower_quota.is_exceeded()

    def record(self, size_bytes: int) -> None:
        self._throttles.follower_quota.record(size_bytes)

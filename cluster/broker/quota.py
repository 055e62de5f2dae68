"""Replication throttles, Kafka's way (KIP-73).

Topic configs `leader.replication.throttled.replicas` and
`follower.replication.throttled.replicas` name the throttled replicas
("partition:broker,..." or "*"); as in Kafka, each broker reads the entries
naming itself: a partition of the leader list is throttled on its leader when
that broker is listed (kafka-reassign-partitions.sh lists the current
replicas there), one of the follower list on the listed follower (the
replicas being added). The broker configs `leader.replication.throttled.rate`
and `follower.replication.throttled.rate` (dynamic, from /config/brokers/<id>
or /config/brokers/<default>) bound the bytes per second the throttled
replicas of a broker move, all together. A leader serves a throttled
partition's out-of-sync follower nothing while its rate is exceeded, and a
follower leaves such partitions out of its fetches; replicas in the ISR are
never throttled, so a throttle slows a reassignment down but never shrinks
an ISR.
"""

from __future__ import annotations

import threading
import time
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
    """Bytes moved against a rate, as a leaky bucket; thread-safe.

    What is recorded drains at the rate; the quota is exceeded while more
    than `window_s` seconds' worth is left, so that much may go at once and
    the rest at the rate. A fetch larger than that (one fetch brings up to
    replica.fetch.max.bytes, 1 MiB, whatever the rate) is owed until it has
    drained: the bytes moved never run ahead of the rate by more than one
    window's worth and one fetch. Kafka measures the rate over a sliding
    window instead (replication.quota.window.num x .size.seconds) and forgets
    a burst once it leaves the window, so at a rate far below a fetch per
    window it lets a fetch through every window; the rate's promise (an upper
    bound in bytes per second) is what this keeps. A 2 s window here let a
    1 byte/s throttle move 1 MiB every 2 s, and a throttled new replica
    catch up with a 3 MB log in seconds."""

    def __init__(self, rate_bytes_per_s: int = UNLIMITED, clock: Callable[[], float] = time.monotonic,
                 window_s: float = WINDOW_S) -> None:
        self.rate_bytes_per_s = rate_bytes_per_s
        self._clock = clock
        self._window_s = window_s
        self._level = 0.0              # bytes not drained yet
        self._drained_at = clock()
        self._lock = threading.Lock()

    def set_rate(self, rate_bytes_per_s: int) -> None:
        with self._lock:
            self._drain()                          # what drained so far, at the old rate
            if rate_bytes_per_s >= UNLIMITED:
                self._level = 0.0                  # a throttle removed forgets what was owed
            self.rate_bytes_per_s = rate_bytes_per_s

    def record(self, size_bytes: int) -> None:
        if size_bytes <= 0 or self.rate_bytes_per_s >= UNLIMITED:
            return
        with self._lock:
            self._drain()
            self._level += size_bytes

    def is_exceeded(self) -> bool:
        if self.rate_bytes_per_s >= UNLIMITED:
            return False
        with self._lock:
            self._drain()
            return self._level > self.rate_bytes_per_s * self._window_s

    def _drain(self) -> None:
        """Under the lock: take off what the rate let through since the last call."""
        now = self._clock()
        if self.rate_bytes_per_s < UNLIMITED:
            self._level = max(0.0, self._level - self.rate_bytes_per_s * (now - self._drained_at))
        self._drained_at = now


class ReplicationThrottles:
    """This broker's two quotas and the topics' throttled replicas, as the
    fetch paths ask about them: the leader side (a follower's fetch) and
    the follower side (the replica fetcher threads, through `follower`).

    `topic_config(topic)`: the topic's overrides (the replica manager's,
    replaced whole by the zk-agent thread); `isr_of(topic, index)`: the
    partition's ISR, or None if not hosted."""

    def __init__(self, topic_config: Callable[[str], dict[str, str]],
                 isr_of: Callable[[str, int], tuple[int, ...] | None], broker_id: int) -> None:
        self._topic_config = topic_config
        self._isr_of = isr_of
        self.broker_id = broker_id
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
        """This broker's replica of the partition is a throttled leader (the leader
        list names it, as Kafka's TopicConfigHandler reads the list) and the
        follower is out of sync (ISR members never are)."""
        isr = self._isr_of(topic, index)
        if isr is None or follower_id in isr:
            return False
        return is_throttled(self.throttled_replicas(topic, "leader"), index, self.broker_id)

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

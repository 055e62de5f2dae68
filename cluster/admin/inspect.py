"""Reading a cluster's health from ZooKeeper: partition health, brokers, controller.

Pure functions over what `topics.describe_topics` and `topics.live_brokers`
return, plus two small reads (/controller, /controller_epoch). No typer, no
network beyond ZooKeeper: `broker_queries` asks the brokers themselves.

Health rules follow kafka-topics.sh's --describe report options:
- under-replicated: the ISR is smaller than the replica set;
- under min ISR: no leader, or the ISR is smaller than the topic's
  min.insync.replicas (produce with acks=all fails);
- at min ISR: the ISR is exactly min.insync.replicas (one more failure and
  acks=all produce fails);
- unavailable: no leader (-1), or the leader is not a live broker;
- non-preferred leader: the leader is not the first replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.exceptions import NoNodeError

from kafkactl.cluster.admin.topics import PartitionInfo
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait

ZK_TIMEOUT_S = 10.0
NO_LEADER = -1

# Filter name (as the CLI option spells it, without dashes) -> PartitionHealth attribute.
HEALTH_FILTERS = {
    "under-replicated-partitions": "under_replicated",
    "under-min-isr-partitions": "under_min_isr",
    "at-min-isr-partitions": "at_min_isr",
    "unavailable-partitions": "unavailable",
    "non-preferred-leader": "non_preferred_leader",
}


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool
    unavailable: bool
    non_preferred_leader: bool
    offline_replicas: list[int]

    def problems(self) -> list[str]:
        """The names of the health filters this partition matches, as the
        PROBLEMS column shows them: at-min-isr only for a partition that lost
        replicas and is not already under its minimum (the filters keep
        Kafka's meaning; a healthy partition whose replication factor equals
        min.insync.replicas is at its minimum by configuration, not by a fault)."""
        names = [name for name, attribute in HEALTH_FILTERS.items() if getattr(self, attribute)]
        if self.under_min_isr or not self.under_replicated:
            names = [name for name in names if name != "at-min-isr-partitions"]
        return names


def partition_health(partition: PartitionInfo, live_broker_ids: set[int], min_isr: int) -> PartitionHealth:
    has_leader = partition.leader != NO_LEADER
    isr_size = len(partition.isr)
    return PartitionHealth(
        under_replicated=isr_size < len(partition.replicas),
        under_min_isr=not has_leader or isr_size < min_isr,
        at_min_isr=isr_size == min_isr,
        unavailable=not has_leader or partition.leader not in live_broker_ids,
        non_preferred_leader=bool(partition.replicas) and partition.leader != partition.replicas[0],
        offline_replicas=[r for r in partition.replicas if r not in live_broker_ids],
    )


def matches(health: PartitionHealth, filters: list[str]) -> bool:
    """True if no filter is given, or the partition matches any of them."""
    return not filters or any(getattr(health, HEALTH_FILTERS[f]) for f in filters)


# --- brokers -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ControllerInfo:
    broker_id: int              # -1: no controller now
    epoch: int                  # -1: never elected
    timestamp_ms: int           # when it was elected (the /controller JSON's timestamp)
    zk_session_id: int = 0      # the ephemeral owner: the controller's ZooKeeper session


def read_controller(client, timeout_s: float = ZK_TIMEOUT_S) -> ControllerInfo:
    controller = client.get_async(layout.CONTROLLER)
    epoch = client.get_async(layout.CONTROLLER_EPOCH)
    broker_id, timestamp_ms, owner = NO_LEADER, 0, 0
    try:
        data, stat = wait(controller, timeout_s)
        broker_id = codecs.decode_controller(data)
        timestamp_ms = _controller_timestamp(data, stat)
        owner = getattr(stat, "ephemeralOwner", 0)
    except NoNodeError:
        pass
    try:
        controller_epoch = codecs.decode_controller_epoch(wait(epoch, timeout_s)[0])
    except NoNodeError:
        controller_epoch = -1
    return ControllerInfo(broker_id, controller_epoch, timestamp_ms, owner)


def _controller_timestamp(data: bytes, stat) -> int:
    """Kafka writes the timestamp as a string of epoch millis; fall back on the znode's ctime."""
    import json

    try:
        return int(json.loads(data)["timestamp"])
    except (KeyError, TypeError, ValueError):
        return int(getattr(stat, "ctime", 0))


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    leader_count: int
    replica_count: int


def broker_loads(partitions: list[PartitionInfo]) -> dict[int, BrokerLoad]:
    """Per broker id, how many partitions it leads and how many replicas it holds."""
    leaders: dict[int, int] = {}
    replicas: dict[int, int] = {}
    for partition in partitions:
        if partition.leader != NO_LEADER:
            leaders[partition.leader] = leaders.get(partition.leader, 0) + 1
        for replica in partition.replicas:
            replicas[replica] = replicas.get(replica, 0) + 1
    ids = set(leaders) | set(replicas)
    return {b: BrokerLoad(leaders.get(b, 0), replicas.get(b, 0)) for b in ids}


def format_time_ms(timestamp_ms: int, now_ms: int) -> str:
    """'2024-05-01 12:03:04 (5m ago)' in local time; '-' for an unknown time."""
    import time

    if timestamp_ms <= 0:
        return "-"
    clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp_ms / 1000))
    return f"{clock} ({format_age_s(max(0, now_ms - timestamp_ms) / 1000)} ago)"


def format_age_s(seconds: float) -> str:
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
    return f"{int(seconds // 86400)}d{int(seconds % 86400 // 3600):02d}h"

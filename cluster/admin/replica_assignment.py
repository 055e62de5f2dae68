"""Kafka's replica assignment for new topics and partitions (pure).

Without racks: round robin from a random start broker, followers shifted by
a second random offset that grows every full turn, so that leaders and
followers both spread evenly (Kafka's AdminUtils algorithm). With racks on
every broker: brokers are interleaved rack by rack first, and a follower is
skipped onto the next broker when its rack (or broker) already holds a
replica of the partition and an unused one remains.
"""

from __future__ import annotations

import random as random_module
from dataclasses import dataclass


class AssignmentError(ValueError):
    """The request cannot be satisfied (e.g. replication factor > brokers)."""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    rack: str | None = None


def assign_replicas(
    brokers: list[BrokerInfo],
    partition_count: int,
    replication_factor: int,
    start_partition: int = 0,
    rng: random_module.Random | None = None,
) -> dict[int, list[int]]:
    if partition_count <= 0:
        raise AssignmentError("number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise AssignmentError("replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise AssignmentError(
            f"replication factor: {replication_factor} larger than available brokers: {len(brokers)}"
        )
    rng = rng or random_module.Random()
    racks = [b.rack for b in brokers]
    if all(rack is not None for rack in racks) and len(set(racks)) > 1:
        return _rack_aware(brokers, partition_count, replication_factor, start_partition, rng)
    ids = sorted(b.broker_id for b in brokers)
    return _round_robin(ids, partition_count, replication_factor, start_partition, rng)


def _follower_index(first: int, shift: int, j: int, count: int) -> int:
    return (first + 1 + (shift + j) % (count - 1)) % count


def _round_robin(ids, partition_count, replication_factor, start_partition, rng):
    count = len(ids)
    start_index = rng.randrange(count)
    shift = rng.randrange(count)
    assignment = {}
    for partition in range(start_partition, start_partition + partition_count):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[_follower_index(first, shift, j, count)])
        assignment[partition] = replicas
    return assignment


def _interleave_by_rack(brokers: list[BrokerInfo]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(broker.rack, []).append(broker.broker_id)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    ordered = []
    for row in range(max(len(c) for c in columns)):
        ordered.extend(c[row] for c in columns if row < len(c))
    return ordered


def _rack_aware(brokers, partition_count, replication_factor, start_partition, rng):
    rack_of = {b.broker_id: b.rack for b in brokers}
    ordered = _interleave_by_rack(brokers)
    count, rack_count = len(ordered), len(set(rack_of.values()))
    start_index = rng.randrange(count)
    shift = rng.randrange(count)
    assignment = {}
    for partition in range(start_partition, start_partition + partition_count):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        leader = ordered[first]
        replicas, used_racks = [leader], {rack_of[leader]}
        k = 0
        while len(replicas) < replication_factor:
            candidate = ordered[_follower_index(first, shift, k, count)]
            k += 1
            rack_free = rack_of[candidate] not in used_racks or len(used_racks) == rack_count
            if candidate not in replicas and rack_free:
                replicas.append(candidate)
                used_racks.add(rack_of[candidate])
                if len(used_racks) == rack_count:
                    used_racks = set()  # every rack used once: start a new round
        assignment[partition] = replicas
    return assignment

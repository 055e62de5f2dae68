"""Snapshots taken while partitions are being reassigned.

During a reassignment a partition's replica set is Kafka's transient RS
(target + original), so a snapshot taken then records, say, a
single-replica partition with two replicas, and a plan built on it changes
replication factors. The rules:

- A partition is moving when (-z) /admin/reassign_partitions lists it or
  its topic znode has adding or removing replicas, or (-b)
  ListPartitionReassignments lists it. Its target is the replica set less
  the removing replicas (Kafka's target); a partition the znode lists but
  the controller has not started yet has the znode's target.
- By default `kafkactl metrics snapshot` refuses while anything moves
  (`ReassignmentInProgress`, one line naming how many partitions and the
  flag), before any broker is scraped.
- With --allow-reassignment-in-progress, a moving partition is recorded as
  it will be once its move completes (`settle`): its target replicas, its
  leader kept when in the target, else the target's first (the controller's
  choice); every target replica holding the whole log (the largest copy);
  the leader's byte rates; each dir's used bytes as after the move (a
  removed replica's bytes leave its dir, an added replica's missing bytes
  arrive). The snapshot says so in snapshot.json (`reassigning_partitions`).

`settle` and `moving_from_*` are pure; `read_moving` does the reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from kafkactl.cluster.admin.snapshot import BrokerMetrics, ReplicaMetrics, SnapshotError
from kafkactl.cluster.admin.wording import counted

TopicPartition = tuple[str, int]
ALLOW_FLAG = "--allow-reassignment-in-progress"


@dataclasses.dataclass(frozen=True)
class Moving:
    """The partitions being moved, with their targets, and where that was read."""

    targets: dict[TopicPartition, tuple[int, ...]]
    source: str          # for the refusal: "/admin/reassign_partitions exists" or "listed by ..."
    znode_exists: bool = False

    @property
    def any(self) -> bool:
        return bool(self.targets) or self.znode_exists


class ReassignmentInProgress(SnapshotError):
    """Partitions are being moved and the snapshot was not allowed to record their targets."""

    def __init__(self, moving: Moving) -> None:
        self.moving = moving
        super().__init__(
            f"a reassignment is in progress ({counted(len(moving.targets), 'partition')} moving, {moving.source}): "
            f"a snapshot now would record their replica sets mid-move; wait for it (`kafkactl reassign status`) "
            f"or pass {ALLOW_FLAG} to record their target replicas")


# --- reading ---------------------------------------------------------------------------------

def read_moving(backend, topics: Sequence[str]) -> Moving:
    """The moving partitions of the cluster behind `backend` (cluster/admin/backend.py)."""
    from kafkactl.cluster.admin.backend import ZOOKEEPER

    if backend.kind == ZOOKEEPER:
        return _read_moving_zookeeper(backend.client, topics, backend.timeout_s)
    listed = backend.list_reassignments()
    return moving_from_listing({tp: (r.replicas, r.removing) for tp, r in listed.items()})


def _read_moving_zookeeper(client, topics: Sequence[str], timeout_s: float) -> Moving:
    from kazoo.exceptions import NoNodeError

    from kafkactl.cluster.admin.reassignment import read_running
    from kafkactl.cluster.zk import codecs, layout
    from kafkactl.cluster.zk.client import wait

    running = read_running(client, timeout_s)
    pending = {t: client.get_async(layout.topic(t)) for t in topics}   # pipelined: one round trip
    in_flight: dict[TopicPartition, tuple[Sequence[int], Sequence[int]]] = {}
    for topic, result in pending.items():
        try:
            assignment = codecs.decode_topic(topic, wait(result, timeout_s)[0])
        except NoNodeError:        # deleted since the topics were listed
            continue
        for partition in set(assignment.adding_replicas) | set(assignment.removing_replicas):
            in_flight[(topic, partition)] = (assignment.partitions.get(partition, ()),
                                             assignment.removing_replicas.get(partition, ()))
    return moving_from_zookeeper(running, in_flight)


def moving_from_zookeeper(running: Mapping[TopicPartition, Sequence[int]] | None,
                          in_flight: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]]) -> Moving:
    """From /admin/reassign_partitions (None: absent) and the topic znodes' (RS, removing) of
    partitions with adding or removing replicas; a started move's target is the topic znode's."""
    targets = {tp: tuple(target) for tp, target in (running or {}).items()}
    targets.update(moving_from_listing(in_flight).targets)
    source = "/admin/reassign_partitions exists" if running is not None else "adding/removing replicas in topic znodes"
    return Moving(targets, source, znode_exists=running is not None)


def moving_from_listing(listed: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]]) -> Moving:
    """From (full replica set, removing replicas) per partition, as ListPartitionReassignments gives them."""
    targets = {tp: tuple(r for r in replicas if r not in set(removing)) for tp, (replicas, removing) in listed.items()}
    return Moving(targets, "listed by ListPartitionReassignments")


# --- recording the targets -------------------------------------------------------------------

def settle(partitions: Sequence, metrics: Mapping[int, BrokerMetrics],
           targets: Mapping[TopicPartition, Sequence[int]]) -> tuple[list, dict[int, BrokerMetrics], int]:
    """(partitions, metrics, how many were settled) as they will be once every move completes.

    `partitions` are PartitionInfo (replicas = the transient set); the metrics
    given are not changed: brokers a move touches get copies. A partition of
    `targets` that the snapshot lacks is skipped; one whose leader reports no
    copy is left for build_snapshot to refuse (a replica still being created)."""
    state = _Settling(metrics)
    settled, count = [], 0
    for partition in partitions:
        key = (partition.topic, partition.partition)
        target = tuple(targets.get(key) or ())
        leader = metrics.get(partition.leader)
        if not target or leader is None or key not in leader.replicas:
            settled.append(partition)
            continue
        settled.append(state.partition(partition, target, key))
        count += 1
    return settled, state.metrics, count


class _Settling:
    """The metrics being settled: a broker's are copied on their first change."""

    def __init__(self, metrics: Mapping[int, BrokerMetrics]) -> None:
        self.metrics = dict(metrics)
        self.copied: set[int] = set()

    def partition(self, partition, target: tuple[int, ...], key: TopicPartition):
        copies = {b: self.metrics[b].replicas[key] for b in (*partition.replicas, *target)
                  if b in self.metrics and key in self.metrics[b].replicas}
        size_bytes = max(c.size_bytes for c in copies.values())
        rates = copies[partition.leader]
        leader = partition.leader if partition.leader in target else target[0]
        for broker_id in set(copies) - set(target):      # removed: its bytes leave its dir
            self._change_used(broker_id, copies[broker_id].log_dir, -copies[broker_id].size_bytes)
            del self._own(broker_id).replicas[key]
        for broker_id in target:                          # kept or added: the whole log, in its dir
            copy = copies.get(broker_id)
            if copy is None:
                continue                                  # not created yet: build_snapshot refuses it
            self._change_used(broker_id, copy.log_dir, size_bytes - copy.size_bytes)
            own_rates = rates if broker_id == leader else copy
            self._own(broker_id).replicas[key] = ReplicaMetrics(size_bytes, copy.log_dir, own_rates.bytes_in_per_s,
                                                                   own_rates.bytes_out_per_s)
        return dataclasses.replace(partition, replicas=list(target), leader=leader,
                                   isr=[b for b in partition.isr if b in target])

    def _own(self, broker_id: int) -> BrokerMetrics:
        if broker_id not in self.copied:
            current = self.metrics[broker_id]
            self.metrics[broker_id] = BrokerMetrics(current.broker_id, dict(current.dirs), dict(current.replicas))
            self.copied.add(broker_id)
        return self.metrics[broker_id]

    def _change_used(self, broker_id: int, path: str, delta_bytes: int) -> None:
        found = self.metrics[broker_id].dirs.get(path)
        if found is not None and delta_bytes:
            self._own(broker_id).dirs[path] = dataclasses.replace(
                found, used_bytes=max(0, found.used_bytes + delta_bytes))

"""The controller's two views of the fake ZooKeeper.

`SimStore` stands in for ZkControllerStore's reads (get_many, children,
exists), which the controller's read layer (zk_reads.ControllerReads) calls:
the simulation runs those reads unchanged, watches and all. Between two
reads another client may write: after a getData finds an admin znode
missing, the admin tool sometimes creates it before the controller's exists
re-arms the watch (the race of issue 12.2), and now and then any admin
operation slips in between two reads.

`SimZk` stands in for ZkPort, the core's writes: random multi sizes, the
epoch check in each, and now and then a leader's ISR write slipping in
between the controller's read and its conditional write, or right after
the controller read partition states (and before its next read: in a
failover, the listing of the ISR change notifications).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from kafkactl.cluster.controller.model import (
    CreatePartitionState, DeleteAdminPath, DeleteNotification, DeleteTopicZnodes, SetReassignments,
    UpdatePartitionState, UpdateTopicAssignment, WriteResult, ZkWrite,
)
from kafkactl.cluster.controller.simulation.zookeeper import ADMIN_PATHS, Stat
from kafkactl.cluster.controller.testing import ControllerKilled
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState

if TYPE_CHECKING:
    from kafkactl.cluster.controller.simulation.runner import Simulation

ADMIN_CREATES_BEFORE_REARM = 0.25      # after a getData found an admin znode missing
ADMIN_BETWEEN_READS = 0.01             # after any other read
LEADER_WRITES_AFTER_STATES_READ = 0.25  # after the controller read partition states


class SimStore:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self._missing: set[str] = set()        # admin paths whose last getData found nothing

    def get_many(self, paths: list[str], watch=None) -> dict[str, tuple[bytes, Stat] | None]:
        zk = self.sim.zk
        result = {}
        for path in paths:
            node = zk.get(path)
            zk.read(path, node)
            if node is None:
                result[path] = None          # getData on a missing znode: no watch
                if path in ADMIN_PATHS:
                    self._missing.add(path)
                continue
            self._missing.discard(path)
            result[path] = (node.data, Stat(node.czxid, node.version))
            if watch is not None:
                zk.watch_data(path, watch)
        self._interleave(paths, result)
        return result

    def children(self, path: str, watch=None) -> list[str]:
        zk = self.sim.zk
        names = zk.children(path)            # parents are implicit: the path always exists
        zk.read(path, None)
        if path == layout.DELETE_TOPICS:
            for name in names:
                zk.read(f"{path}/{name}", zk.get(f"{path}/{name}"))
        if watch is not None:
            zk.watch_children(path, watch)
        self._interleave((), {})
        return names

    def exists(self, path: str, watch=None) -> Stat | None:
        zk = self.sim.zk
        node = zk.get(path)
        if watch is not None:
            zk.watch_data(path, watch)       # exists leaves a watch whether or not the znode is there
        if node is not None and path in self._missing:
            self.sim.count("admin_created_between_get_and_exists")
        self._missing.discard(path)
        return Stat(node.czxid, node.version) if node is not None else None

    def _interleave(self, paths, result) -> None:
        """Another client writes between this read and the controller's next."""
        sim = self.sim
        if sim.healing:
            return
        missing = [p for p in paths if p in ADMIN_PATHS and result[p] is None]
        if missing and sim.rng.random() < ADMIN_CREATES_BEFORE_REARM:
            if sim.admin_create(missing[0]):
                sim.count("admin_wrote_between_reads")
        elif sim.rng.random() < ADMIN_BETWEEN_READS:
            sim.rng.choice((sim.create_topic, sim.delete_topic, sim.reassign, sim.preferred_election,
                            sim.add_partition, sim.toggle_unclean))()
            sim.count("admin_wrote_between_reads")


class SimZk:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def apply_writes(self, writes: Sequence[ZkWrite], controller_epoch_zk_version: int) -> list[WriteResult]:
        sim, zk = self.sim, self.sim.zk
        results: list[WriteResult] = []
        index = 0
        while index < len(writes):
            batch = writes[index:index + sim.rng.randint(1, 4)]
            if sim.kill_rate and sim.rng.random() < sim.kill_rate:
                # kill -9 of the controller: this batch and the rest never happen.
                raise ControllerKilled(f"killed before {batch[0]!r} ({index} of {len(writes)} writes done)")
            index += len(batch)
            self._maybe_race(batch)
            if zk.get(layout.CONTROLLER_EPOCH).version != controller_epoch_zk_version:
                results.extend([WriteResult.CONTROLLER_MOVED] * len(batch))
                continue
            errors = [self._check(w) for w in batch]
            failing = next((i for i, e in enumerate(errors) if e is not WriteResult.OK), None)
            if failing is None:
                for write in batch:
                    self._apply(write)
                results.extend([WriteResult.OK] * len(batch))
            else:
                sim.count(f"write_{errors[failing].value}")
                results.extend(errors[failing] if i == failing else WriteResult.NOT_APPLIED
                               for i in range(len(batch)))
        return results

    def read_partition_states(self, partitions):
        states = {tp: self.sim.partition_state(tp) for tp in partitions}
        sim = self.sim
        if not sim.healing and sim.rng.random() < LEADER_WRITES_AFTER_STATES_READ and sim.leader_isr_change():
            sim.count("leader_wrote_after_states_read")
        return states

    def _maybe_race(self, batch: Sequence[ZkWrite]) -> None:
        """Someone else writes the state between the controller's read and
        its write: the leader changing the ISR, or (for a new partition) a
        broker's interim leadership claim creating the state first."""
        sim = self.sim
        if sim.rng.random() >= 0.25 * sim.fault_rate:
            return
        write = sim.rng.choice(list(batch))
        if isinstance(write, UpdatePartitionState):
            tp = write.topic_partition
            for broker in sim.brokers.values():
                if broker.leads(tp) and sim.leader_isr_change(broker, tp):
                    sim.count("raced")
                    return
        elif isinstance(write, CreatePartitionState) and sim.zk.get(layout.topic(write.topic)):
            leader = write.state.leader
            claim = PartitionState(leader, 0, [leader], write.state.controller_epoch - 1)
            path = layout.partition_state(write.topic, write.partition)
            sim.zk.create(path, codecs.encode_partition_state(claim))
            sim.count("raced_create")

    def _check(self, write: ZkWrite) -> WriteResult:
        zk = self.sim.zk
        if isinstance(write, CreatePartitionState):
            if not zk.get(layout.topic(write.topic)):
                return WriteResult.NO_NODE
            if zk.get(layout.partition_state(write.topic, write.partition)):
                return WriteResult.NODE_EXISTS
        elif isinstance(write, UpdatePartitionState):
            node = zk.get(layout.partition_state(write.topic, write.partition))
            if node is None:
                return WriteResult.NO_NODE
            if node.version != write.expected_zk_version:
                return WriteResult.BAD_VERSION
        elif isinstance(write, UpdateTopicAssignment):
            if not zk.get(layout.topic(write.topic)):
                return WriteResult.NO_NODE
        elif isinstance(write, (DeleteAdminPath, DeleteNotification, SetReassignments)):
            path = write.path if not isinstance(write, SetReassignments) else layout.REASSIGN_PARTITIONS
            if not zk.get(path):
                return WriteResult.NO_NODE
        return WriteResult.OK

    def _apply(self, write: ZkWrite) -> None:
        zk = self.sim.zk
        if isinstance(write, CreatePartitionState):
            path = layout.partition_state(write.topic, write.partition)
            zk.create(path, codecs.encode_partition_state(write.state))
        elif isinstance(write, UpdatePartitionState):
            path = layout.partition_state(write.topic, write.partition)
            result = zk.set(path, codecs.encode_partition_state(write.state), write.expected_zk_version)
            invariant(result is WriteResult.OK, f"checked write failed: {result}")
            invariant(zk.get(path).version == write.state.zk_version, "zk_version after the write differs")
        elif isinstance(write, UpdateTopicAssignment):
            zk.set(layout.topic(write.topic), codecs.encode_topic(write.assignment))
        elif isinstance(write, DeleteTopicZnodes):
            zk.delete(layout.topic(write.topic), recursive=True)
            zk.delete(layout.topic_config(write.topic))
        elif isinstance(write, (DeleteAdminPath, DeleteNotification)):
            zk.delete(write.path)
        elif isinstance(write, SetReassignments):
            zk.set(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(
                {(tp.topic, tp.partition): list(t) for tp, t in write.targets}))

"""The decision core's ZooKeeper port, over the controller's ZooKeeper store.

Translates the core's writes (model.ZkWrite) into ZooKeeper operations in
Kafka's layout, applies them fenced by the controller epoch through
`ZkControllerStore`, and reports one `WriteResult` per write. Reading
partition states back (after a lost race) is pipelined.

A topic's znode is written (a reassignment's adding/removing replicas) from
the controller's context, which may not yet know partitions a tool has just
added to that znode: Kafka's controller writes it over them, and they are
lost. Here it is read, the partitions the context does not have are kept
(`keep_added_partitions`), and written back conditionally on the version
read; a tool writing meanwhile makes it read and merge again.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from kafkactl.cluster.controller.model import (
    CreatePartitionState, DeleteAdminPath, DeleteNotification, DeleteTopicZnodes, SetReassignments,
    TopicPartition, UpdatePartitionState, UpdateTopicAssignment, WriteResult, ZkWrite,
)
from kafkactl.cluster.controller.zk_store import (
    ControllerEpoch, ControllerMovedError, Create, Delete, SetData, ZkControllerStore, ZkOp,
)
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.client import wait
from kafkactl.cluster.zk.codecs import PartitionState


TOPIC_WRITE_ATTEMPTS = 5


class ZkPort:
    def __init__(self, store: ZkControllerStore, controller_epoch: int) -> None:
        self.store = store
        self.controller_epoch = controller_epoch

    def apply_writes(self, writes: Sequence[ZkWrite], controller_epoch_zk_version: int) -> list[WriteResult]:
        fence = ControllerEpoch(self.controller_epoch, controller_epoch_zk_version)
        if any(type(w) is UpdateTopicAssignment for w in writes):
            return self._with_topic_writes(writes, fence)
        return self._apply(writes, fence)

    def _with_topic_writes(self, writes: Sequence[ZkWrite], fence: ControllerEpoch) -> list[WriteResult]:
        """Topic znodes first (as Kafka writes a reassignment's assignment
        before the states), by read-merge-conditional-write; the rest as usual."""
        topics = {i: self._write_topic_assignment(w, fence)
                  for i, w in enumerate(writes) if type(w) is UpdateTopicAssignment}
        if WriteResult.CONTROLLER_MOVED in topics.values():
            return [WriteResult.CONTROLLER_MOVED] * len(writes)
        others = [w for w in writes if type(w) is not UpdateTopicAssignment]
        results = iter(self._apply(others, fence) if others else [])
        return [topics[i] if i in topics else next(results) for i in range(len(writes))]

    def _write_topic_assignment(self, write: UpdateTopicAssignment, fence: ControllerEpoch) -> WriteResult:
        path = layout.topic(write.topic)
        for _ in range(TOPIC_WRITE_ATTEMPTS):
            node = self.store.get_many([path])[path]
            if node is None:
                return WriteResult.NO_NODE
            try:
                current = codecs.decode_topic(write.topic, node[0])
            except codecs.ZnodeFormatError:
                current = None                      # unreadable: ours replaces it, as before
            merged = keep_added_partitions(write.assignment, current)
            try:
                [result] = self.store.write([SetData(path, codecs.encode_topic(merged), node[1].version)], fence)
            except ControllerMovedError:
                return WriteResult.CONTROLLER_MOVED
            if result.error is None:
                return WriteResult.OK
            outcome = _result_of(result.error)
            if outcome is not WriteResult.BAD_VERSION:
                return outcome
        # Written over and over meanwhile: execution writes it again (an
        # unconditional write that failed is reissued), which merges again.
        return WriteResult.NOT_APPLIED

    def _apply(self, writes: Sequence[ZkWrite], fence: ControllerEpoch) -> list[WriteResult]:
        self._ensure_parents(writes)
        ops_per_write = self.operations(writes)
        flat = [op for ops in ops_per_write for op in ops]
        try:
            results = self.store.write(flat, fence) if flat else []
        except ControllerMovedError:
            return [WriteResult.CONTROLLER_MOVED] * len(writes)
        combined, at, ok = [], 0, WriteResult.OK
        for ops in ops_per_write:
            if len(ops) == 1:                # nearly always: a state write is one setData or create
                result = results[at]
                combined.append(ok if result.error is None else _combined((result,)))
                at += 1
            else:
                combined.append(_combined(results[at:at + len(ops)]))
                at += len(ops)
        return combined

    def read_partition_states(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, PartitionState | None]:
        paths = {tp: layout.partition_state(tp.topic, tp.partition) for tp in partitions}
        nodes = self.store.get_many(list(paths.values()))
        states = {}
        for tp, path in paths.items():
            node = nodes[path]
            states[tp] = None if node is None else codecs.decode_partition_state(path, node[0], node[1].version)
        return states

    # --- translation

    def operations(self, writes: Sequence[ZkWrite]) -> list[list[ZkOp]]:
        """Each write's ZooKeeper operations (reads the children of topics to delete)."""
        # A failover's writes are all state updates: their operations made in
        # one loop, without a call per write (tuple.__new__: no keyword parsing).
        update, new, set_data = UpdatePartitionState, tuple.__new__, SetData
        path, encode = layout.partition_state, codecs.encode_partition_state
        return [[new(set_data, (path(w.topic, w.partition), encode(w.state), w.expected_zk_version))]
                if type(w) is update else self._ops(w)
                for w in writes]

    def _ensure_parents(self, writes: Sequence[ZkWrite]) -> None:
        # Kafka creates .../partitions/<p> before its state; creating parents is
        # harmless without the fence (they carry no data), and keeps the fenced
        # multi to the one write that matters.
        pending = [
            self.store.client.ensure_path_async(layout.partition(w.topic, w.partition))
            for w in writes if isinstance(w, CreatePartitionState)
        ]
        for future in pending:
            wait(future, self.store.timeout_s)

    def _ops(self, write: ZkWrite) -> list[ZkOp]:
        if type(write) is UpdatePartitionState:     # a failover's 10,000s of writes: the first test
            return [SetData(layout.partition_state(write.topic, write.partition),
                            codecs.encode_partition_state(write.state), write.expected_zk_version)]
        if isinstance(write, CreatePartitionState):
            return [Create(layout.partition_state(write.topic, write.partition),
                           codecs.encode_partition_state(write.state))]
        if isinstance(write, UpdatePartitionState):
            return [SetData(layout.partition_state(write.topic, write.partition),
                            codecs.encode_partition_state(write.state), write.expected_zk_version)]
        if isinstance(write, UpdateTopicAssignment):
            return [SetData(layout.topic(write.topic), codecs.encode_topic(write.assignment))]
        if isinstance(write, DeleteTopicZnodes):
            return self._delete_topic_ops(write.topic)
        if isinstance(write, (DeleteAdminPath, DeleteNotification)):
            return [Delete(write.path)]
        if isinstance(write, SetReassignments):
            return [SetData(layout.REASSIGN_PARTITIONS, codecs.encode_reassignment(dict(write.targets)))]
        raise TypeError(f"unknown controller write {write!r}")

    def _delete_topic_ops(self, topic: str) -> list[ZkOp]:
        """Children first: a multi cannot delete recursively."""
        partitions_path = layout.partitions(topic)
        ops: list[ZkOp] = []
        for partition in self.store.children(partitions_path):
            base = f"{partitions_path}/{partition}"
            ops += [Delete(f"{base}/{child}") for child in self.store.children(base)]
            ops.append(Delete(base))
        if self.store.exists(partitions_path) is not None:
            ops.append(Delete(partitions_path))
        ops.append(Delete(layout.topic(topic)))
        if self.store.exists(layout.topic_config(topic)) is not None:
            ops.append(Delete(layout.topic_config(topic)))
        return ops


def keep_added_partitions(ours: codecs.TopicAssignment,
                          current: codecs.TopicAssignment | None) -> codecs.TopicAssignment:
    """The controller's assignment of the topic, plus the partitions the znode
    has and the controller does not know yet (added by a tool, and not yet
    read). Not for another incarnation of the topic (a different topic id)."""
    if current is None or (current.topic_id and ours.topic_id and current.topic_id != ours.topic_id):
        return ours
    added = {p: replicas for p, replicas in current.partitions.items() if p not in ours.partitions}
    if not added:
        return ours
    return codecs.TopicAssignment({**ours.partitions, **added}, ours.topic_id,
                                  ours.adding_replicas, ours.removing_replicas)


def _combined(results) -> WriteResult:
    """One write's result from its operations' (deleting what is gone is fine)."""
    worst = WriteResult.OK
    for result in results:
        if result.ok:
            continue
        error = result.error
        if isinstance(error, NoNodeError) and isinstance(result.op, Delete):
            continue
        worst = _result_of(error)
        if worst is not WriteResult.OK:
            return worst
    return worst


def _result_of(error: Exception) -> WriteResult:
    if isinstance(error, BadVersionError):
        return WriteResult.BAD_VERSION
    if isinstance(error, NoNodeError):
        return WriteResult.NO_NODE
    if isinstance(error, NodeExistsError):
        return WriteResult.NODE_EXISTS
    if isinstance(error, RolledBackError):
        return WriteResult.NOT_APPLIED
    raise error

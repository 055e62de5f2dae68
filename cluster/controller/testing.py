"""Helpers for tests of the decision core: hand-built contexts, committing
decisions, a small fake ZooKeeper port, and a ZooKeeper model whose
controller can be killed between two writes (ZkModel).

Contexts are built the way a new controller builds them, through
`load_context` from a ClusterSnapshot, so tests start from states the real
loader produces.
"""

from __future__ import annotations

from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.execution import apply_results
from kafkactl.cluster.controller.failover import ClusterSnapshot, load_context
from kafkactl.cluster.controller.model import (
    CreatePartitionState, DeleteAdminPath, DeleteTopicZnodes, SetReassignments, TopicPartition,
    UpdatePartitionState, UpdateTopicAssignment, WriteResult,
)
from kafkactl.cluster.controller.zk_port import keep_added_partitions
from kafkactl.cluster.zk import layout
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment

EPOCH = 5


def registration(broker_id: int, broker_epoch: int | None = None) -> BrokerRegistration:
    return BrokerRegistration(broker_id, "h", 9000 + broker_id, (f"PLAINTEXT://h:{9000 + broker_id}",),
                              broker_epoch=100 + broker_id if broker_epoch is None else broker_epoch)


def state(leader, isr, leader_epoch=3, zk_version=7, controller_epoch=4, recovery=0) -> PartitionState:
    return PartitionState(leader, leader_epoch, list(isr), controller_epoch, recovery, zk_version)


def make_context(live=(1, 2, 3), topics=None, states=None, *, deleting=(), reassignments=None,
                 preferred=None, configs=None, config=ControllerConfig(), with_states=True):
    """topics: name -> {partition: replicas}; states: (topic, partition) ->
    PartitionState, by default the first live replica leads a full live ISR."""
    topics = {"t": {0: [1, 2, 3]}} if topics is None else topics
    assignments = {name: TopicAssignment({p: list(r) for p, r in parts.items()}, topic_id=f"id-{name}")
                   for name, parts in topics.items()}
    partition_states = {}
    for name, parts in topics.items():
        for p, replicas in parts.items():
            key = (name, p)
            if states and key in states:
                if states[key] is not None:
                    partition_states[TopicPartition(*key)] = states[key]
            elif with_states:
                isr = [r for r in replicas if r in live] or list(replicas[:1])
                partition_states[TopicPartition(*key)] = state(isr[0] if isr[0] in live else -1, isr)
    snapshot = ClusterSnapshot(
        controller_epoch=EPOCH,
        controller_epoch_zk_version=EPOCH,
        brokers={b: registration(b) for b in live},
        topics=assignments,
        partition_states=partition_states,
        topics_to_delete=frozenset(deleting),
        reassignments={TopicPartition(*k): tuple(v) for k, v in (reassignments or {}).items()},
        preferred_election=None if preferred is None else frozenset(TopicPartition(*k) for k in preferred),
        topic_configs=configs or {},
    )
    return load_context(snapshot, controller_id=1, config=config)


def commit(ctx, decision):
    """The context after every write of `decision` succeeded."""
    return apply_results(ctx, decision, [WriteResult.OK] * len(decision.zk_writes)).context


def run_chain(ctx, decision, limit=20):
    """Carry out a decision and everything it chains, every write succeeding;
    returns the final context and each decision made, in order."""
    made = []
    steps = [(ctx, decision)]
    while steps and len(made) < limit:
        before, current = steps.pop()
        made.append(current)
        ctx = commit(before, current)
        if current.then is not None:
            steps.append((ctx, current.then(ctx)))
    return ctx, made


class FakeZk:
    """A ZkPort over a dict of partition states: conditional writes check
    zk versions; `race` bumps a partition's version before the next write,
    as a leader changing its ISR would."""

    def __init__(self, ctx) -> None:
        self.states = dict(ctx.leadership)
        self.applied = []
        self.race: dict[TopicPartition, PartitionState] = {}
        self.moved = False

    def apply_writes(self, writes, controller_epoch_zk_version):
        results = []
        for write in writes:
            if self.moved:
                results.append(WriteResult.CONTROLLER_MOVED)
                continue
            is_state = isinstance(write, (CreatePartitionState, UpdatePartitionState))
            if is_state and write.topic_partition in self.race:
                self.states[write.topic_partition] = self.race.pop(write.topic_partition)
            if isinstance(write, CreatePartitionState):
                if write.topic_partition in self.states:
                    results.append(WriteResult.NODE_EXISTS)
                    continue
                self.states[write.topic_partition] = write.state
            elif isinstance(write, UpdatePartitionState):
                current = self.states.get(write.topic_partition)
                if current is None:
                    results.append(WriteResult.NO_NODE)
                    continue
                if current.zk_version != write.expected_zk_version:
                    results.append(WriteResult.BAD_VERSION)
                    continue
                self.states[write.topic_partition] = write.state
            self.applied.append(write)
            results.append(WriteResult.OK)
        return results

    def read_partition_states(self, partitions):
        return {tp: self.states.get(tp) for tp in partitions}


class Recorder:
    """A `send` for execute(): keeps every request sent."""

    def __init__(self) -> None:
        self.requests = []

    def __call__(self, batch) -> None:
        self.requests.extend(batch)


class ControllerKilled(Exception):
    """The controller's process died (kill -9) before a write: that write
    and everything after it never happen, nothing more is sent."""


class ZkModel:
    """ZooKeeper as the core's writes leave it: topic znodes (with adding
    and removing replicas), partition states, /admin/reassign_partitions and
    the deletion markers, for tests that kill the controller between two of
    its writes and let a new controller load what is left (`snapshot`).

    `kill_after`: how many writes go in before the controller dies (None:
    it lives). Each write counts, although the I/O layer puts several in one
    multi: every cut a multi allows is among these, and more."""

    def __init__(self, ctx, kill_after: int | None = None) -> None:
        self.brokers = dict(ctx.live_brokers)
        self.topics = {topic: ctx.topic_assignment(topic) for topic in ctx.topic_ids}
        self.states = dict(ctx.leadership)
        self.reassign = dict(ctx.reassign_admin) or None     # None: no znode
        self.deleting = set(ctx.topics_to_delete)
        self.kill_after = kill_after
        self.written = 0

    def apply_writes(self, writes, controller_epoch_zk_version):
        results = []
        for write in writes:
            if self.kill_after is not None and self.written >= self.kill_after:
                raise ControllerKilled(f"killed before write {self.written + 1}: {write}")
            self.written += 1
            result = WriteResult.OK
            if isinstance(write, CreatePartitionState):
                if write.topic not in self.topics:
                    result = WriteResult.NO_NODE
                elif write.topic_partition in self.states:
                    result = WriteResult.NODE_EXISTS
                else:
                    self.states[write.topic_partition] = write.state
            elif isinstance(write, UpdatePartitionState):
                current = self.states.get(write.topic_partition)
                if current is None:
                    result = WriteResult.NO_NODE
                elif current.zk_version != write.expected_zk_version:
                    result = WriteResult.BAD_VERSION
                else:
                    self.states[write.topic_partition] = write.state
            elif isinstance(write, UpdateTopicAssignment):
                if write.topic not in self.topics:
                    result = WriteResult.NO_NODE
                else:       # as ZkPort writes it: partitions a tool just added are kept
                    self.topics[write.topic] = keep_added_partitions(write.assignment, self.topics[write.topic])
            elif isinstance(write, DeleteTopicZnodes):
                self.topics.pop(write.topic, None)
                self.states = {tp: s for tp, s in self.states.items() if tp.topic != write.topic}
            elif isinstance(write, DeleteAdminPath):
                if write.path == layout.REASSIGN_PARTITIONS:
                    self.reassign = None
                elif write.path.startswith(layout.DELETE_TOPICS + "/"):
                    self.deleting.discard(write.path.rsplit("/", 1)[1])
            elif isinstance(write, SetReassignments):
                if self.reassign is None:
                    result = WriteResult.NO_NODE
                else:
                    self.reassign = dict(write.targets)
            results.append(result)
        return results

    def read_partition_states(self, partitions):
        return {tp: self.states.get(tp) for tp in partitions}

    def entry(self, tp: TopicPartition) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
        """The partition in its topic znode: (replicas, adding, removing)."""
        topic = self.topics.get(tp.topic)
        if topic is None or tp.partition not in topic.partitions:
            return None
        return (tuple(topic.partitions[tp.partition]), tuple(topic.adding_replicas.get(tp.partition, ())),
                tuple(topic.removing_replicas.get(tp.partition, ())))

    def snapshot(self, controller_epoch: int, brokers=None) -> ClusterSnapshot:
        """What a new controller reads; `brokers`: the ids still registered
        (by default every broker that was)."""
        live = self.brokers if brokers is None else {b: r for b, r in self.brokers.items() if b in brokers}
        return ClusterSnapshot(
            controller_epoch=controller_epoch,
            controller_epoch_zk_version=controller_epoch,
            brokers=live,
            topics=dict(self.topics),
            partition_states={tp: s for tp, s in self.states.items() if tp.topic in self.topics},
            topics_to_delete=frozenset(self.deleting),
            reassignments=dict(self.reassign or {}),
        )

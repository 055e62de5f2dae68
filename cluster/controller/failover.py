"""Controller failover (seed D; Kafka's onControllerFailover).

The I/O layer wins the election (it owns /controller and the epoch bump),
reads everything into a `ClusterSnapshot`, and `load_context` turns it into a
context: state machines start from what ZooKeeper says (a partition with a
live leader is Online, with a dead one Offline, without a state New; a
replica on a live broker is Online, else Offline). `on_controller_failover`
then sends every live broker the full picture (UpdateMetadata with every
partition, a full LeaderAndIsr with all its replicas), elects New and
Offline partitions, takes every broker that is not registered out of every
ISR it is still in (Kafka moves each replica on a dead broker to
OfflineReplica when its controller starts: brokers that died before or with
the old controller, or while there was none, were never taken out), and
resumes what the previous controller left: partition reassignments, topic
deletions, a preferred replica election.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Iterable, Mapping

from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder, chain
from kafkactl.cluster.controller.changes import delete_notifications, online_or_elect, remove_dead_from_isr
from kafkactl.cluster.controller.context import ControllerConfig, ControllerContext, parse_unclean_override
from kafkactl.cluster.controller.deletion import resume_deletions_decision
from kafkactl.cluster.controller.model import Decision, ReplicaAssignment, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.preferred import on_preferred_replica_election
from kafkactl.cluster.controller.reassignment import resume_reassignments
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk.codecs import BrokerRegistration, PartitionState, TopicAssignment


@dataclass(frozen=True)
class ClusterSnapshot:
    """What a new controller reads from ZooKeeper, decoded."""

    controller_epoch: int
    controller_epoch_zk_version: int
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    topics: Mapping[str, TopicAssignment] = field(default_factory=dict)
    partition_states: Mapping[TopicPartition, PartitionState] = field(default_factory=dict)  # with zk_version
    topics_to_delete: frozenset[str] = frozenset()                       # /admin/delete_topics children
    reassignments: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    preferred_election: frozenset[TopicPartition] | None = None          # None: znode absent
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    isr_change_notifications: tuple[str, ...] = ()                        # full paths, read now: obsolete


def load_context(snapshot: ClusterSnapshot, controller_id: int,
                 config: ControllerConfig = ControllerConfig()) -> ControllerContext:
    ctx = ControllerContext(controller_id, snapshot.controller_epoch, snapshot.controller_epoch_zk_version, config)
    ctx.live_brokers = dict(snapshot.brokers)
    for topic, assignment in snapshot.topics.items():
        ctx.topic_ids[topic] = assignment.topic_id
        for partition, replicas in assignment.partitions.items():
            ctx.assignments[TopicPartition(topic, partition)] = ReplicaAssignment(
                tuple(replicas),
                tuple(assignment.adding_replicas.get(partition, ())),
                tuple(assignment.removing_replicas.get(partition, ())),
            )
    ctx.leadership = {tp: s for tp, s in snapshot.partition_states.items() if tp in ctx.assignments}
    ctx.topics_to_delete = set(snapshot.topics_to_delete)
    ctx.reassign_admin = {tp: tuple(t) for tp, t in snapshot.reassignments.items()}
    ctx.preferred_admin = snapshot.preferred_election
    for topic, topic_config in snapshot.topic_configs.items():
        override = parse_unclean_override(dict(topic_config))
        if override is not None and topic in ctx.topic_ids:
            ctx.unclean_overrides[topic] = override
    _initialize_state_machines(ctx)
    return ctx


def _initialize_state_machines(ctx: ControllerContext) -> None:
    for tp in ctx.all_partitions():
        if tp not in ctx.leadership:
            ctx.partition_states[tp] = PartitionStateName.NEW
        elif ctx.has_live_leader(tp):
            ctx.partition_states[tp] = PartitionStateName.ONLINE
        else:
            ctx.partition_states[tp] = PartitionStateName.OFFLINE
        for replica in ctx.partition_replicas(tp):
            live = ctx.is_broker_live(replica.broker_id)
            ctx.replica_states[replica] = ReplicaStateName.ONLINE if live else ReplicaStateName.OFFLINE
            if not live and ctx.is_queued_for_deletion(tp.topic):
                rsm.mark_ineligible(ctx.replica_states, replica)


def on_controller_failover(ctx: ControllerContext, isr_change_notifications: Iterable[str] = ()) -> Decision:
    b = DecisionBuilder(ctx)
    live = sorted(ctx.live_brokers)
    b.batch.update_metadata(live, [tp for tp in ctx.all_partitions() if tp in ctx.leadership])
    for broker_id in live:
        b.batch.mark_full(broker_id)
    for tp in ctx.all_partitions():
        if tp in ctx.leadership and not ctx.is_queued_for_deletion(tp.topic):
            b.batch.leader_and_isr([r for r in ctx.replicas(tp) if ctx.is_broker_live(r)], tp)
    online_or_elect(b, ctx.partitions_without_leader())
    remove_dead_from_isr(b, ctx.all_partitions())
    then = chain(
        resume_reassignments,
        resume_deletions_decision,
        _resume_preferred_election,
        partial(delete_notifications, paths=tuple(isr_change_notifications)),
    )
    return b.decision(retry=redo_failover, then=then)


def redo_failover(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
    """The failover's partition writes that lost a race, done again from what is now read."""
    b = DecisionBuilder(ctx)
    online_or_elect(b, tps)
    remove_dead_from_isr(b, sorted(tps))
    return b.decision(retry=redo_failover)


def _resume_preferred_election(ctx: ControllerContext) -> Decision:
    if ctx.preferred_admin is None:
        return Decision(context=ctx)
    return on_preferred_replica_election(ctx, ctx.preferred_admin)

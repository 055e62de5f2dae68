"""Topic deletion (seed B; Kafka's TopicDeletionManager).

A topic listed under /admin/delete_topics is queued. Its deletion starts at
once: reassignments of its partitions are called off, clients are told the
topic is going (UpdateMetadata with leader -2), every replica on a live broker gets
StopReplica(delete) and waits in ReplicaDeletionStarted for the broker's
answer; replicas on dead brokers (or on a log dir their broker reported
offline) are ReplicaDeletionIneligible and the topic waits for those
brokers to return (register again). When every replica has answered success,
the topic's znodes and the trigger are deleted and the topic leaves the
context. No partition state is written on the way: the znodes go anyway.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.model import (
    Decision, DeleteAdminPath, DeleteTopicZnodes, PartitionReplica, SetReassignments, TopicPartition,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk import layout

NONE = 0   # Kafka's error code for success


def on_delete_topics(ctx: ControllerContext, topics: Iterable[str]) -> Decision:
    """/admin/delete_topics changed; `topics` are its children now."""
    b = DecisionBuilder(ctx)
    for topic in sorted(set(topics)):
        if not ctx.config.delete_topic_enable or topic not in ctx.topic_ids:
            # Kafka drops the request: deletion disabled, or no such topic.
            b.write(DeleteAdminPath(layout.delete_topic(topic)))
        else:
            b.ctx.topics_to_delete.add(topic)
    resume_deletions(b)
    return b.decision()


def on_stop_replica_response(ctx: ControllerContext, broker_id: int, broker_epoch: int,
                             errors: Mapping[TopicPartition, int]) -> Decision:
    """A broker answered a StopReplica(delete); `errors` per partition, 0 = deleted.
    Answers from an earlier incarnation of the broker are ignored: that
    incarnation's deletions were already marked ineligible when it died."""
    b = DecisionBuilder(ctx)
    if ctx.broker_epoch(broker_id) != broker_epoch:
        return b.decision()
    states = b.ctx.replica_states
    for tp, error in sorted(errors.items()):
        replica = PartitionReplica(tp, broker_id)
        if not ctx.is_queued_for_deletion(tp.topic):
            continue
        if rsm.current_state(states, replica) is not ReplicaStateName.DELETION_STARTED:
            continue
        if error == NONE:
            rsm.transition(states, replica, ReplicaStateName.DELETION_SUCCESSFUL)
        else:
            rsm.transition(states, replica, ReplicaStateName.DELETION_INELIGIBLE)
            b.ctx.deletion_ineligible.add(tp.topic)
    resume_deletions(b)
    return b.decision()


def resume_deletions_decision(ctx: ControllerContext, eligible_again: Iterable[str] = ()) -> Decision:
    b = DecisionBuilder(ctx)
    b.ctx.deletion_ineligible.difference_update(eligible_again)
    resume_deletions(b)
    return b.decision()


def resume_deletions(b: DecisionBuilder) -> None:
    for topic in sorted(b.ctx.topics_to_delete):
        _advance(b, topic)


def _advance(b: DecisionBuilder, topic: str) -> None:
    ctx = b.ctx
    if topic not in ctx.topic_ids:
        # Never known (or already gone): only the trigger is left to remove;
        # never delete topic znodes the controller has not seen.
        ctx.topics_to_delete.discard(topic)
        b.write(DeleteAdminPath(layout.delete_topic(topic)))
        return
    tps = ctx.partitions_of(topic)
    replicas = [r for tp in tps for r in ctx.partition_replicas(tp)]
    states = [rsm.current_state(ctx.replica_states, r) for r in replicas]
    if all(s is ReplicaStateName.DELETION_SUCCESSFUL for s in states):
        _complete(b, topic)
    elif any(s is ReplicaStateName.DELETION_STARTED for s in states):
        return                                   # waiting for StopReplica answers
    elif topic in ctx.deletion_ineligible:
        return
    else:
        _start(b, topic, tps, replicas)


def _start(b: DecisionBuilder, topic: str, tps: list[TopicPartition],
           replicas: list[PartitionReplica]) -> None:
    ctx = b.ctx
    _cancel_reassignments(b, tps)
    for tp in tps:
        if tp in ctx.partition_states:
            psm.transition(ctx.partition_states, tp, PartitionStateName.OFFLINE)
            psm.transition(ctx.partition_states, tp, PartitionStateName.NON_EXISTENT)
    b.batch.update_metadata(ctx.live_brokers, tps)
    for replica in replicas:
        if rsm.current_state(ctx.replica_states, replica) is ReplicaStateName.DELETION_SUCCESSFUL:
            continue
        if ctx.is_replica_online(replica.broker_id, replica.topic_partition):
            rsm.start_deletion(ctx.replica_states, replica)
            b.batch.stop_replica(replica.broker_id, replica.topic_partition, delete=True)
        else:
            rsm.mark_ineligible(ctx.replica_states, replica)
            ctx.deletion_ineligible.add(topic)


def _cancel_reassignments(b: DecisionBuilder, tps: list[TopicPartition]) -> None:
    """A topic being deleted has nowhere to move to. Kafka instead holds the
    deletion until the move is done, which never happens when the move waits
    for a leader that a topic being deleted no longer gets elected. Every
    replica of the full set (adding ones included) is deleted anyway."""
    moving = [tp for tp in tps if tp in b.ctx.reassignments]
    for tp in moving:
        del b.ctx.reassignments[tp]
    listed = [tp for tp in tps if tp in b.ctx.reassign_admin]
    for tp in listed:
        del b.ctx.reassign_admin[tp]
    if listed:
        if b.ctx.reassign_admin:
            b.write(SetReassignments(tuple(sorted(b.ctx.reassign_admin.items()))))
        else:
            b.write(DeleteAdminPath(layout.REASSIGN_PARTITIONS))


def _complete(b: DecisionBuilder, topic: str) -> None:
    ctx = b.ctx
    tps = ctx.partitions_of(topic)
    ctx.forget_offline_dirs_for(tps)
    for tp in tps:
        for replica in ctx.partition_replicas(tp):
            rsm.transition(ctx.replica_states, replica, ReplicaStateName.NON_EXISTENT)
        ctx.partition_states.pop(tp, None)
        ctx.assignments.pop(tp, None)
        ctx.leadership.pop(tp, None)
        ctx.reassign_admin.pop(tp, None)
    ctx.topic_ids.pop(topic, None)
    ctx.unclean_overrides.pop(topic, None)
    ctx.topics_to_delete.discard(topic)
    ctx.deletion_ineligible.discard(topic)
    b.write(DeleteTopicZnodes(topic))
    b.write(DeleteAdminPath(layout.delete_topic(topic)))

"""Controlled shutdown (seed 002; Kafka's doControlledShutdown).

The broker asks before it stops. It is marked shutting down (no new
leaderships, no ISR membership from elections); each partition it leads with
another replica gets a new leader by the controlled-shutdown election (never
a replica on an offline log dir); it
leaves the ISR of the partitions it follows and gets StopReplica (no delete)
for them. The reply lists the partitions it still leads, so the broker can
retry or give up.
"""

from __future__ import annotations

from functools import partial
from typing import Iterable

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import announce, remove_from_isr, sorted_unique
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.election import Elected, controlled_shutdown_election
from kafkactl.cluster.controller.model import (
    ControlledShutdownReply, Decision, PartitionReplica, TopicPartition,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName

STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
BROKER_NOT_AVAILABLE = "BROKER_NOT_AVAILABLE"


def on_controlled_shutdown(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> Decision:
    """`broker_epoch` from the request; -1 (old request versions) is not checked."""
    if broker_id not in ctx.live_brokers:
        return Decision(context=ctx, replies=(ControlledShutdownReply(broker_id, BROKER_NOT_AVAILABLE, ()),))
    if broker_epoch != -1 and broker_epoch != ctx.broker_epoch(broker_id):
        return Decision(context=ctx, replies=(ControlledShutdownReply(broker_id, STALE_BROKER_EPOCH, ()),))
    b = DecisionBuilder(ctx)
    b.ctx.shutting_down.add(broker_id)
    move_away(b, broker_id, partitions_to_move(b.ctx, broker_id))
    return b.decision(retry=partial(_redo, broker_id=broker_id), then=partial(_reply, broker_id=broker_id))


def partitions_to_move(ctx: ControllerContext, broker_id: int) -> list[TopicPartition]:
    # A single-replica partition has nowhere to go; topics being deleted go anyway.
    return [tp for tp in ctx.partitions_on_brokers([broker_id])
            if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership and not ctx.is_queued_for_deletion(tp.topic)]


def move_away(b: DecisionBuilder, broker_id: int, tps: Iterable[TopicPartition]) -> None:
    ctx = b.ctx
    for tp in sorted_unique(tps):
        state = ctx.leadership.get(tp)
        if state is None or ctx.is_queued_for_deletion(tp.topic):
            continue
        if state.leader == broker_id:
            live = ctx.online_replicas(tp, ctx.live_brokers.keys())    # shutting-down brokers included
            result = controlled_shutdown_election(ctx.replicas(tp), state.isr, live, ctx.shutting_down)
            if isinstance(result, Elected):
                b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
                psm.transition(ctx.partition_states, tp, PartitionStateName.ONLINE)
                # The old leader stops instead of following: a follower that is
                # about to stop would fetch, rejoin the ISR and then hold every
                # acks=-1 produce until the leader drops it again.
                announce(b, tp, exclude=[broker_id])
                rsm.take_offline(ctx.replica_states, PartitionReplica(tp, broker_id))
                b.batch.stop_replica(broker_id, tp, delete=False)
        else:
            rsm.take_offline(ctx.replica_states, PartitionReplica(tp, broker_id))
            b.batch.stop_replica(broker_id, tp, delete=False)
            remove_from_isr(b, tp, [broker_id], announce_exclude=[broker_id])


def _redo(ctx: ControllerContext, tps: frozenset[TopicPartition], broker_id: int) -> Decision:
    b = DecisionBuilder(ctx)
    if broker_id in ctx.shutting_down:
        move_away(b, broker_id, tps)
    return b.decision(retry=partial(_redo, broker_id=broker_id))


def _reply(ctx: ControllerContext, broker_id: int) -> Decision:
    remaining = tuple(tp for tp in ctx.partitions_led_by(broker_id)
                      if len(ctx.replicas(tp)) > 1 and not ctx.is_queued_for_deletion(tp.topic))
    return Decision(context=ctx, replies=(ControlledShutdownReply(broker_id, None, remaining),))

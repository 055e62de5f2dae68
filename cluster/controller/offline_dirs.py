"""Replicas on offline log dirs (Kafka's onReplicasBecomeOffline after a
LeaderAndIsrResponseReceived): a broker answered LeaderAndIsr with
KAFKA_STORAGE_ERROR for some partitions, so its replicas of them cannot
store anything.

The controller remembers them (ControllerContext.replicas_on_offline_dirs,
Kafka's replicasOnOfflineDirs) until the broker registers again (a new
broker epoch) or dies, and until the partition is deleted. Meanwhile the
replica is not online (ControllerContext.is_replica_online): no election of
any kind picks it, no ISR the controller writes adds it, a topic deletion
waits for it as for a dead broker. An ISR a leader writes itself is taken
as it is, as Kafka's ZooKeeper-era controller does: a replica that cannot
store the partition does not fetch, so no leader adds it. A new controller
starts knowing none (the brokers answer its full LeaderAndIsr afresh, as
in Kafka). Kafka also forgets a replica its broker later answers for
without error; the I/O layer here passes on only the errors, so it is
forgotten at the broker's next registration.

Rules, per partition (one write at most):
- the replica is remembered, then goes to OfflineReplica (unless its topic
  is being deleted: the deletion decides);
- if it led, a new leader is elected as for an offline leader, among the
  online replicas in the ISR (unclean: among all online replicas, if
  allowed); the new ISR leaves it out. With no such replica, the partition
  is left without a leader (Offline), the ISR losing it unless it was the
  last member (Kafka's removeReplicasFromIsr);
- if it followed, it leaves the ISR;
- the LeaderAndIsr that announces the new state goes to the partition's
  other live replicas, not to the broker that cannot store it (Kafka's
  election sends it to the online replicas only): told again, a broker
  whose log could not be created in one dir would create it in another and
  fetch as if nothing had happened.
A response from an earlier incarnation of the broker (another broker
epoch) is ignored: the broker has registered again and been told its
replicas anew. Answering again for a replica already out is a no-op, so a
broker that keeps answering KAFKA_STORAGE_ERROR causes no further writes.
"""

from __future__ import annotations

from functools import partial
from typing import Iterable

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import announce, remove_from_isr, sorted_unique
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.election import Elected, offline_election
from kafkactl.cluster.controller.model import Decision, PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName


def on_leader_and_isr_response(ctx: ControllerContext, broker_id: int, broker_epoch: int,
                               offline: Iterable[TopicPartition]) -> Decision:
    """`offline`: the partitions the broker answered KAFKA_STORAGE_ERROR for."""
    b = DecisionBuilder(ctx)
    if broker_id not in ctx.live_brokers or broker_epoch != ctx.broker_epoch(broker_id):
        return b.decision()
    offline = sorted_unique(offline)
    b.ctx.replicas_offline_on_dirs(broker_id, offline)
    replicas_offline(b, broker_id, offline)
    return b.decision(retry=partial(_redo, broker_id=broker_id))


def replicas_offline(b: DecisionBuilder, broker_id: int, tps: Iterable[TopicPartition]) -> None:
    ctx = b.ctx
    for tp in sorted_unique(tps):
        if tp not in ctx.assignments or broker_id not in ctx.replicas(tp) or ctx.is_queued_for_deletion(tp.topic):
            continue
        rsm.take_offline(ctx.replica_states, PartitionReplica(tp, broker_id))
        state = ctx.leadership.get(tp)
        if state is None:
            continue
        if state.leader == broker_id:
            _elect_without(b, tp, broker_id)
        elif broker_id in state.isr:
            remove_from_isr(b, tp, [broker_id], announce_exclude=[broker_id])


def _elect_without(b: DecisionBuilder, tp: TopicPartition, broker_id: int) -> None:
    ctx = b.ctx
    state = ctx.leadership[tp]
    # The replica is remembered already, so it is not among the online ones.
    result = offline_election(ctx.replicas(tp), state.isr, ctx.online_replicas(tp), ctx.unclean_enabled(tp.topic))
    if isinstance(result, Elected):
        b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
        psm.transition(ctx.partition_states, tp, PartitionStateName.ONLINE)
        announce(b, tp, exclude=[broker_id])
    else:
        remove_from_isr(b, tp, [broker_id], announce_exclude=[broker_id])   # leader -1: the partition is Offline


def _redo(ctx: ControllerContext, tps: frozenset[TopicPartition], broker_id: int) -> Decision:
    """The partitions whose writes lost a race, from their states read again."""
    b = DecisionBuilder(ctx)
    if broker_id in ctx.live_brokers:
        replicas_offline(b, broker_id, tps)
    return b.decision(retry=partial(_redo, broker_id=broker_id))

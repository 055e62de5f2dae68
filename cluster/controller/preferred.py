"""Preferred replica election (/admin/preferred_replica_election) and the
automatic leader rebalance (Kafka's checkAndTriggerAutoLeaderRebalance).

The preferred replica is the first of the assignment. It takes over when it
is online (its broker registered and not shutting down, the replica not on
an offline log dir) and in the ISR; partitions being reassigned or deleted are left
alone, and so are those it leads already.
"""

from __future__ import annotations

from typing import Iterable

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import announce, sorted_unique
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.election import Elected, preferred_election
from kafkactl.cluster.controller.model import Decision, DeleteAdminPath, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.zk import layout


def on_preferred_replica_election(ctx: ControllerContext,
                                  partitions: Iterable[TopicPartition] | None) -> Decision:
    """The znode was created; `partitions` is its content (None: it is gone)."""
    b = DecisionBuilder(ctx)
    if partitions is None:
        b.ctx.preferred_admin = None
        return b.decision()
    b.ctx.preferred_admin = frozenset(partitions)
    elect_preferred(b, b.ctx.preferred_admin)
    return b.decision(retry=redo_preferred, then=_delete_trigger)


def _delete_trigger(ctx: ControllerContext) -> Decision:
    b = DecisionBuilder(ctx)
    if ctx.preferred_admin is not None:
        b.ctx.preferred_admin = None
        b.write(DeleteAdminPath(layout.PREFERRED_REPLICA_ELECTION))
    return b.decision()


def on_auto_leader_rebalance(ctx: ControllerContext) -> Decision:
    """The rebalance timer fired (leader.imbalance.check.interval.seconds)."""
    b = DecisionBuilder(ctx)
    if ctx.config.auto_leader_rebalance_enable:
        elect_preferred(b, rebalance_candidates(ctx))
    return b.decision(retry=redo_preferred)


def rebalance_candidates(ctx: ControllerContext) -> list[TopicPartition]:
    """Per preferred broker: if more than leader.imbalance.per.broker.percentage
    of the partitions it should lead are led by others, those it can take back."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        replicas = ctx.replicas(tp)
        if replicas and not ctx.is_queued_for_deletion(tp.topic):
            by_preferred.setdefault(replicas[0], []).append(tp)
    candidates = []
    for broker_id, tps in sorted(by_preferred.items()):
        not_led = [tp for tp in tps if tp in ctx.leadership and ctx.leadership[tp].leader != broker_id]
        if len(not_led) * 100 <= ctx.config.leader_imbalance_per_broker_percentage * len(tps):
            continue
        candidates.extend(tp for tp in not_led
                          if not ctx.is_being_reassigned(tp) and ctx.is_replica_online(broker_id, tp)
                          and broker_id in ctx.leadership[tp].isr)
    return candidates


def elect_preferred(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    ctx = b.ctx
    online = ctx.online_brokers()          # once, not per partition: a rebalance moves thousands
    for tp in sorted_unique(tps):
        if tp not in ctx.assignments or ctx.is_queued_for_deletion(tp.topic) or ctx.is_being_reassigned(tp):
            continue
        state = ctx.leadership.get(tp)
        replicas = ctx.replicas(tp)
        if state is None or state.leader == replicas[0]:
            continue
        result = preferred_election(replicas, state.isr, ctx.online_replicas(tp, online))
        if isinstance(result, Elected):
            b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
            psm.transition(ctx.partition_states, tp, PartitionStateName.ONLINE)
            announce(b, tp)


def redo_preferred(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
    b = DecisionBuilder(ctx)
    elect_preferred(b, tps)
    return b.decision(retry=redo_preferred)

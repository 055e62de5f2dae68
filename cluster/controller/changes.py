"""Per-partition leadership changes shared by the operations.

Each function works on one DecisionBuilder and a set of partitions, and is
safe to run again on the same partitions after their states were read anew:
that is how a failed conditional write is retried (the `redo_*` functions).
"""

from __future__ import annotations

from typing import Iterable

from kafkactl.cluster.controller import partition_state_machine as psm
from kafkactl.cluster.controller import replica_state_machine as rsm
from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.context import ControllerContext
from kafkactl.cluster.controller.election import Elected, offline_election
from kafkactl.cluster.controller.model import NO_LEADER, Decision, DeleteNotification, PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.zk.codecs import PartitionState

ONLINE = PartitionStateName.ONLINE
OFFLINE = PartitionStateName.OFFLINE


def announce(b: DecisionBuilder, tp: TopicPartition, new_replicas: Iterable[int] = (),
             exclude: Iterable[int] = ()) -> None:
    """LeaderAndIsr to the partition's live replicas, UpdateMetadata to every live broker."""
    ctx = b.ctx
    live = ctx.live_brokers
    excluded = exclude or ()
    assignment = ctx.assignments.get(tp)
    recipients = [r for r in assignment.replicas if r in live and r not in excluded] if assignment else []
    if new_replicas:
        b.batch.leader_and_isr(recipients, tp, new_replicas)
        b.batch.update_metadata_live(tp)
    else:
        b.batch.announce(recipients, tp)


# --- triggerOnlinePartitionStateChange: New and Offline partitions get a leader

def sorted_unique(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Each partition once, in order. Through a dict rather than a set: it
    keeps the order the partitions came in, usually sorted already, which
    the sort then only has to confirm (a set's order costs a full sort)."""
    return sorted(dict.fromkeys(tps))


def online_or_elect(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    for tp in sorted_unique(tps):
        _online_or_elect_one(b, tp)


def _online_or_elect_one(b: DecisionBuilder, tp: TopicPartition) -> None:
    ctx = b.ctx
    if tp not in ctx.assignments or ctx.is_queued_for_deletion(tp.topic):
        return
    current = psm.current_state(ctx.partition_states, tp)
    if tp not in ctx.leadership:
        initialize_leader(b, tp)
    elif not ctx.has_live_leader(tp) or current is OFFLINE:
        elect_offline(b, tp)
    elif current is not ONLINE:
        # A new partition whose state exists already (a previous controller
        # created it and died): adopt it and tell the replicas.
        psm.transition(ctx.partition_states, tp, ONLINE)
        _replicas_online(ctx, tp)
        announce(b, tp)


def redo_online_or_elect(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
    b = DecisionBuilder(ctx)
    online_or_elect(b, tps)
    return b.decision(retry=redo_online_or_elect)


def initialize_leader(b: DecisionBuilder, tp: TopicPartition) -> bool:
    """New partition: the first online replica leads, the online replicas are
    the ISR, leader epoch 0. With no online replica it stays New until one
    registers."""
    ctx = b.ctx
    live = [r for r in ctx.replicas(tp) if ctx.is_replica_online(r, tp)]
    if not live:
        return False
    state = PartitionState(leader=live[0], leader_epoch=0, isr=live, controller_epoch=ctx.controller_epoch)
    b.write_partition_state(tp, state)
    psm.transition(ctx.partition_states, tp, ONLINE)
    _replicas_online(ctx, tp)
    announce(b, tp, new_replicas=live)
    return True


def _replicas_online(ctx: ControllerContext, tp: TopicPartition) -> None:
    for replica in ctx.partition_replicas(tp):
        if ctx.is_broker_live(replica.broker_id) and not ctx.is_on_offline_dir(replica.broker_id, tp):
            rsm.transition(ctx.replica_states, replica, ReplicaStateName.ONLINE)


def elect_offline(b: DecisionBuilder, tp: TopicPartition, online: frozenset[int] | None = None) -> None:
    """`online`: ctx.online_brokers(), if the caller has it (a loop over many
    partitions computes it once)."""
    ctx = b.ctx
    state = ctx.leadership[tp]
    result = offline_election(ctx.assignments[tp].replicas, state.isr, ctx.online_replicas(tp, online),
                              ctx.unclean_enabled(tp.topic))
    if type(result) is Elected:
        b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
        psm.transition(ctx.partition_states, tp, ONLINE)
        announce(b, tp)
    else:
        make_leaderless(b, tp)


def make_leaderless(b: DecisionBuilder, tp: TopicPartition) -> None:
    """No replica can lead: record leader -1 so nobody follows a dead leader.
    The ISR keeps its live members; if none is live it keeps the last ones,
    who are exactly the replicas a clean election may pick when they return."""
    ctx = b.ctx
    state = ctx.leadership[tp]
    live_isr = [r for r in state.isr if ctx.is_broker_live(r)]
    new_isr = live_isr or list(state.isr)
    if state.leader != NO_LEADER or new_isr != list(state.isr):
        b.write_next_state(tp, NO_LEADER, new_isr, state.leader_recovery_state)
        announce(b, tp)
    psm.transition(ctx.partition_states, tp, OFFLINE)


def remove_from_isr(b: DecisionBuilder, tp: TopicPartition, broker_ids: Iterable[int],
                    announce_exclude: Iterable[int] = ()) -> bool:
    """Kafka's removeReplicasFromIsr: the brokers leave the ISR (never emptying
    it); if one of them led, the partition is left without a leader."""
    ctx = b.ctx
    state = ctx.leadership[tp]
    removed = set(broker_ids)
    if not removed.intersection(state.isr) and state.leader not in removed:
        return False
    new_isr = [r for r in state.isr if r not in removed] or list(state.isr)
    leader = NO_LEADER if state.leader in removed else state.leader
    if leader == state.leader and new_isr == list(state.isr):
        return False
    b.write_next_state(tp, leader, new_isr, state.leader_recovery_state)
    if leader == NO_LEADER:
        psm.transition(ctx.partition_states, tp, OFFLINE)
    announce(b, tp, exclude=announce_exclude)
    return True


def remove_dead_from_isr(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    """Partitions with a live leader lose their unregistered ISR members (one
    conditional write each): at controller failover (Kafka's OfflineReplica
    at start-up), and when a leader announces an ISR that names a broker
    which is still running but has lost its registration (its metadata may
    not say so yet). A partition this decision already writes (just
    elected) has its ISR from live brokers already."""
    ctx = b.ctx
    live, leadership = ctx.live_brokers, ctx.leadership
    for tp in tps:
        state = leadership.get(tp)
        if (state is None or state.leader not in live or ctx.is_queued_for_deletion(tp.topic)
                or b.writes_state_of(tp)):
            continue
        dead = [r for r in state.isr if r not in live]
        if dead:
            remove_from_isr(b, tp, dead)


def redo_remove_dead_from_isr(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
    """remove_dead_from_isr's writes that lost a race, done again from what is now read."""
    b = DecisionBuilder(ctx)
    remove_dead_from_isr(b, sorted(tps))
    return b.decision(retry=redo_remove_dead_from_isr)


def delete_notifications(ctx: ControllerContext, paths: tuple[str, ...]) -> Decision:
    """Delete ISR change (or log dir event) notifications that carry no news any more: their partitions
    were read after they were written, or the brokers they name were sent LeaderAndIsr."""
    b = DecisionBuilder(ctx)
    for path in paths:
        b.write(DeleteNotification(path))
    return b.decision()


# --- onReplicasBecomeOffline: after brokers died

def handle_offline_replicas(b: DecisionBuilder, tps: Iterable[TopicPartition]) -> None:
    """Partitions whose leader is gone get a new one from the live ISR; the
    others lose their dead followers from the ISR. One write per partition."""
    ctx = b.ctx
    # One pass with the context's lookups hoisted: a broker's death runs this
    # for every partition it held (10,000s), so per-partition work is kept to
    # the election, the write and the announcement.
    assignments, leadership, live = ctx.assignments, ctx.leadership, ctx.live_brokers
    partition_states, deleting = ctx.partition_states, ctx.topics_to_delete
    online = ctx.online_brokers()
    offline_dirs = ctx.replicas_on_offline_dirs      # nearly always empty
    unclean: dict[str, bool] = {}
    for tp in sorted_unique(tps):
        if tp not in assignments or tp.topic in deleting:
            continue
        state = leadership.get(tp)
        if state is None:
            continue
        if state.leader == NO_LEADER or state.leader not in live:     # no live leader
            # elect_offline, with what it looks up hoisted out of the loop.
            topic = tp.topic
            if topic not in unclean:
                unclean[topic] = ctx.unclean_enabled(topic)
            replicas = assignments[tp].replicas
            live_replicas = ctx.online_replicas(tp, online) if offline_dirs else online
            result = offline_election(replicas, state.isr, live_replicas, unclean[topic])
            if type(result) is Elected:
                b.write_next_state(tp, result.leader, result.isr, result.leader_recovery_state)
                psm.transition(partition_states, tp, ONLINE)
                b.batch.announce([r for r in replicas if r in live], tp)
            else:
                make_leaderless(b, tp)
            continue
        dead = [r for r in state.isr if r not in live]
        if dead:
            remove_from_isr(b, tp, dead)


def redo_offline_replicas(ctx: ControllerContext, tps: frozenset[TopicPartition]) -> Decision:
    b = DecisionBuilder(ctx)
    handle_offline_replicas(b, tps)
    return b.decision(retry=redo_offline_replicas)


def replicas_on(ctx: ControllerContext, broker_ids: Iterable[int],
                partitions: list[TopicPartition] | None = None) -> list[PartitionReplica]:
    """The brokers' replicas, by partition, each partition's in assignment
    order. `partitions`: ctx.partitions_on_brokers(broker_ids), if the caller
    has it."""
    wanted = set(broker_ids)
    assignments = ctx.assignments
    if partitions is None:
        partitions = ctx.partitions_on_brokers(wanted)
    # tuple.__new__: a NamedTuple's own constructor is a Python function, and
    # a broker's death lists every replica it held.
    new = tuple.__new__
    return [new(PartitionReplica, (tp, r)) for tp in partitions for r in assignments[tp].replicas if r in wanted]

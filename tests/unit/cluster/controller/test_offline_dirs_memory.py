"""Replicas on offline log dirs are remembered (Kafka's replicasOnOfflineDirs):
after a broker answered LeaderAndIsr with KAFKA_STORAGE_ERROR for a
partition, no later step elects that replica or puts it back into an ISR,
until the broker registers again (new broker epoch) or dies."""

import pytest

from kafkactl.cluster.controller.builder import DecisionBuilder
from kafkactl.cluster.controller.changes import online_or_elect
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.decisions import (
    on_auto_leader_rebalance, on_broker_change, on_controlled_shutdown, on_delete_topics, on_isr_change,
    on_leader_and_isr_response, on_partition_reassignment, on_preferred_replica_election, on_stop_replica_response,
)
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import NO_LEADER, PartitionReplica, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName as P
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import make_context, registration, run_chain, state
from kafkactl.cluster.invariant import InvariantViolation

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
EPOCH_OF = {1: 101, 2: 102, 3: 103}        # testing.registration: 100 + broker id


def cluster(unclean=False, states=None):
    return make_context(
        live=(1, 2, 3),
        topics={"t": {0: [2, 1, 3], 1: [1, 2, 3], 2: [2, 3]}},
        states=states or {("t", 0): state(1, [1, 3]), ("t", 1): state(1, [1, 2, 3]), ("t", 2): state(3, [3])},
        config=ControllerConfig(unclean_leader_election_enable=unclean),
    )


def told(ctx, broker_id, *tps):
    """The broker answered KAFKA_STORAGE_ERROR for `tps`."""
    after, _ = run_chain(ctx, on_leader_and_isr_response(ctx, broker_id, EPOCH_OF[broker_id], tps))
    check_invariants(after, ctx)
    return after


def leader_wrote(ctx, tp, isr):
    """The partition's leader changed its ISR in ZooKeeper (Kafka's ZooKeeper-era
    AlterIsr) and announced it; the controller takes it as it is."""
    current = ctx.leadership[tp]
    written = state(current.leader, isr, current.leader_epoch, current.zk_version + 1, current.controller_epoch)
    after, _ = run_chain(ctx, on_isr_change(ctx, {tp: written}))
    assert after.leadership[tp].isr == list(isr)
    return after


def brokers(*ids, bounced=()):
    return {b: registration(b, 900 + b if b in bounced else None) for b in ids}


def test_the_replicas_are_remembered_per_broker_and_go_offline():
    after = told(cluster(), 2, A, B, TopicPartition("gone", 0))
    assert after.replicas_on_offline_dirs == {2: frozenset({A, B})}      # unknown partitions left out
    assert after.replica_states[PartitionReplica(A, 2)] is R.OFFLINE
    assert after.leadership[B].isr == [1, 3]
    again = told(after, 2, C)
    assert again.replicas_on_offline_dirs == {2: frozenset({A, B, C})}
    assert not after.is_replica_online(2, A) and after.is_replica_online(2, TopicPartition("t", 9))


def test_an_answer_of_an_earlier_incarnation_is_not_remembered():
    ctx = cluster()
    after, _ = run_chain(ctx, on_leader_and_isr_response(ctx, 2, 7, [A]))
    assert after.replicas_on_offline_dirs == {}


def test_a_later_broker_failure_does_not_elect_it_even_uncleanly():
    # t-0: 2 is a follower out of the ISR and cannot store the partition.
    # When 1 and 3 die, an unclean election would pick 2, the only live replica.
    ctx = told(cluster(unclean=True), 2, A)
    assert ctx.leadership[A].leader == 1            # it led nothing: no write for t-0
    after, _ = run_chain(ctx, on_broker_change(ctx, brokers(2)))
    assert after.leadership[A].leader == NO_LEADER and after.partition_states[A] is P.OFFLINE
    # Its other replicas are elected as before: t-1 cleanly, t-2 uncleanly.
    assert (after.leadership[B].leader, after.leadership[B].isr) == (2, [2])
    assert after.leadership[C].leader == 2
    check_invariants(after, ctx)


def test_without_the_answer_the_same_failure_elects_it_uncleanly():
    ctx = cluster(unclean=True)
    after, _ = run_chain(ctx, on_broker_change(ctx, brokers(2)))
    assert after.leadership[A].leader == 2


def test_a_later_clean_election_skips_it_even_if_a_leader_put_it_back_into_the_isr():
    ctx = leader_wrote(told(cluster(), 2, A), A, [1, 2, 3])
    after, _ = run_chain(ctx, on_broker_change(ctx, brokers(2, 3)))
    assert (after.leadership[A].leader, after.leadership[A].isr) == (3, [3])
    check_invariants(after, ctx)


def test_a_new_partition_is_initialized_without_it():
    # A LeaderAndIsr answered for a partition whose state a previous
    # controller created and this one has not read (it is New here).
    ctx = told(make_context(live=(1, 2, 3), topics={"t": {0: [2, 1, 3]}}, states={("t", 0): None}), 2, A)
    assert ctx.replica_states[PartitionReplica(A, 2)] is R.OFFLINE
    b = DecisionBuilder(ctx)
    online_or_elect(b, [A])
    decision = b.decision(retry=lambda c, _tps: None)
    (write,) = decision.zk_writes
    assert (write.state.leader, write.state.isr) == (1, [1, 3])
    assert decision.context.replica_states[PartitionReplica(A, 2)] is R.OFFLINE
    check_invariants(decision.context, ctx)


def test_a_preferred_election_does_not_elect_it():
    # t-2: 2 led alone and cannot store it: the partition is left without a
    # leader, its ISR still [2] (Kafka never empties it). The preferred
    # replica, 2, is in that ISR and its broker is live.
    ctx = told(cluster(states={("t", 2): state(2, [2])}), 2, C)
    assert (ctx.leadership[C].leader, ctx.leadership[C].isr) == (NO_LEADER, [2])
    after, made = run_chain(ctx, on_preferred_replica_election(ctx, [C]))
    assert after.leadership[C] == ctx.leadership[C]
    assert not any(d.zk_writes for d in made[:1])


def test_the_automatic_rebalance_does_not_move_leadership_to_it():
    ctx = make_context(live=(1, 2, 3), topics={"t": {0: [2, 1, 3]}}, states={("t", 0): state(1, [1, 2, 3])},
                       config=ControllerConfig(leader_imbalance_per_broker_percentage=0))
    ctx = leader_wrote(told(ctx, 2, A), A, [1, 2, 3])
    decision = on_auto_leader_rebalance(ctx)
    assert decision.zk_writes == ()
    # Once broker 2 registers again, the rebalance moves leadership back to it.
    back, _ = run_chain(ctx, on_broker_change(ctx, brokers(1, 2, 3, bounced=(2,))))
    back = leader_wrote(back, A, [1, 3, 2])
    (write,) = on_auto_leader_rebalance(back).zk_writes
    assert write.state.leader == 2


def test_a_reassignment_does_not_choose_it_as_leader():
    # t-1 moves from [1, 2, 3] to [2, 3]; its leader 1 leaves, and 2, first
    # of the target, is in the ISR (its leader put it back) but cannot store it.
    ctx = leader_wrote(told(cluster(), 2, B), B, [1, 2, 3])
    after, _ = run_chain(ctx, on_partition_reassignment(ctx, {B: (2, 3)}))
    assert after.assignments[B].replicas == (2, 3)
    assert after.leadership[B].leader == 3
    check_invariants(after, ctx)


def test_a_controlled_shutdown_does_not_choose_it_as_leader():
    ctx = leader_wrote(told(cluster(), 2, B), B, [1, 2, 3])
    after, _ = run_chain(ctx, on_controlled_shutdown(ctx, 1, EPOCH_OF[1]))
    assert (after.leadership[B].leader, after.leadership[B].isr) == (3, [2, 3])
    check_invariants(after, ctx)


def test_it_is_forgotten_when_its_broker_registers_with_a_new_epoch():
    ctx = told(cluster(states={("t", 2): state(2, [2])}), 2, C)
    same, made = run_chain(ctx, on_broker_change(ctx, brokers(1, 2, 3)))       # nothing new
    assert same.replicas_on_offline_dirs == {2: frozenset({C})} and not made[0].zk_writes
    after, _ = run_chain(ctx, on_broker_change(ctx, brokers(1, 2, 3, bounced=(2,))))
    assert after.replicas_on_offline_dirs == {}
    # The new incarnation is told again and may lead what it led: t-2's ISR was [2].
    assert (after.leadership[C].leader, after.leadership[C].isr) == (2, [2])
    check_invariants(after, ctx)


def test_it_is_forgotten_when_its_broker_dies():
    ctx = told(cluster(), 2, A)
    after, _ = run_chain(ctx, on_broker_change(ctx, brokers(1, 3)))
    assert after.replicas_on_offline_dirs == {}


def test_a_topic_deletion_waits_for_it_and_forgets_it_with_the_partitions():
    ctx = told(cluster(), 2, A)
    ctx, _ = run_chain(ctx, on_delete_topics(ctx, ["t"]))
    assert ctx.replica_states[PartitionReplica(A, 2)] is R.DELETION_INELIGIBLE     # as on a dead broker
    assert ctx.replica_states[PartitionReplica(B, 2)] is R.DELETION_STARTED
    for broker_id, tps in ((1, [A, B]), (3, [A, B, C]), (2, [B, C])):
        ctx, _ = run_chain(ctx, on_stop_replica_response(ctx, broker_id, EPOCH_OF[broker_id],
                                                         {tp: 0 for tp in tps}))
    assert "t" in ctx.topic_ids and "t" in ctx.deletion_ineligible               # waits for A@2
    ctx = told(ctx, 3, C)                      # remembered, though its topic is being deleted
    assert ctx.replicas_on_offline_dirs == {2: frozenset({A}), 3: frozenset({C})}
    # Broker 2 registers again: A@2 is online again and gets its StopReplica.
    ctx, made = run_chain(ctx, on_broker_change(ctx, brokers(1, 2, 3, bounced=(2,))))
    assert ctx.replica_states[PartitionReplica(A, 2)] is R.DELETION_STARTED
    assert ctx.replicas_on_offline_dirs == {3: frozenset({C})}
    ctx, _ = run_chain(ctx, on_stop_replica_response(ctx, 2, 902, {A: 0}))
    assert "t" not in ctx.topic_ids and ctx.replicas_on_offline_dirs == {}      # gone with the partitions


def test_the_invariants_refuse_a_leader_on_an_offline_log_dir():
    ctx = cluster()
    ctx.replicas_offline_on_dirs(1, [B])
    ctx.replica_states[PartitionReplica(B, 1)] = R.OFFLINE
    with pytest.raises(InvariantViolation, match="offline log dir"):
        check_invariants(ctx)


def test_the_invariants_refuse_an_online_replica_on_an_offline_log_dir_or_a_dead_broker_remembered():
    ctx = cluster()
    ctx.replicas_offline_on_dirs(2, [A])
    with pytest.raises(InvariantViolation, match="OnlineReplica"):
        check_invariants(ctx)
    ctx = cluster()
    ctx.replicas_on_offline_dirs[7] = frozenset({A})
    with pytest.raises(InvariantViolation, match="not live"):
        check_invariants(ctx)


def test_the_changed_partitions_check_sees_a_newly_remembered_replica():
    before = cluster()
    ctx = before.copy()
    ctx.replicas_offline_on_dirs(1, [B])
    ctx.replica_states[PartitionReplica(B, 1)] = R.OFFLINE
    assert before.replicas_on_offline_dirs == {}                  # copies do not share it
    with pytest.raises(InvariantViolation, match="offline log dir"):
        check_invariants(ctx, before, only_changed=True)

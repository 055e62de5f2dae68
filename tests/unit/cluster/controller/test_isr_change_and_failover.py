"""ISR change notifications and controller failover."""

from dataclasses import replace

from kafkactl.cluster.controller.decisions import load_context, on_controller_failover, on_isr_change
from kafkactl.cluster.controller.failover import ClusterSnapshot
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    NO_LEADER, DeleteAdminPath, DeleteNotification, LeaderAndIsr, StopReplica, TopicPartition, UpdateMetadata,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName as P
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import commit, make_context, registration, run_chain, state
from kafkactl.cluster.zk.codecs import TopicAssignment

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_newer_states_are_taken_and_announced_older_ones_ignored():
    ctx = make_context(topics={"t": {0: [1, 2, 3], 1: [1, 2]}})
    shrunk = replace(ctx.leadership[T0], isr=[1, 2], zk_version=8)
    stale = replace(ctx.leadership[T1], isr=[1], zk_version=6)
    decision = on_isr_change(ctx, {T0: shrunk, T1: stale, TopicPartition("x", 0): shrunk},
                             ["/isr_change_notification/isr_change_0000000001"])
    assert decision.zk_writes == ()       # nothing to correct: the notification goes next
    metadata = [r for r in decision.requests if isinstance(r, UpdateMetadata)]
    assert {r.broker_id for r in metadata} == {1, 2, 3}
    assert [(p.topic_partition, p.isr, p.zk_version) for p in metadata[0].partitions] == [(T0, (1, 2), 8)]
    after, made = run_chain(ctx, decision)
    assert [d.zk_writes for d in made[1:]] == [(DeleteNotification("/isr_change_notification/isr_change_0000000001"),)]
    assert after.leadership[T0].isr == [1, 2] and after.leadership[T1].isr == [1, 2]
    check_invariants(after, ctx)


def test_a_leader_announcing_an_unregistered_follower_in_its_isr_has_it_removed():
    # Broker 3 lost its registration but still fetches; leader 1 had not heard
    # and added it back. Only the controller knows liveness: it takes 3 out.
    ctx = make_context(topics={"t": {0: [1, 2, 3]}}, live=[1, 2])
    grown = replace(ctx.leadership[T0], isr=[1, 2, 3], zk_version=ctx.leadership[T0].zk_version + 1)
    decision = on_isr_change(ctx, {T0: grown}, ["/isr_change_notification/isr_change_0000000002"])
    written = [w for w in decision.zk_writes if not isinstance(w, DeleteNotification)]
    assert [(w.state.leader, w.state.isr, w.expected_zk_version) for w in written] == [(1, [1, 2], grown.zk_version)]
    assert any(isinstance(r, LeaderAndIsr) and r.broker_id == 1 for r in decision.requests)
    after, made = run_chain(ctx, decision)
    assert after.leadership[T0].isr == [1, 2]
    assert made[-1].zk_writes == (DeleteNotification("/isr_change_notification/isr_change_0000000002"),)


def snapshot():
    return ClusterSnapshot(
        controller_epoch=9, controller_epoch_zk_version=9,
        brokers={b: registration(b) for b in (1, 2)},
        topics={"t": TopicAssignment({0: [1, 2], 1: [3, 2], 2: [2]}, topic_id="id-t"),
                "gone": TopicAssignment({0: [3]}, topic_id="id-g")},
        partition_states={T0: state(1, [1, 2]), T1: state(3, [3, 2]), TopicPartition("gone", 0): state(3, [3])},
        topics_to_delete=frozenset({"gone"}),
        preferred_election=frozenset({T0}),
    )


def test_load_starts_state_machines_from_zookeeper():
    ctx = load_context(snapshot(), controller_id=2)
    assert (ctx.controller_id, ctx.controller_epoch) == (2, 9)
    assert ctx.partition_states[T0] is P.ONLINE and ctx.partition_states[T1] is P.OFFLINE
    assert ctx.partition_states[TopicPartition("t", 2)] is P.NEW
    assert ctx.replica_states[(T1, 3)] is R.OFFLINE
    assert ctx.replica_states[(TopicPartition("gone", 0), 3)] is R.DELETION_INELIGIBLE


def test_failover_sends_everything_elects_and_resumes():
    ctx = load_context(snapshot(), controller_id=2)
    decision = on_controller_failover(ctx, ["/isr_change_notification/isr_change_1"])
    writes = {w.topic_partition: w.state for w in decision.zk_writes}
    assert (writes[T1].leader, writes[T1].isr) == (2, [2])                 # offline partition elected
    assert (writes[TopicPartition("t", 2)].leader, writes[TopicPartition("t", 2)].zk_version) == (2, 0)
    full = {r.broker_id: r for r in decision.requests if isinstance(r, LeaderAndIsr)}
    assert set(full) == {1, 2} and all(r.full for r in full.values())
    assert {p.topic_partition for p in full[2].partitions} == {T0, T1, TopicPartition("t", 2)}
    metadata = [r for r in decision.requests if isinstance(r, UpdateMetadata)]
    assert {r.broker_id for r in metadata} == {1, 2}
    after, made = run_chain(ctx, decision)
    later = [w for d in made[1:] for w in d.zk_writes]
    assert DeleteAdminPath("/admin/preferred_replica_election") in later
    assert DeleteNotification("/isr_change_notification/isr_change_1") in later
    # deletion of "gone" waits for broker 3; it is told nothing meanwhile
    assert not any(isinstance(r, StopReplica) for d in made for r in d.requests)
    assert "gone" in after.topics_to_delete and after.leadership[T1].leader == 2
    check_invariants(after)


def test_failover_marks_unelectable_partitions_leaderless():
    ctx = make_context(live=(2,), topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1])})
    (write,) = on_controller_failover(ctx).zk_writes
    assert (write.state.leader, write.state.isr) == (NO_LEADER, [1])


def test_failover_takes_brokers_that_died_before_it_out_of_every_isr():
    """Broker 3 died with (or before) the old controller: it follows in T0 and
    T1 and must leave both ISRs; T2's leader is live with a live ISR (untouched);
    T3 lost its leader and is elected from the live ISR (one write, no second)."""
    topics = {"t": {0: [1, 2, 3], 1: [2, 3], 2: [1, 2], 3: [3, 1]}}
    ctx = make_context(live=(1, 2), topics=topics, states={
        ("t", 0): state(1, [1, 3, 2]), ("t", 1): state(2, [2, 3]),
        ("t", 2): state(1, [1, 2]), ("t", 3): state(3, [3, 1])})
    decision = on_controller_failover(ctx)
    writes = {w.topic_partition: w.state for w in decision.zk_writes}
    assert (writes[T0].leader, writes[T0].isr) == (1, [1, 2])
    assert (writes[T1].leader, writes[T1].isr) == (2, [2])
    assert TopicPartition("t", 2) not in writes
    assert (writes[TopicPartition("t", 3)].leader, writes[TopicPartition("t", 3)].isr) == (1, [1])
    announced = {(r.broker_id, p.topic_partition): tuple(p.isr) for r in decision.requests
                 if isinstance(r, LeaderAndIsr) for p in r.partitions}
    assert announced[(1, T0)] == (1, 2) and announced[(2, T1)] == (2,)
    after = commit(ctx, decision)
    assert all(set(s.isr) <= {1, 2} for s in after.leadership.values())
    check_invariants(after, ctx)

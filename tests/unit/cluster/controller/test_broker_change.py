"""Broker failure and start-up (seed A and E) on hand-built contexts."""

from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.decisions import on_broker_change, on_broker_failure, on_broker_startup
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    NO_LEADER, RECOVERING, CreatePartitionState, LeaderAndIsr, TopicPartition, UpdateMetadata,
    UpdatePartitionState,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.controller.testing import commit, make_context, registration, run_chain, state

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def three_partitions():
    return make_context(
        live=(1, 2, 3),
        topics={"t": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}},
        states={("t", 0): state(1, [1, 2, 3], zk_version=10),
                ("t", 1): state(2, [2, 3, 1], zk_version=20),
                ("t", 2): state(3, [3, 1], zk_version=30)},
    )


def by_partition(writes):
    return {w.topic_partition: w for w in writes}


def test_failed_leader_is_replaced_from_live_isr_and_followers_leave_the_isr():
    ctx = three_partitions()
    decision = on_broker_failure(ctx, [1])
    writes = by_partition(decision.zk_writes)
    assert all(isinstance(w, UpdatePartitionState) for w in writes.values())
    assert (writes[T0].state.leader, writes[T0].state.isr, writes[T0].state.leader_epoch) == (2, [2, 3], 4)
    assert (writes[T1].state.leader, writes[T1].state.isr) == (2, [2, 3])
    assert (writes[T2].state.leader, writes[T2].state.isr) == (3, [3])
    assert [writes[tp].expected_zk_version for tp in (T0, T1, T2)] == [10, 20, 30]
    assert all(w.state.controller_epoch == ctx.controller_epoch for w in writes.values())
    check_invariants(commit(ctx, decision), ctx)


def test_requests_carry_the_new_states_to_live_brokers_only():
    decision = on_broker_failure(three_partitions(), [1])
    assert {r.broker_id for r in decision.requests} == {2, 3}
    leader_and_isr = [r for r in decision.requests if isinstance(r, LeaderAndIsr)]
    assert {r.broker_id for r in leader_and_isr} == {2, 3}
    entry = {p.topic_partition: p for p in leader_and_isr[0].partitions}[T0]
    assert (entry.leader, entry.leader_epoch, entry.isr, entry.zk_version) == (2, 4, (2, 3), 11)
    assert entry.replicas == (1, 2, 3)
    metadata = [r for r in decision.requests if isinstance(r, UpdateMetadata)]
    assert {r.broker_id for r in metadata} == {2, 3}
    assert [b.broker_id for b in metadata[0].live_brokers] == [2, 3]
    assert {p.topic_partition for p in metadata[0].partitions} == {T0, T1, T2}
    assert all(r.broker_epoch == 100 + r.broker_id for r in decision.requests)


def test_dead_brokers_replicas_go_offline_and_it_is_no_longer_live():
    ctx = commit(three_partitions(), decision := on_broker_failure(three_partitions(), [1]))
    assert 1 not in ctx.live_brokers
    assert all(s is ReplicaStateName.OFFLINE for r, s in ctx.replica_states.items() if r.broker_id == 1)
    assert decision.retry is not None


def test_no_live_isr_leaves_the_partition_leaderless_keeping_the_last_isr():
    ctx = make_context(live=(1, 2), topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1])})
    after = commit(ctx, decision := on_broker_failure(ctx, [1]))
    (write,) = decision.zk_writes
    assert (write.state.leader, write.state.isr, write.state.leader_epoch) == (NO_LEADER, [1], 4)
    assert after.partition_states[T0] is PartitionStateName.OFFLINE
    check_invariants(after, ctx)


def test_unclean_election_when_the_topic_allows_it():
    ctx = make_context(live=(1, 2), topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1])},
                       configs={"t": {"unclean.leader.election.enable": "true"}})
    (write,) = on_broker_failure(ctx, [1]).zk_writes
    assert (write.state.leader, write.state.isr, write.state.leader_recovery_state) == (2, [2], RECOVERING)


def test_broker_default_for_unclean_election_applies_without_topic_override():
    ctx = make_context(live=(1, 2), topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1])},
                       config=ControllerConfig(unclean_leader_election_enable=True))
    (write,) = on_broker_failure(ctx, [1]).zk_writes
    assert write.state.leader == 2


def test_unknown_or_already_dead_broker_changes_nothing():
    decision = on_broker_failure(three_partitions(), [9])
    assert decision.zk_writes == () and decision.requests == ()


def test_returning_broker_gets_full_leader_and_isr_and_is_elected_where_offline():
    ctx = make_context(live=(2,), topics={"t": {0: [1, 2], 1: [1]}},
                       states={("t", 0): state(2, [2]), ("t", 1): state(NO_LEADER, [1])})
    decision = on_broker_startup(ctx, {1: registration(1)})
    (write,) = decision.zk_writes
    assert write.topic_partition == T1 and (write.state.leader, write.state.isr) == (1, [1])
    to_new = [r for r in decision.requests if r.broker_id == 1]
    leader_and_isr = next(r for r in to_new if isinstance(r, LeaderAndIsr))
    assert leader_and_isr.full and {p.topic_partition for p in leader_and_isr.partitions} == {T0, T1}
    metadata_new = next(r for r in to_new if isinstance(r, UpdateMetadata))
    metadata_old = next(r for r in decision.requests if r.broker_id == 2 and isinstance(r, UpdateMetadata))
    assert len(metadata_new.partitions) == 2
    assert [b.broker_id for b in metadata_old.live_brokers] == [1, 2]
    after = commit(ctx, decision)
    assert after.partition_states[T1] is PartitionStateName.ONLINE
    check_invariants(after, ctx)


def test_partition_created_while_no_replica_was_live_is_initialized_on_startup():
    ctx = make_context(live=(2,), topics={"t": {0: [1]}}, states={("t", 0): None})
    assert ctx.partition_states[T0] is PartitionStateName.NEW
    (write,) = on_broker_startup(ctx, {1: registration(1)}).zk_writes
    assert isinstance(write, CreatePartitionState)
    assert write.state == state(1, [1], leader_epoch=0, zk_version=0, controller_epoch=5)


def test_broker_change_tells_dead_new_and_bounced_brokers_apart():
    ctx = three_partitions()
    registrations = {2: registration(2, broker_epoch=999), 3: registration(3), 4: registration(4)}
    after, made = run_chain(ctx, on_broker_change(ctx, registrations))
    assert sorted(after.live_brokers) == [2, 3, 4]
    assert after.live_brokers[2].broker_epoch == 999
    # broker 2 bounced: its old leadership ended (failure), then it came back
    failure_writes = by_partition(made[0].zk_writes)
    assert failure_writes[T1].state.leader == 3
    startup_requests = [r for d in made[1:] for r in d.requests if r.broker_id == 2]
    assert any(isinstance(r, LeaderAndIsr) and r.full and r.broker_epoch == 999 for r in startup_requests)
    check_invariants(after, ctx)


def test_broker_change_without_changes_decides_nothing():
    ctx = three_partitions()
    decision = on_broker_change(ctx, {b: registration(b) for b in (1, 2, 3)})
    assert decision.is_empty

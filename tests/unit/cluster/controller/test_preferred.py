"""Preferred replica election and the automatic leader rebalance."""

from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.decisions import on_auto_leader_rebalance, on_preferred_replica_election
from kafkactl.cluster.controller.model import DeleteAdminPath, TopicPartition
from kafkactl.cluster.controller.testing import commit, make_context, run_chain, state

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_preferred_replica_takes_over_when_live_and_in_isr_then_the_trigger_goes():
    ctx = make_context(topics={"t": {0: [1, 2], 1: [3, 2]}},
                       states={("t", 0): state(2, [2, 1]), ("t", 1): state(2, [2])})
    ctx_after, made = run_chain(ctx, on_preferred_replica_election(ctx, [T0, T1]))
    (write,) = made[0].zk_writes
    assert write.topic_partition == T0 and (write.state.leader, write.state.isr) == (1, [2, 1])
    assert made[1].zk_writes == (DeleteAdminPath("/admin/preferred_replica_election"),)
    assert ctx_after.preferred_admin is None


def test_preferred_skips_partitions_already_led_by_it_and_moving_ones():
    ctx = make_context(topics={"t": {0: [1, 2]}}, reassignments={("t", 0): [2, 1]})
    assert on_preferred_replica_election(ctx, [T0]).zk_writes == ()


def test_rebalance_moves_leaders_back_when_imbalance_exceeds_the_threshold():
    topics = {"t": {p: [1, 2] for p in range(10)}}
    one_off = {("t", 0): state(2, [1, 2])}
    ctx = make_context(topics=topics, states=one_off)           # 1 of 10 = 10%: not above
    assert on_auto_leader_rebalance(ctx).zk_writes == ()
    two_off = {("t", 0): state(2, [1, 2]), ("t", 1): state(2, [1, 2])}
    ctx = make_context(topics=topics, states=two_off)           # 20% > 10%
    assert {w.topic_partition for w in on_auto_leader_rebalance(ctx).zk_writes} == {T0, T1}
    stingy = ControllerConfig(leader_imbalance_per_broker_percentage=50)
    assert on_auto_leader_rebalance(make_context(topics=topics, states=two_off, config=stingy)).zk_writes == ()
    off = ControllerConfig(auto_leader_rebalance_enable=False)
    assert on_auto_leader_rebalance(make_context(topics=topics, states=two_off, config=off)).zk_writes == ()


def test_rebalance_leaves_out_preferred_replicas_not_in_the_isr():
    ctx = make_context(topics={"t": {0: [1, 2]}}, states={("t", 0): state(2, [2])})
    assert on_auto_leader_rebalance(ctx).zk_writes == ()
    after = commit(ctx, on_auto_leader_rebalance(ctx))
    assert after.leadership[T0].leader == 2

"""New topics and partitions (seed B and H) and topic config changes."""

from kafkactl.cluster.controller.decisions import on_topic_change, on_topic_config_change
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    NO_LEADER, CreatePartitionState, LeaderAndIsr, TopicPartition, UpdateMetadata, UpdatePartitionState,
)
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName
from kafkactl.cluster.controller.testing import commit, make_context, state
from kafkactl.cluster.zk.codecs import TopicAssignment


def test_new_topic_first_live_replica_leads_and_live_replicas_are_the_isr():
    ctx = make_context(live=(1, 2, 3), topics={})
    topic = TopicAssignment({0: [4, 2, 3], 1: [3, 1, 2]}, topic_id="id-new")
    decision = on_topic_change(ctx, {"new": topic})
    writes = {w.topic_partition: w for w in decision.zk_writes}
    assert all(isinstance(w, CreatePartitionState) for w in writes.values())
    p0, p1 = writes[TopicPartition("new", 0)].state, writes[TopicPartition("new", 1)].state
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.controller_epoch) == (2, [2, 3], 0, ctx.controller_epoch)
    assert (p1.leader, p1.isr) == (3, [3, 1, 2])
    leader_and_isr = {r.broker_id: r for r in decision.requests if isinstance(r, LeaderAndIsr)}
    assert set(leader_and_isr) == {1, 2, 3}
    assert all(p.is_new and p.zk_version == 0 for r in leader_and_isr.values() for p in r.partitions)
    assert {r.broker_id for r in decision.requests if isinstance(r, UpdateMetadata)} == {1, 2, 3}
    after = commit(ctx, decision)
    assert after.topic_ids["new"] == "id-new"
    assert after.partition_states[TopicPartition("new", 0)] is PartitionStateName.ONLINE
    assert after.replica_states[(TopicPartition("new", 0), 4)] is ReplicaStateName.NEW   # dead replica waits
    check_invariants(after, ctx)


def test_partition_without_live_replica_stays_new():
    ctx = make_context(live=(1,), topics={})
    decision = on_topic_change(ctx, {"new": TopicAssignment({0: [2, 3]}, topic_id="x")})
    assert decision.zk_writes == ()
    after = commit(ctx, decision)
    assert after.partition_states[TopicPartition("new", 0)] is PartitionStateName.NEW
    check_invariants(after, ctx)


def test_added_partitions_of_a_known_topic_are_created_and_others_untouched():
    ctx = make_context(topics={"t": {0: [1, 2, 3]}})
    changed = TopicAssignment({0: [3, 2, 1], 1: [2, 3, 1]}, topic_id="id-t")   # p0 change ignored
    decision = on_topic_change(ctx, {"t": changed})
    (write,) = decision.zk_writes
    assert write.topic_partition == TopicPartition("t", 1)
    assert commit(ctx, decision).assignments[TopicPartition("t", 0)].replicas == (1, 2, 3)


def test_topics_being_deleted_and_foreign_topic_ids_are_ignored():
    ctx = make_context(topics={"t": {0: [1]}}, deleting=("t",))
    assert on_topic_change(ctx, {"t": TopicAssignment({0: [1], 1: [2]}, topic_id="id-t")}).zk_writes == ()
    ctx = make_context(topics={"t": {0: [1]}})
    assert on_topic_change(ctx, {"t": TopicAssignment({0: [1], 1: [2]}, topic_id="other")}).zk_writes == ()


def test_enabling_unclean_election_elects_the_topics_offline_partitions():
    ctx = make_context(live=(2,), topics={"t": {0: [1, 2]}}, states={("t", 0): state(NO_LEADER, [1])})
    decision = on_topic_config_change(ctx, "t", {"unclean.leader.election.enable": "true"})
    (write,) = decision.zk_writes
    assert isinstance(write, UpdatePartitionState) and (write.state.leader, write.state.isr) == (2, [2])
    assert commit(ctx, decision).unclean_overrides == {"t": True}
    assert on_topic_config_change(ctx, "t", {"retention.ms": "1"}).zk_writes == ()

"""Partition reassignment (seed F with KIP-455's steps)."""

from dataclasses import replace

from kafkactl.cluster.controller.decisions import on_isr_change, on_partition_reassignment
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    DeleteAdminPath, LeaderAndIsr, SetReassignments, StopReplica, TopicPartition, UpdatePartitionState,
    UpdateTopicAssignment,
)
from kafkactl.cluster.controller.reassignment import resume_reassignments
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import commit, make_context, run_chain, state
from kafkactl.cluster.zk.codecs import TopicAssignment

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
ADMIN = "/admin/reassign_partitions"


def cluster():
    return make_context(live=(1, 2, 3, 4), topics={"t": {0: [1, 2, 3], 1: [2, 3]}},
                        states={("t", 0): state(1, [1, 2, 3], zk_version=10), ("t", 1): state(2, [2, 3])})


def test_start_writes_the_full_replica_set_then_bumps_the_epoch_and_starts_adding_replicas():
    ctx = cluster()
    start = on_partition_reassignment(ctx, {T0: [2, 3, 4]})
    (topic_write,) = start.zk_writes
    assert isinstance(topic_write, UpdateTopicAssignment)
    assert topic_write.assignment.partitions[0] == [2, 3, 4, 1]
    assert topic_write.assignment.adding_replicas == {0: [4]}
    assert topic_write.assignment.removing_replicas == {0: [1]}
    ctx = commit(ctx, start)
    move = start.then(ctx)
    (bump,) = move.zk_writes
    assert isinstance(bump, UpdatePartitionState)
    assert (bump.state.leader, bump.state.isr, bump.state.leader_epoch) == (1, [1, 2, 3], 4)
    leader_and_isr = {r.broker_id: r for r in move.requests if isinstance(r, LeaderAndIsr)}
    assert set(leader_and_isr) == {1, 2, 3, 4}
    entry = leader_and_isr[4].partitions[0]
    assert entry.is_new and entry.replicas == (2, 3, 4, 1)
    assert (entry.adding_replicas, entry.removing_replicas) == ((4,), (1,))
    assert not leader_and_isr[1].partitions[0].is_new
    ctx = commit(ctx, move)
    assert ctx.replica_states[(T0, 4)] is R.NEW
    check_invariants(ctx)


def test_completes_once_the_target_is_in_the_isr():
    ctx, _ = run_chain(cluster(), on_partition_reassignment(cluster(), {T0: [2, 3, 4]}))
    current = ctx.leadership[T0]
    caught_up = replace(current, isr=[1, 2, 3, 4], zk_version=current.zk_version + 1)
    ctx, made = run_chain(ctx, on_isr_change(ctx, {T0: caught_up}, ["/isr_change_notification/isr_change_1"]))
    completion = next(d for d in made if any(isinstance(w, UpdatePartitionState) for w in d.zk_writes))
    (write,) = completion.zk_writes
    # leader 1 leaves: the first target replica live and in the ISR leads
    assert (write.state.leader, write.state.isr) == (2, [2, 3, 4])
    assert write.expected_zk_version == caught_up.zk_version
    (stop,) = [r for r in completion.requests if isinstance(r, StopReplica)]
    assert stop.broker_id == 1 and stop.delete
    entries = [p for r in completion.requests if isinstance(r, LeaderAndIsr) for p in r.partitions]
    assert {p.replicas for p in entries} == {(2, 3, 4)}
    assert {r.broker_id for r in completion.requests if isinstance(r, LeaderAndIsr)} == {2, 3, 4}
    finish = made[made.index(completion) + 1]
    assert finish.zk_writes == (
        UpdateTopicAssignment("t", TopicAssignment({0: [2, 3, 4], 1: [2, 3]}, topic_id="id-t")),
        DeleteAdminPath(ADMIN),
    )
    assert not ctx.reassignments and not ctx.reassign_admin
    assert ctx.assignments[T0].replicas == (2, 3, 4) and (T0, 1) not in ctx.replica_states
    assert ctx.replica_states[(T0, 4)] is R.ONLINE
    check_invariants(ctx)


def test_leader_in_the_target_stays_and_only_the_epoch_moves():
    ctx = cluster()
    ctx, made = run_chain(ctx, on_partition_reassignment(ctx, {T0: [1, 2]}))   # target already in ISR
    (write,) = [w for d in made for w in d.zk_writes if isinstance(w, UpdatePartitionState)]
    assert (write.state.leader, write.state.isr, write.state.leader_epoch) == (1, [1, 2], 4)
    assert ctx.assignments[T0].replicas == (1, 2) and not ctx.reassignments


def test_admin_znode_is_rewritten_while_other_partitions_still_move():
    ctx = cluster()
    ctx, made = run_chain(ctx, on_partition_reassignment(ctx, {T0: [1, 2], T1: [3, 4]}))
    assert SetReassignments(((T1, (3, 4)),)) in [w for d in made for w in d.zk_writes]
    assert set(ctx.reassignments) == {T1}


def test_invalid_requests_are_dropped_from_the_admin_znode():
    ctx = cluster()
    decision = on_partition_reassignment(ctx, {T0: [1, 9], TopicPartition("x", 0): [1], T1: [2, 2]})
    assert decision.zk_writes == (DeleteAdminPath(ADMIN),) and decision.then is None
    assert on_partition_reassignment(ctx, {T1: [2, 3]}).zk_writes == (DeleteAdminPath(ADMIN),)  # no change


def test_a_different_target_for_a_moving_partition_waits_until_it_is_done():
    ctx, _ = run_chain(cluster(), on_partition_reassignment(cluster(), {T0: [2, 3, 4]}))
    decision = on_partition_reassignment(ctx, {T0: [1, 4]})
    assert decision.zk_writes == () and commit(ctx, decision).reassignments[T0].target == (2, 3, 4)


def test_failover_resumes_from_the_topic_znode():
    ctx, _ = run_chain(cluster(), on_partition_reassignment(cluster(), {T0: [2, 3, 4]}))
    reloaded = make_context(live=(1, 2, 3, 4), topics={"t": {0: [2, 3, 4, 1], 1: [2, 3]}},
                            states={("t", 0): ctx.leadership[T0], ("t", 1): ctx.leadership[T1]})
    reloaded.assignments[T0] = ctx.assignments[T0]       # adding/removing as the topic znode holds them
    resumed, made = run_chain(reloaded, resume_reassignments(reloaded))
    assert resumed.reassignments[T0].target == (2, 3, 4)
    bump = [w for d in made for w in d.zk_writes if isinstance(w, UpdatePartitionState)]
    assert len(bump) == 1 and bump[0].state.leader == 1


def test_the_epoch_bump_leaves_an_unregistered_broker_out_of_the_isr():
    # A state re-read after a lost race (simulation seed 1091): leader 1 had
    # added broker 3, which still ran after losing its registration. The bump
    # rewrites the ISR, and the controller never writes a dead broker into it.
    ctx = make_context(live=(1, 2, 4), topics={"t": {0: [1, 2, 3]}},
                       states={("t", 0): state(1, [1, 2, 3], zk_version=10)})
    start = on_partition_reassignment(ctx, {T0: [1, 2, 4]})
    ctx = commit(ctx, start)
    (bump,) = start.then(ctx).zk_writes
    assert (bump.state.leader, bump.state.isr) == (1, [1, 2])

"""Topic deletion (seed B): StopReplica with delete to every replica;
complete once every replica reported success; dead brokers finish on return."""

from kafkactl.cluster.controller.decisions import (
    on_broker_failure, on_broker_startup, on_delete_topics, on_stop_replica_response,
)
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.context import ControllerConfig
from kafkactl.cluster.controller.model import (
    EPOCH_DURING_DELETE, LEADER_DURING_DELETE, DeleteAdminPath, DeleteTopicZnodes, SetReassignments,
    StopReplica, TopicPartition, UpdateMetadata,
)
from kafkactl.cluster.controller.reassignment import resume_reassignments
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import commit, make_context, registration, run_chain

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def two_partitions(live=(1, 2, 3)):
    return make_context(live=live, topics={"t": {0: [1, 2], 1: [2, 3]}, "keep": {0: [1]}})


def stops(decision):
    return {r.broker_id: r for r in decision.requests if isinstance(r, StopReplica)}


def test_deletion_sends_stop_replica_with_delete_to_every_replica():
    ctx = two_partitions()
    decision = on_delete_topics(ctx, ["t"])
    assert decision.zk_writes == ()
    requests = stops(decision)
    assert set(requests) == {1, 2, 3} and all(r.delete for r in requests.values())
    assert {p.topic_partition for p in requests[2].partitions} == {T0, T1}
    assert all(p.leader_epoch == EPOCH_DURING_DELETE for r in requests.values() for p in r.partitions)
    metadata = [r for r in decision.requests if isinstance(r, UpdateMetadata)]
    assert all(p.leader == LEADER_DURING_DELETE for r in metadata for p in r.partitions)
    after = commit(ctx, decision)
    assert {s for r, s in after.replica_states.items() if r.topic_partition.topic == "t"} == {R.DELETION_STARTED}
    check_invariants(after, ctx)


def test_deletion_completes_when_every_replica_answered():
    ctx = commit(two_partitions(), on_delete_topics(two_partitions(), ["t"]))
    ctx = commit(ctx, d1 := on_stop_replica_response(ctx, 1, 101, {T0: 0}))
    ctx = commit(ctx, d2 := on_stop_replica_response(ctx, 2, 102, {T0: 0, T1: 0}))
    assert d1.zk_writes == () and d2.zk_writes == ()
    final = on_stop_replica_response(ctx, 3, 103, {T1: 0})
    assert final.zk_writes == (DeleteTopicZnodes("t"), DeleteAdminPath("/admin/delete_topics/t"))
    after = commit(ctx, final)
    assert "t" not in after.topic_ids and not after.topics_to_delete
    assert all(tp.topic == "keep" for tp in after.assignments)
    assert all(r.topic_partition.topic == "keep" for r in after.replica_states)
    check_invariants(after, ctx)


def test_replica_on_a_dead_broker_finishes_when_it_returns():
    ctx = two_partitions(live=(1, 2))
    ctx = commit(ctx, d := on_delete_topics(ctx, ["t"]))
    assert set(stops(d)) == {1, 2}
    assert ctx.replica_states[(T1, 3)] is R.DELETION_INELIGIBLE and "t" in ctx.deletion_ineligible
    ctx = commit(ctx, on_stop_replica_response(ctx, 1, 101, {T0: 0}))
    ctx = commit(ctx, on_stop_replica_response(ctx, 2, 102, {T0: 0, T1: 0}))
    assert "t" in ctx.topics_to_delete
    ctx, made = run_chain(ctx, on_broker_startup(ctx, {3: registration(3)}))
    (stop,) = [r for d in made for r in d.requests if isinstance(r, StopReplica)]
    assert stop.broker_id == 3 and stop.delete
    ctx = commit(ctx, final := on_stop_replica_response(ctx, 3, 103, {T1: 0}))
    assert DeleteTopicZnodes("t") in final.zk_writes and "t" not in ctx.topic_ids


def test_broker_dying_with_deletion_started_makes_the_replica_ineligible():
    ctx = commit(two_partitions(), on_delete_topics(two_partitions(), ["t"]))
    ctx = commit(ctx, decision := on_broker_failure(ctx, [3]))
    assert ctx.replica_states[(T1, 3)] is R.DELETION_INELIGIBLE
    assert all(w.topic_partition.topic == "keep" for w in decision.zk_writes)   # no writes for "t"


def test_error_answer_makes_it_ineligible_and_stale_incarnations_are_ignored():
    ctx = commit(two_partitions(), on_delete_topics(two_partitions(), ["t"]))
    stale = on_stop_replica_response(ctx, 1, 55, {T0: 0})
    assert commit(ctx, stale).replica_states[(T0, 1)] is R.DELETION_STARTED
    after = commit(ctx, on_stop_replica_response(ctx, 1, 101, {T0: 56}))
    assert after.replica_states[(T0, 1)] is R.DELETION_INELIGIBLE and "t" in after.deletion_ineligible


def test_unknown_topic_or_disabled_deletion_only_removes_the_trigger():
    ctx = two_partitions()
    assert on_delete_topics(ctx, ["nope"]).zk_writes == (DeleteAdminPath("/admin/delete_topics/nope"),)
    off = make_context(topics={"t": {0: [1]}}, config=ControllerConfig(delete_topic_enable=False))
    decision = on_delete_topics(off, ["t"])
    assert decision.zk_writes == (DeleteAdminPath("/admin/delete_topics/t"),)
    assert "t" in commit(off, decision).topic_ids


def test_deletion_calls_off_the_topics_reassignments():
    ctx = make_context(live=(1, 2, 3, 4), topics={"t": {0: [1, 2]}, "u": {0: [1]}},
                       reassignments={("t", 0): [3, 4], ("u", 0): [2]})
    ctx, _ = run_chain(ctx, resume_reassignments(ctx))
    assert set(ctx.reassignments) == {T0, U0}
    decision = on_delete_topics(ctx, ["t"])
    assert decision.zk_writes == (SetReassignments(((U0, (2,)),)),)
    after = commit(ctx, decision)
    assert set(after.reassignments) == {U0} and set(after.reassign_admin) == {U0}
    started = {b for (tp, b), s in after.replica_states.items() if tp == T0 and s is R.DELETION_STARTED}
    assert started == {1, 2, 3, 4}             # the adding replicas are deleted too

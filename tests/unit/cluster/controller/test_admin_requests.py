"""The controller's side of the Admin API (admin_requests.py): ElectLeaders'
per-partition results, AlterPartitionReassignments' refusals, starts,
changes and cancellations, ListPartitionReassignments."""

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller import admin_requests as ar
from kafkactl.cluster.controller.model import StopReplica, TopicPartition, UpdateTopicAssignment
from kafkactl.cluster.controller.reassignment import start_reassignments
from kafkactl.cluster.controller.testing import make_context, run_chain, state

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
GONE = TopicPartition("gone", 0)


def test_election_candidates_settle_unknown_deleted_and_unneeded_partitions():
    ctx = make_context(topics={"t": {0: [1, 2], 1: [1, 2]}, "d": {0: [1, 2]}},
                       states={("t", 0): state(2, [2, 1])}, deleting=("d",))
    settled, electable = ar.election_candidates(ctx, [T0, T1, GONE, TopicPartition("d", 0)], unclean=False)
    assert electable == [T0]
    assert settled[T1] == (ErrorCode.election_not_needed, None)
    assert settled[GONE][0] == ErrorCode.unknown_topic_or_partition
    assert settled[TopicPartition("d", 0)] == (ErrorCode.invalid_topic_exception, "The topic is being deleted")
    # Every partition (null): the same rules over what the controller knows.
    assert ar.election_candidates(ctx, None, unclean=False)[1] == [T0]
    # Unclean: only partitions without a live leader need one.
    assert ar.election_candidates(ctx, [T0], unclean=True)[0][T0][0] == ErrorCode.election_not_needed


def test_preferred_election_elects_when_it_can_and_says_why_not_otherwise():
    ctx = make_context(topics={"t": {0: [1, 2], 1: [3, 2]}},
                       states={("t", 0): state(2, [2, 1]), ("t", 1): state(2, [2])})
    after, made = run_chain(ctx, ar.elect(ctx, frozenset({T0, T1}), unclean=False))
    assert [w.topic_partition for w in made[0].zk_writes] == [T0]
    results = ar.election_results(after, [T0, T1], unclean=False)
    assert results[T0] == (ErrorCode.none, None, 1)
    error, message, leader = results[T1]
    assert (error, leader) == (ErrorCode.preferred_leader_not_available, -1) and "not in the ISR" in message


def test_unclean_election_takes_a_live_replica_outside_the_isr_whatever_the_topic_config():
    ctx = make_context(live=(2, 3), topics={"t": {0: [1, 2], 1: [1]}},
                       states={("t", 0): state(-1, [1]), ("t", 1): state(-1, [1])})
    after, _ = run_chain(ctx, ar.elect(ctx, frozenset({T0, T1}), unclean=True))
    results = ar.election_results(after, [T0, T1], unclean=True)
    assert results[T0] == (ErrorCode.none, None, 2) and after.leadership[T0].isr == [2]
    assert results[T1][0] == ErrorCode.eligible_leaders_not_available


def test_reassignment_requests_refused_as_kafka_refuses_them():
    ctx = make_context(topics={"t": {0: [1, 2], 1: [1, 2], 2: [1, 2]}})
    results, starts, retargets = ar.reassignment_requests(ctx, {
        T0: (), T1: (2, 2), T2: (1, 9), GONE: (1, 2), TopicPartition("t", 5): None})
    assert {tp: r[0] for tp, r in results.items()} == {
        T0: ErrorCode.invalid_replica_assignment, T1: ErrorCode.invalid_replica_assignment,
        T2: ErrorCode.invalid_replica_assignment, GONE: ErrorCode.unknown_topic_or_partition,
        TopicPartition("t", 5): ErrorCode.no_reassignment_in_progress}
    assert "not alive" in results[T2][1] and starts == {} and retargets == {}
    results, starts, _ = ar.reassignment_requests(ctx, {T0: (2, 3), T1: (1, -1)})
    assert results[T0] == ar.NONE and starts == {T0: (2, 3)}
    assert results[T1][0] == ErrorCode.invalid_replica_assignment


def moving(target=(1, 2, 3)):
    """t-0 on [1, 2], moving to `target` (its adding replicas not in the ISR yet)."""
    ctx = make_context(topics={"t": {0: [1, 2]}}, states={("t", 0): state(1, [1, 2])})
    ctx, _ = run_chain(ctx, start_reassignments(ctx, {T0: target}, admin=None))
    assert T0 in ctx.reassignments
    return ctx


def test_cancelling_a_move_puts_the_original_replicas_back_and_stops_the_added_ones():
    ctx = moving()
    assert ar.ongoing_reassignments(ctx, None)[T0].adding == (3,)
    results, starts, retargets = ar.reassignment_requests(ctx, {T0: None})
    assert results[T0] == ar.NONE and retargets == {T0: (1, 2)} and starts == {}
    after, made = run_chain(ctx, ar.retarget(ctx, retargets))
    assert T0 not in after.reassignments and after.assignments[T0].replicas == (1, 2)
    assert not after.assignments[T0].is_being_reassigned
    stops = [r for d in made for r in d.requests if isinstance(r, StopReplica) and r.delete]
    assert [(r.broker_id, [p.topic_partition for p in r.partitions]) for r in stops] == [(3, [T0])]
    written = [w.assignment.partitions[0] for d in made for w in d.zk_writes if isinstance(w, UpdateTopicAssignment)]
    assert written[-1] == [1, 2]
    assert ar.ongoing_reassignments(after, None) == {}
    # Nothing left to cancel.
    assert ar.reassignment_requests(after, {T0: None})[0][T0][0] == ErrorCode.no_reassignment_in_progress


def test_a_new_target_for_a_moving_partition_drops_replicas_it_no_longer_has():
    ctx = moving((1, 3))                       # adding 3, removing 2
    results, _, retargets = ar.reassignment_requests(ctx, {T0: (2, 1)})
    assert results[T0] == ar.NONE and retargets == {T0: (2, 1)}
    after, _ = run_chain(ctx, ar.retarget(ctx, retargets))
    assert after.assignments[T0].replicas == (2, 1) and 3 not in after.leadership[T0].isr
    assert T0 not in after.reassignments       # the new target is in the ISR: done at once


def test_a_change_that_would_remove_the_leader_with_no_one_to_take_over_is_refused():
    ctx = moving((3,))                         # [1, 2] -> [3]
    # Broker 3 took the lead meanwhile and is the ISR's only member:
    # cancelling would remove the leader with nobody in the ISR to follow it.
    ctx.leadership[T0] = state(3, [3])
    results, _, retargets = ar.reassignment_requests(ctx, {T0: None})
    assert results[T0][0] == ErrorCode.invalid_replica_assignment and retargets == {}
    # With 1 back in the ISR the cancel goes through and 1 leads.
    ctx.leadership[T0] = state(3, [3, 1])
    results, _, retargets = ar.reassignment_requests(ctx, {T0: None})
    after, _ = run_chain(ctx, ar.retarget(ctx, retargets))
    assert after.leadership[T0].leader == 1 and after.assignments[T0].replicas == (1, 2)


def test_list_shows_only_partitions_being_moved():
    ctx = moving()
    assert set(ar.ongoing_reassignments(ctx, [T0, T1, GONE])) == {T0}
    assert ar.ongoing_reassignments(make_context(), None) == {}

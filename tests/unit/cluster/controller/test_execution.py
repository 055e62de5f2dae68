"""Carrying out decisions: a conditional write that fails is re-read and
redone, never dropped; a replaced controller is fenced."""

from dataclasses import replace

import pytest

from kafkactl.cluster.controller.decisions import on_broker_failure, on_preferred_replica_election, on_topic_change
from kafkactl.cluster.controller.execution import adopt_reread_states, apply_results, execute, hold_back
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import (
    ControllerFencedError, DeleteAdminPath, LeaderAndIsr, RetryLimitExceeded, StopReplica,
    StopReplicaPartition, TopicPartition, UpdateMetadata, WriteResult,
)
from kafkactl.cluster.controller.testing import FakeZk, Recorder, make_context, state
from kafkactl.cluster.zk.codecs import TopicAssignment

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
OK, BAD = WriteResult.OK, WriteResult.BAD_VERSION


def cluster():
    return make_context(live=(1, 2, 3), topics={"t": {0: [1, 2, 3], 1: [1, 3]}},
                        states={("t", 0): state(1, [1, 2, 3], zk_version=10),
                                ("t", 1): state(1, [1, 3], zk_version=20)})


def test_failed_conditional_write_restores_the_partition_and_holds_back_its_requests():
    ctx = cluster()
    decision = on_broker_failure(ctx, [1])
    order = [w.topic_partition for w in decision.zk_writes]
    outcome = apply_results(ctx, decision, [OK if tp == T0 else BAD for tp in order])
    assert outcome.reread == frozenset({T1}) and outcome.retry is decision.retry
    assert outcome.context.leadership[T0].leader == 2           # committed
    assert outcome.context.leadership[T1] == ctx.leadership[T1]  # as before, to be read again
    entries = {p.topic_partition for r in outcome.requests if not isinstance(r, StopReplica) for p in r.partitions}
    assert entries == {T0}
    assert all(isinstance(r, (LeaderAndIsr, UpdateMetadata)) for r in outcome.requests)


def test_retry_redoes_the_partition_from_the_state_read_again():
    ctx = cluster()
    decision = on_broker_failure(ctx, [1])
    order = [w.topic_partition for w in decision.zk_writes]
    outcome = apply_results(ctx, decision, [OK if tp == T0 else BAD for tp in order])
    # meanwhile the leader of t-1 had shrunk its ISR to [1]: no clean leader is left
    reread = {T1: state(1, [1], zk_version=21)}
    fresh = adopt_reread_states(outcome.context, outcome.reread, reread)
    redo = outcome.retry(fresh, outcome.reread)
    (write,) = redo.zk_writes
    assert write.expected_zk_version == 21 and (write.state.leader, write.state.isr) == (-1, [1])
    assert write.state.leader_epoch == 4


def test_execute_loops_until_every_partition_is_in_and_then_runs_the_follow_up():
    ctx = make_context(topics={"t": {0: [1, 2], 1: [1, 2]}},
                       states={("t", 0): state(2, [2, 1]), ("t", 1): state(2, [2, 1], zk_version=3)})
    zk = FakeZk(ctx)
    # a leader writes t-1 just before our write: first attempt fails
    zk.race[T1] = state(2, [2, 1], zk_version=4)
    send = Recorder()
    seen = []
    final, replies = execute(ctx, on_preferred_replica_election(ctx, [T0, T1]), zk, send,
                             on_outcome=lambda c, retrying: seen.append(retrying))
    assert final.leadership[T0].leader == 1 and final.leadership[T1].leader == 1
    assert final.leadership[T1].zk_version == 5 and zk.states[T1].zk_version == 5
    assert DeleteAdminPath("/admin/preferred_replica_election") in zk.applied
    assert frozenset({T1}) in seen
    elected = {p.topic_partition: p.zk_version for r in send.requests if isinstance(r, LeaderAndIsr)
               for p in r.partitions}
    assert elected == {T0: 8, T1: 5}
    check_invariants(final, ctx)


def test_state_created_by_someone_else_is_adopted():
    ctx = make_context(live=(1, 2), topics={})
    zk = FakeZk(ctx)
    claim = state(2, [2], leader_epoch=0, zk_version=0)
    zk.race[TopicPartition("n", 0)] = claim
    decision = on_topic_change(ctx, {"n": TopicAssignment({0: [1, 2]}, topic_id="n")})
    final, _ = execute(ctx, decision, zk, Recorder())
    assert final.leadership[TopicPartition("n", 0)] == claim
    check_invariants(final)


def test_controller_moved_fences_everything():
    ctx = cluster()
    zk = FakeZk(ctx)
    zk.moved = True
    send = Recorder()
    with pytest.raises(ControllerFencedError):
        execute(ctx, on_broker_failure(ctx, [1]), zk, send)
    assert send.requests == []


def test_rolled_back_unconditional_writes_are_written_again_and_deletes_tolerate_no_node():
    ctx = make_context(topics={"t": {0: [1]}}, preferred=[("t", 0)])
    decision = on_preferred_replica_election(ctx, [T0]).then(ctx)
    (write,) = decision.zk_writes
    outcome = apply_results(ctx, decision, [WriteResult.NOT_APPLIED])
    assert outcome.reissue is not None and outcome.reissue.zk_writes == (write,)
    assert apply_results(ctx, decision, [WriteResult.NO_NODE]).reissue is None


def test_hold_back_drops_entries_and_full_flag():
    ctx = cluster()
    decision = on_broker_failure(ctx, [1])
    to_3 = next(r for r in decision.requests if isinstance(r, LeaderAndIsr) and r.broker_id == 3)
    full = replace(to_3, full=True)
    assert {p.topic_partition for p in full.partitions} == {T0, T1}
    stop = StopReplica(2, 102, 1, 5, (StopReplicaPartition("t", 1, 4),), delete=True)
    kept = hold_back((full, stop), {T1})
    assert len(kept) == 1 and not kept[0].full and {p.topic_partition for p in kept[0].partitions} == {T0}


def test_retry_limit_stops_a_livelock():
    ctx = cluster()

    class AlwaysRacing(FakeZk):
        def apply_writes(self, writes, version):
            for w in writes:
                current = self.states[w.topic_partition]
                self.race[w.topic_partition] = replace(current, zk_version=current.zk_version + 1)
            return super().apply_writes(writes, version)

    with pytest.raises(RetryLimitExceeded):
        execute(ctx, on_broker_failure(ctx, [1]), AlwaysRacing(ctx), Recorder(), max_rounds=20)

"""Controlled shutdown (seed 002)."""

from kafkactl.cluster.controller.decisions import on_controlled_shutdown
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import ControlledShutdownReply, LeaderAndIsr, StopReplica, TopicPartition
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import make_context, run_chain, state

LED, FOLLOWED, ALONE, STUCK = (TopicPartition("t", p) for p in range(4))


def cluster():
    return make_context(
        live=(1, 2, 3),
        topics={"t": {0: [1, 2, 3], 1: [2, 1], 2: [1], 3: [1, 3]}},
        states={("t", 0): state(1, [1, 2, 3]), ("t", 1): state(2, [2, 1]),
                ("t", 2): state(1, [1]), ("t", 3): state(1, [1])},
    )


def test_leaderships_move_away_and_followed_isrs_lose_the_broker():
    ctx = cluster()
    after, made = run_chain(ctx, on_controlled_shutdown(ctx, 1, 101))
    writes = {w.topic_partition: w.state for w in made[0].zk_writes}
    assert set(writes) == {LED, FOLLOWED}
    assert (writes[LED].leader, writes[LED].isr) == (2, [2, 3])
    assert (writes[FOLLOWED].leader, writes[FOLLOWED].isr) == (2, [2])
    followed = [p.topic_partition for r in made[0].requests if isinstance(r, LeaderAndIsr) and r.broker_id == 1
                for p in r.partitions]
    assert followed == []                     # it neither follows nor leads anything any more
    (stop,) = [r for r in made[0].requests if isinstance(r, StopReplica)]
    assert stop.broker_id == 1 and not stop.delete
    assert sorted(p.topic_partition for p in stop.partitions) == sorted([LED, FOLLOWED])
    assert after.shutting_down == {1}
    assert after.replica_states[(FOLLOWED, 1)] is R.OFFLINE and after.replica_states[(LED, 1)] is R.OFFLINE
    check_invariants(after, ctx)


def test_reply_names_the_partitions_still_led_with_other_replicas():
    ctx = cluster()
    _, made = run_chain(ctx, on_controlled_shutdown(ctx, 1, 101))
    assert made[-1].replies == (ControlledShutdownReply(1, None, (STUCK,)),)


def test_stale_epoch_and_unknown_broker_are_refused():
    ctx = cluster()
    assert on_controlled_shutdown(ctx, 1, 7).replies[0].error == "STALE_BROKER_EPOCH"
    assert on_controlled_shutdown(ctx, 9, 1).replies[0].error == "BROKER_NOT_AVAILABLE"


def test_shutting_down_broker_gets_no_new_leadership():
    ctx = cluster()
    ctx, _ = run_chain(ctx, on_controlled_shutdown(ctx, 2, 102))
    from kafkactl.cluster.controller.decisions import on_broker_failure
    (write,) = [w for w in on_broker_failure(ctx, [1]).zk_writes if w.topic_partition == LED]
    assert write.state.leader == 3

"""A broker's log dir failed (Kafka's LogDirEventNotification handling and
onBrokerLogDirFailure): the notifications are deleted, and the named live
broker is sent LeaderAndIsr for every replica it holds; its answer
(KAFKA_STORAGE_ERROR for the replicas on the failed dir) then takes those
replicas offline through offline_dirs."""

from kafkactl.cluster.controller.decisions import on_leader_and_isr_response, on_log_dir_event
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import DeleteNotification, LeaderAndIsr, TopicPartition
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import make_context, run_chain, state
from kafkactl.cluster.zk import codecs

A0, A1, B0, GONE0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("gone", 0)
PATHS = ("/log_dir_event_notification/log_dir_event_0000000001",
         "/log_dir_event_notification/log_dir_event_0000000000")
EPOCH_OF_2 = 102        # testing.registration: 100 + broker id


def cluster(**kwargs):
    return make_context(
        live=(1, 2, 3),
        topics={"a": {0: [2, 1, 3], 1: [1, 2, 3]}, "b": {0: [1, 3]}, "gone": {0: [2, 3]}},
        states={("a", 0): state(2, [2, 1, 3]), ("a", 1): state(1, [1, 2, 3]), ("b", 0): state(1, [1, 3]),
                ("gone", 0): state(2, [2, 3])},
        **kwargs)


def told(decision) -> dict[int, dict[TopicPartition, tuple[int, tuple[int, ...], int]]]:
    """broker -> partition -> (leader, isr, leader epoch) of the LeaderAndIsr requests."""
    result: dict[int, dict] = {}
    for request in decision.requests:
        if isinstance(request, LeaderAndIsr):
            for p in request.partitions:
                result.setdefault(request.broker_id, {})[p.topic_partition] = (p.leader, tuple(p.isr), p.leader_epoch)
    return result


def test_every_replica_of_the_named_broker_gets_its_current_state_and_the_notifications_go():
    ctx = cluster()
    after, made = run_chain(ctx, on_log_dir_event(ctx, [2], PATHS))
    (decision,) = made
    assert list(decision.zk_writes) == [DeleteNotification(PATHS[1]), DeleteNotification(PATHS[0])]
    current = {tp: (s.leader, tuple(s.isr), s.leader_epoch) for tp, s in ctx.leadership.items()}
    # No election, no new epoch: the broker is asked which of its replicas it can still store.
    assert told(decision) == {2: {A0: current[A0], A1: current[A1], GONE0: current[GONE0]}}
    assert all(after.replica_states[(tp, 2)] is R.ONLINE for tp in (A0, A1, GONE0))
    assert after.leadership == ctx.leadership
    check_invariants(after, ctx)


def test_its_storage_errors_then_move_the_leadership_and_shrink_the_isr():
    ctx = cluster()
    after_event, _ = run_chain(ctx, on_log_dir_event(ctx, [2], PATHS[:1]))
    # The broker answers KAFKA_STORAGE_ERROR for the replicas on its failed dir.
    after, made = run_chain(after_event, on_leader_and_isr_response(after_event, 2, EPOCH_OF_2, [A0, A1]))
    writes = {w.topic_partition: w.state for w in made[0].zk_writes}
    assert (writes[A0].leader, writes[A0].isr) == (1, [1, 3])
    assert (writes[A1].leader, writes[A1].isr) == (1, [1, 3])
    assert after.is_on_offline_dir(2, A0) and not after.is_on_offline_dir(2, GONE0)
    # The new states go to the other replicas: told again, broker 2 would make the logs elsewhere.
    assert set(told(made[0])) == {1, 3}
    check_invariants(after, after_event)
    # A later notification leaves the replicas known offline alone (no OnlineReplica for them).
    again, made = run_chain(after, on_log_dir_event(after, [2], PATHS[1:]))
    assert told(made[0]) == {2: {GONE0: (2, (2, 3), ctx.leadership[GONE0].leader_epoch)}}
    assert again.replica_states[(A0, 2)] is R.OFFLINE
    check_invariants(again, after)


def test_a_broker_that_is_not_live_is_not_asked_but_its_notification_is_deleted():
    ctx = cluster()
    for brokers in ([9], []):               # unknown, or a malformed notification naming nobody
        after, made = run_chain(ctx, on_log_dir_event(ctx, brokers, PATHS[:1]))
        assert list(made[0].zk_writes) == [DeleteNotification(PATHS[0])] and not made[0].requests
        assert after.replica_states == ctx.replica_states


def test_several_notifications_of_one_broker_make_one_request_and_several_brokers_each_theirs():
    ctx = cluster()
    _, made = run_chain(ctx, on_log_dir_event(ctx, [3, 2, 3], PATHS))
    requested = told(made[0])
    assert set(requested) == {2, 3}
    assert set(requested[3]) == {A0, A1, B0, GONE0}
    assert sum(isinstance(r, LeaderAndIsr) for r in made[0].requests) == 2


def test_replicas_of_a_topic_being_deleted_are_left_to_the_deletion():
    ctx = cluster(deleting=("gone",))
    after, made = run_chain(ctx, on_log_dir_event(ctx, [2], PATHS[:1]))
    assert set(told(made[0])[2]) == {A0, A1}
    assert after.replica_states.get((GONE0, 2)) == ctx.replica_states.get((GONE0, 2))


def test_the_notification_is_kafkas_json():
    data = codecs.encode_log_dir_event(3)
    assert codecs._load("x", data) == {"version": 1, "broker": 3, "event": 1}
    assert codecs.decode_log_dir_event("x", b'{"event":1,"broker":7,"version":1}') == 7

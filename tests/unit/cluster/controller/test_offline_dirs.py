"""LeaderAndIsr answered with KAFKA_STORAGE_ERROR: the replica goes offline
(Kafka's onReplicasBecomeOffline after LeaderAndIsrResponseReceived)."""

import base64
import uuid
from types import SimpleNamespace

from kio.schema.errors import ErrorCode

from kafkactl.cluster.controller.decisions import on_leader_and_isr_response
from kafkactl.cluster.controller.execution import execute
from kafkactl.cluster.controller.invariants import check_invariants
from kafkactl.cluster.controller.model import LeaderAndIsr, LeaderAndIsrPartition, TopicPartition
from kafkactl.cluster.controller.partition_state_machine import PartitionStateName as P
from kafkactl.cluster.controller.replica_state_machine import ReplicaStateName as R
from kafkactl.cluster.controller.testing import FakeZk, Recorder, make_context, run_chain, state
from kafkactl.cluster.controller.wire import storage_errors
from kafkactl.cluster.zk.codecs import topic_id_from_string

LED, FOLLOWED, ALONE = (TopicPartition("t", p) for p in range(3))
EPOCH_OF_2 = 102        # testing.registration: 100 + broker id


def cluster(unclean=False):
    from kafkactl.cluster.controller.context import ControllerConfig
    return make_context(
        live=(1, 2, 3),
        topics={"t": {0: [2, 1, 3], 1: [1, 2, 3], 2: [2, 3]}},
        states={("t", 0): state(2, [2, 1, 3]), ("t", 1): state(1, [1, 2, 3]), ("t", 2): state(2, [2])},
        config=ControllerConfig(unclean_leader_election_enable=unclean),
    )


def test_a_led_partition_gets_a_new_leader_and_a_followed_one_loses_the_broker_from_its_isr():
    ctx = cluster()
    after, made = run_chain(ctx, on_leader_and_isr_response(ctx, 2, EPOCH_OF_2, [LED, FOLLOWED]))
    writes = {w.topic_partition: w.state for w in made[0].zk_writes}
    assert (writes[LED].leader, writes[LED].isr, writes[LED].leader_epoch) == (1, [1, 3], 4)
    assert (writes[FOLLOWED].leader, writes[FOLLOWED].isr) == (1, [1, 3])
    assert after.replica_states[(LED, 2)] is R.OFFLINE and after.replica_states[(FOLLOWED, 2)] is R.OFFLINE
    assert after.partition_states[LED] is P.ONLINE
    told = {(r.broker_id, p.topic_partition) for r in made[0].requests if isinstance(r, LeaderAndIsr)
            for p in r.partitions}
    assert {(1, LED), (3, LED), (1, FOLLOWED), (3, FOLLOWED)} <= told
    check_invariants(after, ctx)


def test_the_last_isr_member_leaves_the_partition_without_a_leader():
    ctx = cluster()
    after, made = run_chain(ctx, on_leader_and_isr_response(ctx, 2, EPOCH_OF_2, [ALONE]))
    (write,) = made[0].zk_writes
    assert (write.state.leader, write.state.isr) == (-1, [2])     # Kafka never empties the ISR
    assert after.partition_states[ALONE] is P.OFFLINE
    check_invariants(after, ctx)


def test_unclean_election_may_pick_a_live_replica_out_of_the_isr():
    ctx = cluster(unclean=True)
    after, made = run_chain(ctx, on_leader_and_isr_response(ctx, 2, EPOCH_OF_2, [ALONE]))
    (write,) = made[0].zk_writes
    assert (write.state.leader, write.state.isr) == (3, [3])
    check_invariants(after, ctx)


def test_a_second_answer_for_a_replica_already_out_writes_nothing():
    ctx = cluster()
    after, _ = run_chain(ctx, on_leader_and_isr_response(ctx, 2, EPOCH_OF_2, [LED, FOLLOWED]))
    again, made = run_chain(after, on_leader_and_isr_response(after, 2, EPOCH_OF_2, [LED, FOLLOWED]))
    assert not any(d.zk_writes or d.requests for d in made)
    assert again.leadership == after.leadership


def test_an_older_incarnation_an_unknown_broker_or_partition_is_ignored():
    ctx = cluster()
    for broker_id, epoch, tps in ((2, 7, [LED]), (9, 109, [LED]), (2, EPOCH_OF_2, [TopicPartition("gone", 0)])):
        _, made = run_chain(ctx, on_leader_and_isr_response(ctx, broker_id, epoch, tps))
        assert not any(d.zk_writes or d.requests for d in made)


def test_a_lost_conditional_write_is_redone_from_the_state_read_again():
    ctx = cluster()
    zk = FakeZk(ctx)
    # The leader of t-1 shrank its ISR to [1, 2] meanwhile (version 8).
    zk.race[FOLLOWED] = state(1, [1, 2], zk_version=8)
    after, _ = execute(ctx, on_leader_and_isr_response(ctx, 2, EPOCH_OF_2, [FOLLOWED]), zk, Recorder())
    assert (after.leadership[FOLLOWED].leader, after.leadership[FOLLOWED].isr) == (1, [1])
    assert zk.states[FOLLOWED].isr == [1]


# --- reading the storage errors out of a LeaderAndIsr response

A_ID = uuid.UUID(int=0xA)
A_ID_TEXT = base64.urlsafe_b64encode(A_ID.bytes).rstrip(b"=").decode()


def _request(*tps):
    partitions = tuple(LeaderAndIsrPartition(tp.topic, tp.partition, A_ID_TEXT if tp.topic == "a" else None,
                                             4, 1, 3, (1, 2), 7, (1, 2), (), (), False, 0)
                       for tp in tps)
    return LeaderAndIsr(broker_id=2, broker_epoch=EPOCH_OF_2, controller_id=1, controller_epoch=4,
                        partitions=partitions, live_leaders=())


def _response(error_code, *topics):
    return SimpleNamespace(error_code=error_code, topics=tuple(
        SimpleNamespace(topic_id=topic_id, partition_errors=tuple(
            SimpleNamespace(partition_index=p, error_code=code) for p, code in errors))
        for topic_id, errors in topics))


def test_storage_errors_are_read_by_topic_id_or_by_position_for_a_topic_without_one():
    request = _request(TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("legacy", 0))
    a_id = topic_id_from_string(A_ID_TEXT)
    response = _response(ErrorCode.none,
                         (a_id, [(0, ErrorCode.none), (1, ErrorCode.kafka_storage_error)]),
                         (None, [(0, ErrorCode.kafka_storage_error)]))
    assert storage_errors(request, response) == (TopicPartition("a", 1), TopicPartition("legacy", 0))


def test_a_refused_request_or_other_errors_are_no_storage_errors():
    request = _request(TopicPartition("a", 0))
    a_id = topic_id_from_string(A_ID_TEXT)
    assert storage_errors(request, _response(ErrorCode.stale_controller_epoch, (a_id, [(0, 56)]))) == ()
    assert storage_errors(request, _response(ErrorCode.none, (a_id, [(0, ErrorCode.fenced_leader_epoch)]))) == ()
    # A partition the request did not carry is not believed.
    assert storage_errors(request, _response(ErrorCode.none, (uuid.UUID(int=5), [(9, 56)]))) == ()

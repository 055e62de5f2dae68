"""Replication on the leader and the follower, in one process, without sockets
(support/replication_nodes.py). The leader's ISR changes are in test_isr_changes.py."""

import datetime
import threading
import time

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.truncation import Truncation, truncation_for
from kafkactl.cluster.broker.role_changes import StaleControllerEpochError
from support.replication_nodes import (  # noqa: F401  (clock, zk, nodes: fixtures)
    KEY, LAG_MS, TOPIC, LoopbackClient, batch, clock, control, fetcher_for, follower_fetch, nodes, produce,
    shrink, state, values_in, zk,
)


# --- the leader's high watermark ------------------------------------------------

def test_a_new_leader_holds_its_high_watermark_until_the_isr_followers_fetch(nodes):
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    produce(leader, b"a", b"b", b"c")
    assert leader.partition().high_watermark == 0
    follower_fetch(leader, 2, 0)
    assert leader.partition().high_watermark == 0
    follower_fetch(leader, 2, 2)
    assert leader.partition().high_watermark == 2
    follower_fetch(leader, 2, 3)
    assert leader.partition().high_watermark == 3
    follower_fetch(leader, 2, 1)  # a stale fetch never moves it back
    assert leader.partition().high_watermark == 3


def test_acks_all_completes_only_once_the_follower_has_the_batch(nodes):
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    result = produce(leader, b"a", acks=-1)
    assert leader.manager.await_commit(TOPIC, 0, result.last_offset, time.monotonic() + 0.05,
                                       result.leader_epoch) == ErrorCode.request_timed_out
    outcome = []
    waiter = threading.Thread(target=lambda: outcome.append(leader.manager.await_commit(
        TOPIC, 0, result.last_offset, time.monotonic() + 5, result.leader_epoch)))
    waiter.start()
    follower_fetch(leader, 2, 0)        # fetches the batch: not yet known to have it
    time.sleep(0.05)
    assert not outcome
    follower_fetch(leader, 2, 1)        # the next fetch proves it has it
    waiter.join(5)
    assert outcome == [ErrorCode.none]


def test_consumers_read_to_the_high_watermark_followers_to_the_log_end(nodes):
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    produce(leader, b"a", b"b")
    consumer = leader.manager.read(TOPIC, 0, 0, 1 << 20, 0, True)
    assert consumer.error == ErrorCode.none and consumer.region is None and consumer.high_watermark == 0
    follower = leader.manager.read_for_follower(TOPIC, 0, 2, 0, 1 << 20, 0, True)
    assert follower.error == ErrorCode.none and follower.size > 0
    stranger = leader.manager.read_for_follower(TOPIC, 0, 3, 0, 1 << 20, 0, True)
    assert stranger.error == ErrorCode.not_leader_or_follower


def test_follower_fetch_is_fenced_by_leader_epoch(nodes):
    leader = nodes(1)
    control(leader, state(1, 4, (1, 2)))
    assert leader.manager.read_for_follower(TOPIC, 0, 2, 0, 1024, 3, True).error == ErrorCode.fenced_leader_epoch
    assert leader.manager.read_for_follower(TOPIC, 0, 2, 0, 1024, 5, True).error == ErrorCode.unknown_leader_epoch
    assert follower_fetch(leader, 2, 0, epoch=3) is None


# --- LeaderAndIsr and StopReplica ---------------------------------------------

def test_leader_and_isr_rules_for_epochs_and_assignment(nodes):
    node = nodes(1)
    assert control(node, state(1, 3, (1, 2)), controller_epoch=5) == {KEY: ErrorCode.none}
    assert control(node, state(2, 3, (2, 1)), controller_epoch=5) == {KEY: ErrorCode.stale_controller_epoch}
    assert control(node, state(2, 2, (2, 1)), controller_epoch=5) == {KEY: ErrorCode.stale_controller_epoch}
    assert node.partition().is_leader and node.partition().leader_epoch == 3
    other = ("t", 1)
    assert control(node, state(2, 0, (2, 3), replicas=(2, 3), key=other), controller_epoch=5) == {
        other: ErrorCode.unknown_topic_or_partition}
    with pytest.raises(StaleControllerEpochError):
        control(node, state(2, 9, (2, 1)), controller_epoch=4)
    assert node.partition().leader_epoch == 3


def test_becoming_leader_records_the_epoch_start_and_follower_refuses_clients(nodes):
    node = nodes(1)
    control(node, state(2, 0, (2, 1)))
    assert node.manager.append(TOPIC, 0, batch(b"x"), 1).error == ErrorCode.not_leader_or_follower
    assert node.manager.read(TOPIC, 0, 0, 1024, -1, True).error == ErrorCode.not_leader_or_follower
    control(node, state(1, 1, (1, 2)))
    produce(node, b"a", b"b")
    control(node, state(1, 2, (1, 2)))
    assert node.partition().leader_epoch_start_offset == 2
    assert node.partition().log.leader_epoch_cache.entries == [(1, 0), (2, 2)]


def test_stop_replica_fences_old_epochs_and_deletes(nodes, tmp_path):
    node = nodes(1)
    control(node, state(2, 3, (2, 1)))
    assert node.manager.stop_replicas({KEY: 3}, delete=False) == {KEY: ErrorCode.fenced_leader_epoch}
    assert node.manager.stop_replicas({KEY: 4}, delete=False) == {KEY: ErrorCode.none}
    assert node.partition().leader_id == -1
    assert node.manager.stop_replicas({KEY: -2}, delete=True, controller_epoch=1) == {KEY: ErrorCode.none}
    assert node.partition() is None and node.logs.get_log(*KEY) is None
    assert not (tmp_path / "b1" / "t-0").exists()
    with pytest.raises(StaleControllerEpochError):
        node.manager.stop_replicas({KEY: -1}, delete=False, controller_epoch=0)


def test_offset_for_leader_epoch_on_the_leader(nodes):
    node = nodes(1)
    control(node, state(1, 0, (1,)))
    produce(node, b"a", b"b")
    control(node, state(1, 2, (1,)))
    produce(node, b"c")
    assert node.manager.end_offset_for_epoch(TOPIC, 0, 2, 0) == (ErrorCode.none, 0, 2)
    assert node.manager.end_offset_for_epoch(TOPIC, 0, 2, 1) == (ErrorCode.none, 0, 2)
    assert node.manager.end_offset_for_epoch(TOPIC, 0, -1, 2) == (ErrorCode.none, 2, 3)
    assert node.manager.end_offset_for_epoch(TOPIC, 0, 1, 2)[0] == ErrorCode.fenced_leader_epoch
    assert node.manager.end_offset_for_epoch(TOPIC, 9, -1, 0)[0] == ErrorCode.unknown_topic_or_partition
    control(node, state(2, 3, (2, 1)))
    assert node.manager.end_offset_for_epoch(TOPIC, 0, -1, 0)[0] == ErrorCode.not_leader_or_follower


# --- the follower: truncation and fetching -----------------------------------------

@pytest.mark.parametrize("answer, local, expected", [
    ((0, 5), (0, 8), Truncation(5, True)),          # the leader's epoch ends earlier: cut the tail
    ((0, 9), (0, 8), Truncation(8, True)),          # ours ends earlier: keep all
    ((-1, -1), (0, 8), Truncation(6, True)),        # leader knows nothing: the HW
    ((3, 7), (2, 4), Truncation(4, False)),         # epoch 3 unknown here: cut to our epoch 2, ask again
    ((3, 7), (-1, -1), Truncation(7, True)),        # no local epoch at all
])
def test_truncation_decisions(answer, local, expected):
    assert truncation_for(answer[0], answer[1], local[0], local[1], log_end_offset=8,
                          high_watermark=6) == expected


def test_two_failures_the_returning_leader_truncates_its_uncommitted_tail_by_epoch(nodes):
    a, b = nodes(1), nodes(2)
    control(a, state(1, 0, (1, 2)))
    control(b, state(1, 0, (1, 2)))
    to_b = fetcher_for(b, a, 0)
    produce(a, b"m1")
    to_b.run_once()                      # truncation round (nothing to cut)
    to_b.run_once()                      # B gets m1
    to_b.run_once()                      # B at 1: A's HW becomes 1
    assert a.partition().high_watermark == 1 and b.partition().high_watermark == 1
    produce(a, b"m2")                    # only A has it
    # A dies; B leads at epoch 1 and writes m3 at offset 1.
    to_b.remove_partitions([KEY])
    control(b, state(2, 1, (2,)))
    produce(b, b"m3")
    # A comes back as a follower of B.
    control(a, state(2, 1, (2,)))
    to_a = fetcher_for(a, b, 1)
    to_a.run_once()                      # OffsetForLeaderEpoch(0) -> B: epoch 0 ends at 1
    assert [v for _, _, v in values_in(a)] == [b"m1"]
    to_a.run_once()
    assert values_in(a) == [(0, 0, b"m1"), (1, 1, b"m3")]
    assert values_in(a) == values_in(b)


def test_a_follower_that_never_saw_the_leaders_epoch_truncates_in_two_rounds(nodes):
    a, b = nodes(1), nodes(2)
    control(b, state(2, 0, (2, 1)))
    produce(b, b"x0")
    control(a, state(2, 0, (2, 1)))
    fetcher = fetcher_for(a, b, 0)
    for _ in range(3):
        fetcher.run_once()
    fetcher.remove_partitions([KEY])
    control(b, state(2, 1, (2,)))        # epoch 1: B writes y1; A is away
    produce(b, b"y1")
    control(a, state(1, 2, (1,)))        # epoch 2: A leads alone (B away), writes a2
    produce(a, b"a2")
    control(b, state(2, 3, (2,)))        # epoch 3: B again, writes y3
    produce(b, b"y3")
    control(a, state(2, 3, (2, 1)))
    fetcher = fetcher_for(a, b, 3)
    fetcher.run_once()                   # asks about 2: B says epoch 1 ends at 2; A never saw 1
    (fetch_state,) = fetcher.partitions().values()
    assert fetch_state.truncating and a.partition().log.latest_epoch == 0
    fetcher.run_once()                   # asks about 0: ends at 1 on both
    assert not fetch_state.truncating and values_in(a) == [(0, 0, b"x0")]
    fetcher.run_once()
    assert values_in(a) == [(0, 0, b"x0"), (1, 1, b"y1"), (2, 3, b"y3")] == values_in(b)


def test_a_follower_behind_the_leaders_log_start_starts_over_there(nodes):
    a, b = nodes(1), nodes(2)
    control(a, state(1, 0, (1,)))
    produce(a, b"a", b"b")
    produce(a, b"c")
    a.partition().log.maybe_increment_log_start_offset(2)
    control(b, state(1, 0, (1, 2)))
    fetcher = fetcher_for(b, a, 0)
    fetcher.run_once()                   # truncation round (empty log: to the HW)
    fetcher.run_once()                   # out of range: start over at 2
    assert b.partition().log.log_start_offset == 2 and b.partition().log.log_end_offset == 2
    fetcher.run_once()
    assert values_in(b) == [(2, 0, b"c")]


def test_the_follower_takes_the_hw_and_log_start_from_the_leader(nodes):
    a, b = nodes(1), nodes(2)
    control(a, state(1, 0, (1, 2)))
    control(b, state(1, 0, (1, 2)))
    produce(a, b"a", b"b")
    produce(a, b"c")
    fetcher = fetcher_for(b, a, 0)
    for _ in range(3):
        fetcher.run_once()
    assert b.partition().log.log_end_offset == 3 and a.partition().high_watermark == 3
    a.partition().log.maybe_increment_log_start_offset(2)
    a.manager.note_log_start_offsets_moved()   # as the broker does after retention deleted segments
    fetcher.run_once()
    assert b.partition().high_watermark == 3 and b.partition().log.log_start_offset == 2


def test_a_fenced_follower_backs_off_and_appends_nothing(nodes):
    a, b = nodes(1), nodes(2)
    control(a, state(1, 3, (1, 2)))
    produce(a, b"a")
    control(b, state(1, 2, (1, 2)))      # B missed epoch 3's LeaderAndIsr
    fetcher = fetcher_for(b, a, 2)
    fetcher.run_once()                   # empty log: truncates to its HW without asking
    fetcher.run_once()                   # Fetch: FENCED_LEADER_EPOCH
    (fetch_state,) = fetcher.partitions().values()
    assert fetch_state.delayed_until > 0 and fetch_state.truncating
    assert b.partition().log.log_end_offset == 0


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_handler_fences_in_every_version_with_a_current_epoch(nodes, version):
    # v2+ (v0-v1 have no current leader epoch: test_old_request_versions.py)
    from kafkactl.cluster.protocol.build import module_of
    from kafkactl.cluster.protocol.codec import request_class

    node = nodes(1)
    control(node, state(1, 0, (1,)))
    produce(node, b"a", b"b")
    control(node, state(1, 1, (1,)))
    produce(node, b"c")
    cls = request_class(23, version)
    module = module_of(cls)
    partitions = (
        module.OffsetForLeaderPartition(partition=0, current_leader_epoch=1, leader_epoch=0),
        module.OffsetForLeaderPartition(partition=0, current_leader_epoch=0, leader_epoch=0),
        module.OffsetForLeaderPartition(partition=7, current_leader_epoch=-1, leader_epoch=0),
    )
    request = cls(topics=(module.OffsetForLeaderTopic(topic=TOPIC, partitions=partitions),),
                  **({"replica_id": -1} if version >= 3 else {}))
    response = LoopbackClient(node.dispatcher).request(request)
    answers = [(p.error_code, p.leader_epoch, p.end_offset) for p in response.topics[0].partitions]
    assert answers == [
        (ErrorCode.none, 0, 2),
        (ErrorCode.fenced_leader_epoch, -1, -1),
        (ErrorCode.unknown_topic_or_partition, -1, -1),
    ]


def test_acks_all_survives_a_new_epoch_for_the_same_leader_but_not_a_lost_leadership(nodes):
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    kept = produce(leader, b"a", acks=-1)
    control(leader, state(1, 1, (1, 2)))       # the controller bumped the epoch: same leader
    follower_fetch(leader, 2, 1)
    assert leader.manager.await_commit(TOPIC, 0, kept.last_offset, time.monotonic() + 1,
                                       kept.leader_epoch) == ErrorCode.none
    lost = produce(leader, b"b", acks=-1)
    control(leader, state(2, 2, (2, 1)))       # leadership moved away ...
    control(leader, state(1, 3, (1, 2)))       # ... and came back: offset 1 may hold other data now
    follower_fetch(leader, 2, 2)
    assert leader.partition().high_watermark == 2
    assert leader.manager.await_commit(TOPIC, 0, lost.last_offset, time.monotonic() + 1,
                                       lost.leader_epoch) == ErrorCode.not_leader_or_follower


# --- who a change wakes ----------------------------------------------------------

def test_an_append_wakes_followers_and_a_high_watermark_move_wakes_consumers_and_producers(nodes):
    """A replicated produce wakes each waiter when it has something: the
    followers' long polls on the append, consumers and acks=-1 producers
    when the high watermark moves (not the followers: nothing new for them)."""
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    manager = leader.manager
    follower_generation, consumer_generation = manager.follower_generation, manager.data_generation
    result = produce(leader, b"a", acks=-1)
    assert manager.follower_generation == follower_generation + 1
    assert manager.data_generation == consumer_generation          # nothing new below the HW
    commit = []
    waiter = threading.Thread(target=lambda: commit.append(manager.await_commit(
        TOPIC, 0, result.last_offset, time.monotonic() + 5, result.leader_epoch)))
    waiter.start()
    follower_generation = manager.follower_generation
    follower_fetch(leader, 2, 1)                                   # proves the follower has it: HW 1
    waiter.join(5)
    assert commit == [ErrorCode.none]
    assert manager.data_generation == consumer_generation + 1
    assert manager.follower_generation == follower_generation
    assert not manager.wait_for_data(0.01, follower_generation, follower=True)
    assert manager.wait_for_data(0.01, consumer_generation)


def test_a_changed_min_insync_replicas_applies_to_the_next_produce(nodes):
    leader = nodes(1)
    control(leader, state(1, 0, (1, 2)))
    assert leader.manager.append(TOPIC, 0, batch(b"a"), -1).error == ErrorCode.none
    leader.manager.update_topic_configs({TOPIC: {"min.insync.replicas": "3"}})
    assert leader.manager.append(TOPIC, 0, batch(b"b"), -1).error == ErrorCode.not_enough_replicas
    leader.manager.update_topic_configs({TOPIC: {}})
    assert leader.manager.append(TOPIC, 0, batch(b"c"), -1).error == ErrorCode.none


# --- idle fetch sessions and the ISR ---------------------------------------------

def session_fetch(leader, follower_id, session_id, epoch, offsets=None, forgotten=()):
    """A follower's Fetch v12 through the leader's dispatcher (offsets: {(topic, partition): fetch offset})."""
    from kio.schema.fetch.v12 import request as fetch_v12
    by_topic: dict[str, list] = {}
    for (topic, index), offset in (offsets or {}).items():
        by_topic.setdefault(topic, []).append(fetch_v12.FetchPartition(
            partition=index, current_leader_epoch=0, fetch_offset=offset, log_start_offset=0,
            partition_max_bytes=1 << 20))
    gone: dict[str, list] = {}
    for topic, index in forgotten:
        gone.setdefault(topic, []).append(index)
    response = LoopbackClient(leader.dispatcher).request(fetch_v12.FetchRequest(
        replica_id=follower_id, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=10 << 20,
        session_id=session_id, session_epoch=epoch,
        topics=tuple(fetch_v12.FetchTopic(topic=t, partitions=tuple(p)) for t, p in by_topic.items()),
        forgotten_topics_data=tuple(fetch_v12.ForgottenTopic(topic=t, partitions=tuple(p)) for t, p in gone.items())))
    assert response.error_code == ErrorCode.none
    return response


def idle_cluster(nodes, zk, count, **properties):
    leader = nodes(1, **properties)
    keys = [(TOPIC, p) for p in range(count)]
    for key in keys:
        zk.seed(1, 0, (1, 2), key=key)
    control(leader, *(state(1, 0, (1, 2), key=key) for key in keys))
    return leader, keys


@pytest.mark.parametrize("pending_reads", ["false", "true"])
def test_idle_session_fetches_keep_the_follower_in_the_isr_then_a_silent_one_leaves(nodes, zk, clock, pending_reads):
    leader, keys = idle_cluster(nodes, zk, 200, **{"follower.fetch.pending.reads.insync.enable": pending_reads})
    full = session_fetch(leader, 2, 0, 0, {key: 0 for key in keys})
    session = full.session_id
    assert session != 0 and leader.manager.partitions[keys[0]].isr == (1, 2)
    reads = []
    original_read = leader.manager.read_for_follower
    leader.manager.read_for_follower = lambda *a: reads.append(a[:2]) or original_read(*a)
    for epoch in range(1, 31):                     # 3 lags of idle fetches, one every LAG_MS / 10
        clock.advance(LAG_MS // 10)
        assert session_fetch(leader, 2, session, epoch).responses == ()
        shrink(leader)
    assert reads == []                             # an idle fetch read no partition
    for key in keys:                               # new records everywhere: the follower is behind now
        assert leader.manager.append(*key, batch(b"x"), 1).error == ErrorCode.none
    shrink(leader)
    assert all(leader.manager.partitions[key].isr == (1, 2) for key in keys)   # it fetched at the end just now
    clock.advance(LAG_MS)
    shrink(leader)
    assert all(leader.manager.partitions[key].isr == (1, 2) for key in keys)
    clock.advance(1)                               # it never came back for them
    shrink(leader)
    assert all(leader.manager.partitions[key].isr == (1,) for key in keys)


def test_a_follower_caught_up_by_its_session_fetches_reads_the_new_records_and_stays(nodes, zk, clock):
    leader, keys = idle_cluster(nodes, zk, 20)
    session = session_fetch(leader, 2, 0, 0, {key: 0 for key in keys}).session_id
    clock.advance(2 * LAG_MS)
    assert session_fetch(leader, 2, session, 1).responses == ()
    produce(leader, b"a")                          # t-0 only
    answer = session_fetch(leader, 2, session, 2)
    assert [(t.topic, p.partition_index) for t in answer.responses for p in t.partitions] == [KEY]
    clock.advance(LAG_MS)                          # it appends and fetches from 1 only now
    session_fetch(leader, 2, session, 3, {KEY: 1})
    shrink(leader)
    assert all(leader.manager.partitions[key].isr == (1, 2) for key in keys)
    assert leader.partition().high_watermark == 1


def test_a_partition_the_session_forgot_is_no_longer_kept_caught_up(nodes, zk, clock):
    leader, keys = idle_cluster(nodes, zk, 3)
    session = session_fetch(leader, 2, 0, 0, {key: 0 for key in keys}).session_id
    session_fetch(leader, 2, session, 1, forgotten=[KEY])
    for epoch in range(2, 5):
        clock.advance(LAG_MS // 2)
        session_fetch(leader, 2, session, epoch)
    for key in keys:
        leader.manager.append(*key, batch(b"x"), 1)
    shrink(leader)
    assert leader.partition().isr == (1,)          # last fetched 1.5 lags ago
    assert all(leader.manager.partitions[key].isr == (1, 2) for key in keys[1:])

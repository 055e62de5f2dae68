"""ReplicaManager and Partition on real logs in a temp dir (no processes)."""

import time

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, leader_offset
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.protocol.record_batch import build_batch
from support.one_broker import one_broker

NOW_MS = 1_700_000_000_000


def batch(count=2):
    return build_batch([(b"k", b"v%d" % i, None, NOW_MS + i) for i in range(count)])


@pytest.fixture
def manager(tmp_path):
    _, manager = one_broker(f"{tmp_path}/a", lambda: NOW_MS, {"log.dir.media": f"{tmp_path}/a:ssd"})
    yield manager
    manager.shutdown()
    manager.log_manager.shutdown()


def lead(manager, leader=1, epoch=0, isr=(1,), config=None):
    """What the controller would send: a LeaderAndIsr for t-0 with replicas [1, 2]."""
    if config is not None:
        manager.update_topic_configs({"t": config})
    state = LeaderAndIsrState(topic="t", partition=0, controller_epoch=1, leader=leader,
                                  leader_epoch=epoch, isr=tuple(isr), partition_epoch=epoch, replicas=(1, 2))
    return manager.apply_leader_and_isr(1, 1, [state], {2: ("127.0.0.1", 1)})


def test_leader_appends_and_commits_alone(manager):
    lead(manager)
    result = manager.append("t", 0, batch(3), required_acks=-1)
    assert result.error == ErrorCode.none and (result.base_offset, result.last_offset) == (0, 2)
    assert manager.wait_for_commit("t", 0, result.last_offset, time.monotonic() + 1)
    read = manager.read("t", 0, 0, 1 << 20, current_leader_epoch=0, min_one_batch=True)
    assert read.error == ErrorCode.none and read.high_watermark == 3 and read.size > 0
    assert leader_offset(manager, "t", 0, EARLIEST_TIMESTAMP, -1)[1] == 0
    assert leader_offset(manager, "t", 0, LATEST_TIMESTAMP, -1)[1] == 3
    assert leader_offset(manager, "t", 0, NOW_MS + 1, -1)[1] == 1


def test_follower_refuses_produce(manager):
    lead(manager, leader=2, isr=(2, 1))
    assert manager.append("t", 0, batch(), 1).error == ErrorCode.not_leader_or_follower


def test_acks_all_below_min_insync_replicas_appends_nothing(manager):
    lead(manager, config={"min.insync.replicas": "2"})
    assert manager.append("t", 0, batch(), -1).error == ErrorCode.not_enough_replicas
    assert manager.get("t", 0).log.log_end_offset == 0
    assert manager.append("t", 0, batch(), 1).error == ErrorCode.none  # acks=1 is not bound by it


def test_epochs_fence_reads_and_never_go_back(manager):
    lead(manager, epoch=3)
    manager.append("t", 0, batch(), 1)
    assert manager.read("t", 0, 0, 1024, 2, True).error == ErrorCode.fenced_leader_epoch
    assert manager.read("t", 0, 0, 1024, 4, True).error == ErrorCode.unknown_leader_epoch
    lead(manager, leader=2, epoch=2)  # stale: refused
    assert manager.get("t", 0).leader_epoch == 3 and manager.get("t", 0).is_leader


def test_reads_between_high_watermark_and_end_are_empty_and_beyond_are_out_of_range(manager):
    lead(manager)
    manager.append("t", 0, batch(2), 1)
    at_end = manager.read("t", 0, 2, 1024, -1, True)
    assert at_end.error == ErrorCode.none and at_end.region is None
    assert manager.read("t", 0, 3, 1024, -1, True).error == ErrorCode.offset_out_of_range


def test_corrupt_batch_is_refused_and_nothing_written(manager):
    lead(manager)
    corrupt = bytearray(batch())
    corrupt[-1] ^= 1
    assert manager.append("t", 0, bytes(corrupt), 1).error == ErrorCode.corrupt_message
    assert manager.get("t", 0).log.log_end_offset == 0


def test_delete_records_moves_the_leaders_log_start_offset_within_the_high_watermark(manager):
    lead(manager)
    manager.append("t", 0, batch(5), 1)                      # ISR [1]: the high watermark is 5
    assert manager.delete_records("t", 0, 6) == (ErrorCode.offset_out_of_range, -1)
    assert manager.delete_records("t", 0, -2) == (ErrorCode.offset_out_of_range, -1)
    assert manager.delete_records("t", 0, 3) == (ErrorCode.none, 3)
    assert manager.read("t", 0, 2, 1024, -1, True).error == ErrorCode.offset_out_of_range
    assert leader_offset(manager, "t", 0, EARLIEST_TIMESTAMP, -1)[1] == 3
    # Replica 2 has not fetched yet (its log start offset is unknown, -1): the
    # low watermark waits for it while its broker is live, not once it is gone.
    assert manager.low_watermark("t", 0, {1, 2}) == -1
    assert manager.low_watermark("t", 0, {1}) == 3
    assert manager.delete_records("t", 0, -1) == (ErrorCode.none, 5)   # -1: up to the high watermark
    assert manager.delete_records("t", 0, 4) == (ErrorCode.none, 4)    # behind the start: nothing moves
    assert manager.get("t", 0).log.log_start_offset == 5


def test_delete_records_refused_on_followers_and_compacted_topics(manager):
    lead(manager, leader=2, isr=(2, 1))
    assert manager.delete_records("t", 0, 0) == (ErrorCode.not_leader_or_follower, -1)
    assert manager.low_watermark("t", 0, {1, 2}) is None
    lead(manager, epoch=1, config={"cleanup.policy": "compact"})
    assert manager.delete_records("t", 0, 0) == (ErrorCode.policy_violation, -1)
    assert manager.delete_records("nope", 0, 0) == (ErrorCode.not_leader_or_follower, -1)

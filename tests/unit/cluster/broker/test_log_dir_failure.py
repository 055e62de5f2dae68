"""A log dir that fails while the broker runs (Kafka's KIP-112): the dir goes
offline once, its partitions answer KAFKA_STORAGE_ERROR, no new log goes
there, no checkpoint is written there, the controller is told, and a broker
left without any log dir halts. On a real ReplicaManager and LogManager over
tmp dirs; the I/O errors are injected where the disk would raise them."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers import describe_log_dirs
from kafkactl.cluster.broker.handlers.services import not_hosted_error
from kafkactl.cluster.broker.log_dir_failure import LogDirFailureHandler
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.log import checkpoint, segment
from kafkactl.cluster.log.dir_failures import LogDirFailureChannel
from kafkactl.cluster.log.errors import KafkaStorageError, LogDirFailedError
from kafkactl.cluster.log.layout import REPLICATION_OFFSET_CHECKPOINT
from kafkactl.cluster.protocol.build import make
from kafkactl.cluster.protocol.codec import request_class
from kafkactl.cluster.protocol.record_batch import build_batch
from support.log_dirs import ssd_hdd_broker

NOW_MS = 1_700_000_000_000


def batch(value: bytes = b"v") -> bytes:
    return build_batch([(b"k", value, None, NOW_MS)])


@pytest.fixture
def broker(tmp_path):
    config, logs, replica_manager, ssd, hdd = ssd_hdd_broker(tmp_path, NOW_MS)
    # t-0 in hdd0 (where AlterReplicaLogDirs asked for it), t-1 in ssd0.
    assert logs.maybe_update_preferred_log_dir("t", 0, hdd)
    for partition in (0, 1):
        lead(replica_manager, partition)
    assert (logs.dir_of("t", 0), logs.dir_of("t", 1)) == (hdd, ssd)
    yield SimpleNamespace(logs=logs, replica_manager=replica_manager, ssd=ssd, hdd=hdd, config=config)
    replica_manager.shutdown()
    logs.shutdown()


def lead(replica_manager, partition: int, epoch: int = 0) -> dict:
    state = LeaderAndIsrState(topic="t", partition=partition, controller_epoch=1, leader=1, leader_epoch=epoch,
                              isr=(1,), partition_epoch=0, replicas=(1,))
    return replica_manager.apply_leader_and_isr(1, 1, [state], {})


def disk_full(monkeypatch) -> None:
    def no_space(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(segment, "_write_all", no_space)


# --- the log layer

def test_a_dir_goes_offline_once_and_is_queued_once():
    channel = LogDirFailureChannel()
    assert channel.maybe_add_offline_log_dir("/d", "append failed", OSError(errno.EIO, "EIO"))
    assert not channel.maybe_add_offline_log_dir("/d", "flush failed")
    assert channel.offline_dirs == {"/d"} and channel.is_offline("/d") and not channel.is_offline("/e")
    assert channel.take(0.01) == "/d" and channel.take(0.01) is None


def test_an_append_that_meets_enospc_takes_its_dir_offline_and_only_that_dir(broker, monkeypatch):
    disk_full(monkeypatch)
    result = broker.replica_manager.append("t", 0, batch(), 1)
    assert result.error == ErrorCode.kafka_storage_error and "No space left" in result.message
    assert broker.logs.failures.offline_dirs == {broker.hdd}
    assert broker.logs.live_log_dirs() == [broker.ssd]
    # A second error in that dir reports nothing new.
    assert broker.replica_manager.append("t", 0, batch(), 1).error == ErrorCode.kafka_storage_error
    assert broker.logs.failures.take(0.01) == broker.hdd and broker.logs.failures.take(0.01) is None


def test_no_new_log_goes_to_an_offline_dir(broker):
    broker.logs.failures.maybe_add_offline_log_dir(broker.hdd, "test")
    # Placement passes over it (hdd0 has fewer bytes than ssd0 would not matter: it is offline).
    assert broker.logs.get_or_create_log("u", 0, preferred_media="hdd").dir_path.startswith(broker.ssd)
    assert broker.logs.maybe_update_preferred_log_dir("u", 1, broker.hdd)
    with pytest.raises(KafkaStorageError, match="offline"):
        broker.logs.get_or_create_log("u", 1)
    broker.logs.failures.maybe_add_offline_log_dir(broker.ssd, "test")
    with pytest.raises(KafkaStorageError, match="every log dir is offline"):
        broker.logs.get_or_create_log("u", 2)


def test_a_log_that_cannot_be_created_takes_its_dir_offline(broker, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(os, "makedirs", read_only)
    with pytest.raises(LogDirFailedError):
        broker.logs.get_or_create_log("u", 0, preferred_media="ssd")
    assert broker.logs.failures.offline_dirs == {broker.ssd}


def test_a_checkpoint_that_cannot_be_written_takes_its_dir_offline_and_the_others_are_written(broker, monkeypatch):
    real_write = checkpoint.OffsetCheckpointFile.write

    def write(self, offsets):
        if self.path.startswith(broker.ssd):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_write(self, offsets)
    monkeypatch.setattr(checkpoint.OffsetCheckpointFile, "write", write)
    hdd_checkpoint = os.path.join(broker.hdd, REPLICATION_OFFSET_CHECKPOINT)
    broker.logs.write_high_watermarks({("t", 0): 0, ("t", 1): 0})
    assert broker.logs.failures.offline_dirs == {broker.ssd}
    assert checkpoint.OffsetCheckpointFile(hdd_checkpoint).read() == {("t", 0): 0}
    # No more checkpoints in the offline dir.
    monkeypatch.setattr(checkpoint.OffsetCheckpointFile, "write", real_write)
    broker.logs.write_high_watermarks({("t", 0): 0, ("t", 1): 0})
    assert not os.path.exists(os.path.join(broker.ssd, REPLICATION_OFFSET_CHECKPOINT))


# --- the broker: what the failure handler does, and what requests are answered

def test_the_partitions_of_the_failed_dir_go_offline_and_answer_kafka_storage_error(broker, monkeypatch):
    replica_manager = broker.replica_manager
    log_ = broker.logs.get_log("t", 0)
    disk_full(monkeypatch)
    replica_manager.append("t", 0, batch(), 1)
    monkeypatch.undo()
    assert replica_manager.handle_log_dir_failure(broker.hdd) == [("t", 0)]
    assert log_.closed
    assert replica_manager.offline_partitions == {("t", 0)} and replica_manager.get("t", 0) is None
    assert broker.logs.get_log("t", 0) is None and broker.logs.dir_of("t", 0) is None
    # Produce, Fetch (consumers and followers), OffsetForLeaderEpoch, and the handlers' common answer.
    assert replica_manager.append("t", 0, batch(), 1).error == ErrorCode.kafka_storage_error
    assert replica_manager.read("t", 0, 0, 1000, -1, True).error == ErrorCode.kafka_storage_error
    assert replica_manager.read_for_follower("t", 0, 2, 0, 1000, -1, True).error == ErrorCode.kafka_storage_error
    assert replica_manager.end_offset_for_epoch("t", 0, -1, 0)[0] == ErrorCode.kafka_storage_error
    services = SimpleNamespace(replica_manager=replica_manager, metadata=None)
    assert not_hosted_error(services, "t", 0) == ErrorCode.kafka_storage_error
    # A LeaderAndIsr naming it is answered KAFKA_STORAGE_ERROR, and no log is made in another dir.
    assert lead(replica_manager, 0, epoch=1) == {("t", 0): ErrorCode.kafka_storage_error}
    assert broker.logs.get_log("t", 0) is None
    assert replica_manager.stop_replicas({("t", 0): -2}, delete=True) == {("t", 0): ErrorCode.kafka_storage_error}
    # The partition in the healthy dir is served as before.
    assert replica_manager.append("t", 1, batch(), 1).error == ErrorCode.none
    assert lead(replica_manager, 1, epoch=1) == {("t", 1): ErrorCode.none}


def test_describe_log_dirs_answers_the_failed_dir_with_kafka_storage_error(broker):
    broker.logs.failures.maybe_add_offline_log_dir(broker.hdd, "test")
    broker.replica_manager.handle_log_dir_failure(broker.hdd)
    services = SimpleNamespace(replica_manager=broker.replica_manager)
    response = describe_log_dirs.handle(services, SimpleNamespace(api_version=4), make(request_class(35, 4),
                                                                                         topics=None))
    results = {r.log_dir: r for r in response.results}
    assert results[broker.hdd].error_code == ErrorCode.kafka_storage_error and results[broker.hdd].topics == ()
    assert results[broker.ssd].error_code == ErrorCode.none
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in results[broker.ssd].topics] == [("t", [1])]


def test_the_handler_tells_the_controller_and_retries_until_zookeeper_takes_it(broker):
    calls, halts = [], []

    def notify():
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("ZooKeeper did not answer")
    handler = LogDirFailureHandler(1, broker.logs.failures, broker.replica_manager, notify, halts.append)
    broker.logs.failures.maybe_add_offline_log_dir(broker.hdd, "test")
    handler.handle(broker.logs.failures.take(0.01))
    assert len(calls) == 3 and halts == []
    assert broker.replica_manager.offline_partitions == {("t", 0)}


def test_a_broker_without_a_log_dir_left_halts_without_telling_the_controller(broker):
    calls, halts = [], []
    handler = LogDirFailureHandler(1, broker.logs.failures, broker.replica_manager, lambda: calls.append(1),
                                   halts.append)
    for path in (broker.hdd, broker.ssd):
        broker.logs.failures.maybe_add_offline_log_dir(path, "test")
    handler.handle(broker.hdd)
    assert len(halts) == 1 and halts[0].startswith("Shutdown broker because all log dirs in")
    assert broker.ssd in halts[0] and broker.hdd in halts[0] and calls == []


def test_a_clean_shutdown_marks_only_the_online_dirs(broker, tmp_path):
    broker.logs.failures.maybe_add_offline_log_dir(broker.hdd, "test")
    broker.replica_manager.handle_log_dir_failure(broker.hdd)
    broker.replica_manager.shutdown()
    broker.logs.shutdown()
    assert os.path.exists(os.path.join(broker.ssd, ".kafka_cleanshutdown"))
    assert not os.path.exists(os.path.join(broker.hdd, ".kafka_cleanshutdown"))


def test_a_move_into_the_failed_dir_is_abandoned_and_the_partition_served_on(broker):
    replica_manager, logs = broker.replica_manager, broker.logs
    partition = replica_manager.get("t", 1)                  # in ssd0
    partition.attach_future(logs.create_future_log("t", 1, broker.hdd))
    logs.failures.maybe_add_offline_log_dir(broker.hdd, "test")
    assert replica_manager.handle_log_dir_failure(broker.hdd) == [("t", 0)]
    assert partition.future_log is None and logs.future_log("t", 1) is None
    assert replica_manager.append("t", 1, batch(), 1).error == ErrorCode.none
    partition.follower_truncate_to(0)                        # no closed future log in the way

"""AlterReplicaLogDirs and the future replicas DescribeLogDirs shows, on a real
ReplicaManager and LogManager over tmp dirs; requests and responses go through
kio's encoders as on the wire."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response
from kafkactl.cluster.broker.handlers import alter_replica_log_dirs, describe_log_dirs
from kafkactl.cluster.broker.log_dir_mover import LogDirMover
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.protocol import apis
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import encode_response, request_class, response_class
from kafkactl.cluster.protocol.record_batch import build_batch
from support.log_dirs import ssd_hdd_broker

NOW_MS = 1_700_000_000_000


@pytest.fixture
def broker(tmp_path):
    config, logs, replica_manager, ssd, hdd = ssd_hdd_broker(tmp_path, NOW_MS)
    topics = {"t": SimpleNamespace(assignment=SimpleNamespace(partitions={0: [1], 1: [1]}))}
    services = SimpleNamespace(config=config, replica_manager=replica_manager,
                               metadata=SimpleNamespace(snapshot=SimpleNamespace(topics=topics)))
    yield SimpleNamespace(services=services, logs=logs, replica_manager=replica_manager, ssd=ssd, hdd=hdd)
    replica_manager.shutdown()
    logs.shutdown()


def lead(replica_manager, partition: int) -> None:
    state = LeaderAndIsrState(topic="t", partition=partition, controller_epoch=1, leader=1, leader_epoch=0,
                                  isr=(1,), partition_epoch=0, replicas=(1,))
    assert replica_manager.apply_leader_and_isr(1, 1, [state], {}) == {("t", partition): ErrorCode.none}


def alter(services, version: int, path: str, topic: str = "t", partitions=(0,)) -> dict[int, ErrorCode]:
    cls = request_class(apis.ALTER_REPLICA_LOG_DIRS, version)
    request = make(cls, dirs=(nested(cls, "AlterReplicaLogDir", path=path, topics=(
        nested(cls, "AlterReplicaLogDirTopic", name=topic, partitions=tuple(partitions)),)),))
    response = alter_replica_log_dirs.handle(services, SimpleNamespace(api_version=version), request)
    frame = encode_response(response, correlation_id=9)
    decoded = decode_response(frame[4:], response_class(apis.ALTER_REPLICA_LOG_DIRS, version), 9)
    [topic_result] = decoded.results
    assert topic_result.topic_name == topic
    return {p.partition_index: p.error_code for p in topic_result.partitions}


def describe(services) -> dict[str, dict[tuple[str, int, bool], tuple[int, int]]]:
    request = make(request_class(35, 4), topics=None)
    response = describe_log_dirs.handle(services, SimpleNamespace(api_version=4), request)
    return {r.log_dir: {(t.name, p.partition_index, p.is_future_key): (p.partition_size, p.offset_lag)
                        for t in r.topics for p in t.partitions} for r in response.results}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_errors_for_unknown_dirs_topics_and_replicas_not_hosted_yet(broker, version):
    services = broker.services
    assert alter(services, version, "/no/such/dir") == {0: ErrorCode.log_dir_not_found}
    assert alter(services, version, "relative/dir") == {0: ErrorCode.log_dir_not_found}
    assert alter(services, version, broker.hdd, topic="nope") == {0: ErrorCode.unknown_topic_or_partition}
    assert alter(services, version, broker.hdd, partitions=(7,)) == {7: ErrorCode.unknown_topic_or_partition}
    # Known to the cluster but not hosted here yet: remembered for its LeaderAndIsr.
    assert alter(services, version, broker.hdd, partitions=(1,)) == {1: ErrorCode.replica_not_available}
    lead(broker.replica_manager, 1)
    assert broker.logs.dir_of("t", 1) == broker.hdd
    assert alter(services, version, broker.hdd, partitions=(1,)) == {1: ErrorCode.none}


def test_a_hosted_replica_moves_and_describe_log_dirs_shows_the_future_replica(broker):
    lead(broker.replica_manager, 0)
    assert broker.logs.dir_of("t", 0) == broker.ssd    # log.dirs.preferred.media defaults to ssd
    for i in range(20):
        broker.replica_manager.append("t", 0, build_batch([(b"k", b"v%d" % i * 50, None, NOW_MS)]), 1)
    assert alter(broker.services, 2, broker.hdd) == {0: ErrorCode.none}
    assert alter(broker.services, 2, broker.hdd) == {0: ErrorCode.none}     # asking again changes nothing
    future = broker.logs.future_log("t", 0)
    described = describe(broker.services)
    assert described[broker.hdd][("t", 0, True)] == (future.size_bytes, 20)
    assert ("t", 0, False) in described[broker.ssd]

    mover = LogDirMover(broker.replica_manager, broker.logs, chunk_bytes=512)
    deadline = time.monotonic() + 10
    while broker.logs.future_log("t", 0) is not None and time.monotonic() < deadline:
        mover.run_once()
    assert broker.logs.dir_of("t", 0) == broker.hdd
    described = describe(broker.services)
    assert ("t", 0, False) in described[broker.hdd] and not described[broker.ssd]
    read = broker.replica_manager.read("t", 0, 0, 1 << 20, -1, True)
    assert read.error == ErrorCode.none and read.high_watermark == 20
    assert broker.replica_manager.append("t", 0, build_batch([(b"k", b"after", None, NOW_MS)]), 1).base_offset == 20


def test_asking_for_the_current_dir_cancels_a_move(broker):
    lead(broker.replica_manager, 0)
    assert alter(broker.services, 2, broker.hdd) == {0: ErrorCode.none}
    assert broker.logs.future_log("t", 0) is not None
    assert alter(broker.services, 2, broker.ssd) == {0: ErrorCode.none}
    assert broker.logs.future_log("t", 0) is None
    assert broker.replica_manager.get("t", 0).future_log is None
    assert all(not key[2] for key in describe(broker.services)[broker.hdd])

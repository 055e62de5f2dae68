"""ListOffsets through the dispatcher in every advertised version (v1-v7), on
real logs: each version's response carries the fields it has."""

import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.config import from_properties
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.replica_manager import LeaderAndIsrPartition, ReplicaManager
from kafkactl.cluster.log.manager import LogDir, LogManager
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.record_batch import build_batch

NOW_MS = 1_700_000_000_000


@pytest.fixture
def dispatcher(tmp_path):
    config, _ = from_properties({"broker.id": "1", "zookeeper.connect": "z:1", "log.dirs": f"{tmp_path}/a"})
    logs = LogManager([LogDir(f"{tmp_path}/a", "ssd")], config.default_log_config(), lambda: NOW_MS)
    logs.startup()
    manager = ReplicaManager(config, logs, lambda: NOW_MS)
    manager.apply_leader_and_isr(0, 1, [LeaderAndIsrPartition("t", p, 1, 1, 4, (1,), 0, (1,)) for p in range(3)], {})
    manager.append("t", 1, build_batch([(None, b"v", None, NOW_MS)] * 3), 1)
    yield Dispatcher(BrokerServices(config=config, metadata=MetadataCache(), replica_manager=manager,
                                    zk_agent=None, producer_ids=None, clock_ms=lambda: NOW_MS))
    manager.shutdown()
    logs.shutdown()


@pytest.mark.parametrize("version", range(1, 8))
def test_every_version_answers_each_partition_with_its_fields(dispatcher, version):
    schema = importlib.import_module(f"kio.schema.list_offsets.v{version}.request")
    fields = {"partition_index": 0, "timestamp": -1}
    if "current_leader_epoch" in schema.ListOffsetsPartition.__dataclass_fields__:
        fields["current_leader_epoch"] = -1
    topic_fields = {"replica_id": -1}
    if "isolation_level" in schema.ListOffsetsRequest.__dataclass_fields__:
        topic_fields["isolation_level"] = 0
    request = schema.ListOffsetsRequest(**topic_fields, topics=(schema.ListOffsetsTopic(name="t", partitions=tuple(
        schema.ListOffsetsPartition(**{**fields, "partition_index": p}) for p in (0, 1, 9))),))
    frame = encode_request(request, 3, "test")[4:]
    response = decode_response(dispatcher.dispatch(frame)[4:], response_class(2, version), 3)
    answers = {p.partition_index: p for p in response.topics[0].partitions}
    assert [int(answers[p].error_code) for p in (0, 1, 9)] == [ErrorCode.none, ErrorCode.none,
                                                                ErrorCode.unknown_topic_or_partition]
    assert (answers[0].offset, answers[1].offset, answers[9].offset) == (0, 3, -1)
    assert answers[1].timestamp == -1
    if version >= 4:
        assert (answers[1].leader_epoch, answers[9].leader_epoch) == (4, -1)

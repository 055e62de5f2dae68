"""ListOffsets through the dispatcher in every advertised version (v1-v7), on
real logs: each version's response carries the fields it has."""

import importlib

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.broker_client import decode_response, encode_request
from kafkactl.cluster.broker.dispatcher import Dispatcher
from kafkactl.cluster.broker.handlers.services import BrokerServices
from kafkactl.cluster.broker.metadata import MetadataCache
from kafkactl.cluster.broker.role_changes import LeaderAndIsrState
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.record_batch import build_batch
from support.one_broker import one_broker

NOW_MS = 1_700_000_000_000


@pytest.fixture
def dispatcher(tmp_path):
    config, manager = one_broker(f"{tmp_path}/a", lambda: NOW_MS)
    manager.apply_leader_and_isr(0, 1, [LeaderAndIsrState("t", p, 1, 1, 4, (1,), 0, (1,)) for p in range(3)], {})
    manager.append("t", 1, build_batch([(None, b"v", None, NOW_MS)] * 3), 1)
    yield Dispatcher(BrokerServices(config=config, metadata=MetadataCache(), replica_manager=manager,
                                    zk_agent=None, producer_ids=None, clock_ms=lambda: NOW_MS))
    manager.shutdown()
    manager.log_manager.shutdown()


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


# --- version 0 (kafka-python 1.4.x asks for watermarks with it) -------------------

from kafkactl.cluster.broker.handlers.list_offsets import (  # noqa: E402
    capped_at_high_watermark, legacy_offsets, offset_time_points,
)
from kafkactl.cluster.protocol.old_versions import list_offsets_v0 as old_versions  # noqa: E402


def ask_v0(dispatcher, partitions, replica_id=-1):
    request = old_versions.ListOffsetsRequest(replica_id=replica_id, topics=(old_versions.ListOffsetsTopic(
        name="t", partitions=tuple(old_versions.ListOffsetsPartition(partition_index=p, timestamp=t, max_num_offsets=n)
                                   for p, t, n in partitions)),))
    frame = encode_request(request, 4, "kafka-python-1.4.7")[4:]
    response = decode_response(dispatcher.dispatch(frame)[4:], response_class(2, 0), 4)
    return [(p.partition_index, ErrorCode(p.error_code), list(p.old_style_offsets))
            for p in response.topics[0].partitions]


def test_version_0_answers_watermarks_as_lists_of_offsets(dispatcher):
    # partition 1 holds 3 records, all below the high watermark of a 1-replica ISR
    assert ask_v0(dispatcher, [(1, -1, 1), (1, -2, 1), (0, -1, 1), (9, -1, 1)]) == [
        (1, ErrorCode.none, [3]), (1, ErrorCode.none, [0]), (0, ErrorCode.none, [0]),
        (9, ErrorCode.unknown_topic_or_partition, [])]


def test_version_0_latest_with_more_offsets_lists_segment_starts_newest_first(dispatcher):
    assert ask_v0(dispatcher, [(1, -1, 5)]) == [(1, ErrorCode.none, [3, 0])]
    assert ask_v0(dispatcher, [(1, -1, 1)], replica_id=-2) == [(1, ErrorCode.none, [3])]
    assert ask_v0(dispatcher, [(1, -1, -1)]) == [(1, ErrorCode.invalid_request, [])]


def test_legacy_offset_rules_with_literal_segments():
    # segments at 0 (modified at t=100), 50 (t=200), 80 (active, t=300, not empty); log end 95
    points = offset_time_points([(0, 10, 100), (50, 10, 200), (80, 5, 300)], 20, 95, now_ms=400)
    assert points == [(20, 100), (50, 200), (80, 300), (95, 400)]
    assert legacy_offsets(points, -1, 1) == [95]
    assert legacy_offsets(points, -1, 3) == [95, 80, 50]
    assert legacy_offsets(points, -2, 3) == [20]
    assert legacy_offsets(points, 250, 10) == [50, 20]      # last point at or before t=250, then older
    assert legacy_offsets(points, 50, 10) == []             # nothing that old
    assert offset_time_points([(0, 0, 100)], 0, 0, now_ms=400) == [(0, 100)]   # an empty active segment
    assert capped_at_high_watermark([95, 80, 50], 90) == [90, 80, 50]
    assert capped_at_high_watermark([80, 50], 90) == [80, 50]

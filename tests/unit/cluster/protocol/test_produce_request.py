"""The zero-copy Produce reader agrees with kio on every version the broker serves."""

import datetime
import importlib

import pytest

from kafkactl.cluster.broker.broker_client import encode_request
from kafkactl.cluster.protocol.codec import decode_request
from kafkactl.cluster.protocol.framing import FrameError
from kafkactl.cluster.protocol.produce_request import read_produce_request
from kafkactl.cluster.protocol.record_batch import build_batch

VERSIONS = range(3, 10)


def kio_request(version, transactional_id="tx-\u00e9", acks=-1, topics=None):
    schema = importlib.import_module(f"kio.schema.produce.v{version}.request")
    batch = build_batch([(b"k", b"v" * 50, None, 1)] * 2)
    topics = topics if topics is not None else [("a", [(0, batch), (1, None), (2, b"")]), ("b", [(7, batch * 2)])]
    return schema.ProduceRequest(
        transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(milliseconds=1500),
        topic_data=tuple(schema.TopicProduceData(name=name, partition_data=tuple(
            schema.PartitionProduceData(index=index, records=records) for index, records in partitions))
            for name, partitions in topics))


def frame_of(request) -> bytearray:
    return bytearray(encode_request(request, 42, "client")[4:])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("transactional_id", [None, "tx-\u00e9"])
def test_same_fields_as_kio_and_records_are_read_only_views_of_the_frame(version, transactional_id):
    original = kio_request(version, transactional_id)
    frame = frame_of(original)
    header, request = decode_request(frame, 0, version)
    assert header.correlation_id == 42
    assert (request.transactional_id, request.acks, request.timeout) == (
        original.transactional_id, original.acks, original.timeout)
    got = [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
           for t in request.topic_data]
    want = [(t.name, [(p.index, p.records) for p in t.partition_data]) for t in original.topic_data]
    assert got == want
    records = request.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.readonly
    frame[frame.find(original.topic_data[0].partition_data[0].records) + 30] ^= 0xFF
    assert bytes(records) != original.topic_data[0].partition_data[0].records   # a view: nothing was copied


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_or_extended_frames_are_refused(version):
    frame = frame_of(kio_request(version))
    for cut in (1, 3, 9, 40, len(frame) - 30):
        with pytest.raises(FrameError):
            decode_request(frame[:len(frame) - cut], 0, version)
    # Bytes after the body are ignored, as Kafka ignores them.
    assert decode_request(frame + b"\x00", 0, version)[1] == decode_request(frame, 0, version)[1]


def test_flexible_version_skips_tagged_fields():
    frame = frame_of(kio_request(9, topics=[("a", [(0, b"xyz")])]))
    # The body ends with three empty tag sections (partition, topic, request):
    # give the request one tagged field of 2 bytes instead of none.
    tagged = frame[:-1] + bytes([1, 5, 2, 0xAA, 0xBB])
    header, request = decode_request(tagged, 0, 9)
    assert bytes(request.topic_data[0].partition_data[0].records) == b"xyz"


def test_null_topic_array_and_bad_utf8_are_refused():
    frame = frame_of(kio_request(8, transactional_id="ab", topics=[]))
    body_offset = decode_request(frame, 0, 8)[0].body_offset
    broken = bytearray(frame)
    broken[body_offset + 2:body_offset + 4] = b"\xff\xfe"      # transactional id "ab" → invalid UTF-8
    with pytest.raises(FrameError, match="UTF-8"):
        read_produce_request(broken, body_offset, 8)
    null_topics = frame[:-4] + b"\xff\xff\xff\xff"
    with pytest.raises(FrameError, match="null array"):
        read_produce_request(null_topics, body_offset, 8)

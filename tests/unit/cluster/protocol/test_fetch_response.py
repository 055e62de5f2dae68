"""The follower's zero-copy Fetch v12 reader agrees with kio on what kio writes."""

import datetime
import io

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import response as v12
from kio.serial import entity_writer

from kafkactl.cluster.protocol.fetch_response import read_fetch_response
from kafkactl.cluster.protocol.framing import FrameError
from kafkactl.cluster.protocol.record_batch import build_batch


def encode(response) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(response))(buffer, response)
    return buffer.getvalue()


def partition(index, records, error=ErrorCode.none, **extra):
    fields = dict(partition_index=index, error_code=error, high_watermark=100 + index,
                  last_stable_offset=90 + index, log_start_offset=index, aborted_transactions=None,
                  preferred_read_replica=-1, records=records)
    fields.update(extra)
    return v12.PartitionData(**fields)


def response(*topics, error=ErrorCode.none, session_id=7, throttle_ms=3):
    return v12.FetchResponse(throttle_time=datetime.timedelta(milliseconds=throttle_ms), error_code=error,
                             session_id=session_id, responses=tuple(topics))


def topic(name, *partitions):
    return v12.FetchableTopicResponse(topic=name, partitions=tuple(partitions))


def test_matches_kio_field_by_field_and_records_are_views_of_the_frame():
    batch = build_batch([(None, b"v" * 100, None, 1)] * 3, base_offset=5, partition_leader_epoch=2)
    original = response(
        topic("a", partition(0, batch), partition(1, None), partition(2, b"")),
        topic("b\u00e9", partition(3, batch + batch, error=ErrorCode.not_leader_or_follower)),
    )
    frame = bytearray(b"xx" + encode(original))   # at an offset, as after a response header
    view, size = read_fetch_response(frame, 2)
    assert size == len(frame) - 2
    assert (view.error_code, view.session_id, view.throttle_time_ms) == (ErrorCode.none, 7, 3)
    assert [t.topic for t in view.responses] == ["a", "b\u00e9"]
    for got_topic, want_topic in zip(view.responses, original.responses):
        for got, want in zip(got_topic.partitions, want_topic.partitions, strict=True):
            assert (got.partition_index, got.error_code, got.high_watermark, got.last_stable_offset,
                    got.log_start_offset) == (want.partition_index, want.error_code, want.high_watermark,
                                              want.last_stable_offset, want.log_start_offset)
            assert (None if got.records is None else bytes(got.records)) == want.records
    assert isinstance(view.responses[1].partitions[0].error_code, ErrorCode)
    records = view.responses[0].partitions[0].records
    assert isinstance(records, memoryview) and records.obj is frame   # not copied


def test_skips_aborted_transactions_and_tagged_fields():
    batch = build_batch([(b"k", b"v", None, 1)])
    original = response(topic("t", partition(
        0, batch,
        aborted_transactions=(v12.AbortedTransaction(producer_id=1, first_offset=2),
                              v12.AbortedTransaction(producer_id=3, first_offset=4)),
        diverging_epoch=v12.EpochEndOffset(epoch=4, end_offset=40),
        current_leader=v12.LeaderIdAndEpoch(leader_id=2, leader_epoch=5),
        snapshot_id=v12.SnapshotId(end_offset=9, epoch=1),
    ), partition(1, batch)))
    frame = encode(original)
    view, size = read_fetch_response(frame)
    assert size == len(frame)
    assert [bytes(p.records) for p in view.responses[0].partitions] == [batch, batch]


def test_session_error_and_no_partitions():
    frame = encode(response(error=ErrorCode.fetch_session_id_not_found, session_id=0))
    view, size = read_fetch_response(frame)
    assert (view.error_code, view.session_id, view.responses, size) == (
        ErrorCode.fetch_session_id_not_found, 0, [], len(frame))


@pytest.mark.parametrize("cut", [1, 5, 11, 20, 60, 200])
def test_truncated_frames_are_refused(cut):
    batch = build_batch([(None, b"v" * 100, None, 1)])
    frame = encode(response(topic("t", partition(0, batch))))
    with pytest.raises(FrameError):
        read_fetch_response(frame[:len(frame) - cut])


# --- the leader's writer --------------------------------------------------------------

class Region:
    def __init__(self, data):
        self.file, self.position, self.length, self.data = None, 0, len(data), data


def flatten(spliced):
    return b"".join(p if isinstance(p, (bytes, bytearray)) else p.data for p in spliced.parts)


@pytest.mark.parametrize("shape", ["empty", "one", "mixed", "many"])
def test_writer_matches_kio_and_splice_byte_for_byte(shape):
    from kafkactl.cluster.protocol.codec import new_placeholder, splice_records
    from kafkactl.cluster.protocol.fetch_response import PartitionToSend, encode_fetch_response

    batch = build_batch([(None, b"v" * 300, None, 1)] * 3)
    long_name = "t" * 200                             # a name length of two varint bytes
    topics = {
        "empty": [],
        "one": [("t", [PartitionToSend(0, ErrorCode.none, 10, 10, 0, Region(batch))])],
        "mixed": [("a", [PartitionToSend(0, ErrorCode.none, 5, 5, 1, None),
                         PartitionToSend(1, ErrorCode.not_leader_or_follower, -1, -1, -1, None),
                         PartitionToSend(2, ErrorCode.none, 9, 9, 0, Region(batch))]),
                  (long_name, [PartitionToSend(3, ErrorCode.none, 7, 7, 2, Region(batch * 50))])],
        "many": [(f"topic-{i}", [PartitionToSend(p, ErrorCode.none, p, p, 0, Region(batch) if p % 2 else None)
                                 for p in range(130)]) for i in range(3)],
    }[shape]
    regions = []

    def kio_partition(p):
        records = b""
        if p.region is not None:
            records = new_placeholder()
            regions.append((records, p.region))
        return partition(p.partition_index, records, error=p.error_code, high_watermark=p.high_watermark,
                         last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset)

    expected = splice_records(
        response(*(topic(name, *(kio_partition(p) for p in parts)) for name, parts in topics),
                 error=ErrorCode.none, session_id=77, throttle_ms=0), 12345, regions)
    expected.parts[:] = [p for p in expected.parts if not isinstance(p, bytes) or p]
    got = encode_fetch_response(12345, ErrorCode.none, 77, topics)
    got_bytes = flatten(got)
    assert got_bytes == flatten(expected)
    assert got.size == len(got_bytes)
    assert [p for p in got.parts if not isinstance(p, bytes)] == [r for _, r in regions]   # regions, not copies
    view, size = read_fetch_response(got_bytes, 4 + 4 + 1)       # size prefix, correlation id, header tags
    assert size == len(got_bytes) - 9 and view.session_id == 77

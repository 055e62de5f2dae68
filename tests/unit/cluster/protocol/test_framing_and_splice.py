import io
import struct

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.fetch.v4.response import FetchResponse as FetchResponseV4
from kio.schema.fetch.v4.response import FetchableTopicResponse as TopicV4
from kio.schema.fetch.v4.response import PartitionData as PartitionV4
from kio.serial import entity_reader

import datetime

from kafkactl.cluster.protocol.codec import new_placeholder, splice_records
from kafkactl.cluster.protocol.framing import FrameError, check_frame_size, parse_request_header


class Region:
    def __init__(self, data):
        self.file, self.position, self.length, self.data = None, 0, len(data), data


def flatten(spliced):
    return b"".join(p if isinstance(p, bytes) else p.data for p in spliced.parts)


def test_frame_size_bounds():
    assert check_frame_size(struct.pack(">i", 100), 1000) == 100
    with pytest.raises(FrameError, match="exceeds socket.request.max.bytes"):
        check_frame_size(struct.pack(">i", 1001), 1000)
    with pytest.raises(FrameError):
        check_frame_size(struct.pack(">i", -1), 1000)


def test_request_header_v2_skips_tagged_fields():
    frame = struct.pack(">hhih", 18, 3, 42, 3) + b"abc" + b"\x01\x00\x02xy" + b"body"
    header = parse_request_header(frame, flexible=True)
    assert (header.api_key, header.correlation_id, header.client_id) == (18, 42, "abc")
    assert frame[header.body_offset:] == b"body"
    with pytest.raises(FrameError):
        parse_request_header(struct.pack(">hhih", 18, 3, 42, 30) + b"short", flexible=False)


@pytest.mark.parametrize("flexible", [True, False])
def test_spliced_fetch_equals_plain_encoding(flexible):
    records = [b"A" * 300, b"", b"B" * 70000]
    def build(values):
        if flexible:
            parts = tuple(PartitionData(partition_index=i, error_code=ErrorCode.none, high_watermark=9,
                                        aborted_transactions=None, records=v) for i, v in enumerate(values))
            return FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0,
                                 responses=(FetchableTopicResponse(topic="t", partitions=parts),))
        parts = tuple(PartitionV4(partition_index=i, error_code=ErrorCode.none, high_watermark=9, last_stable_offset=9,
                                  aborted_transactions=None, records=v) for i, v in enumerate(values))
        return FetchResponseV4(throttle_time=datetime.timedelta(0), responses=(TopicV4(topic="t", partitions=parts),))

    placeholders = [new_placeholder() if r else b"" for r in records]
    regions = [(p, Region(r)) for p, r in zip(placeholders, records) if r]
    spliced = splice_records(build(placeholders), 7, regions)
    wire = flatten(spliced)
    assert len(wire) == spliced.size
    size, correlation_id = struct.unpack_from(">ii", wire)
    assert size == len(wire) - 4 and correlation_id == 7
    body_offset = 8 + (1 if flexible else 0)
    cls = FetchResponse if flexible else FetchResponseV4
    decoded, _ = entity_reader(cls)(wire, body_offset)
    assert [p.records for p in decoded.responses[0].partitions] == records

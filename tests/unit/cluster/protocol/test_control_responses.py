"""The LeaderAndIsr response written straight to bytes is byte for byte what
kio writes for the same control.LeaderAndIsrResponse."""

import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkactl.cluster.protocol import control
from kafkactl.cluster.protocol.codec import encode_body, encode_response
from kafkactl.cluster.protocol.control_responses import framed, leader_and_isr_response_body

TOPIC_IDS = [uuid.UUID(int=0x1234), None, uuid.uuid4()]


def kio_response(error_code, topics):
    return control.LeaderAndIsrResponse(error_code=error_code, topics=tuple(
        control.LeaderAndIsrTopicError(topic_id=topic_id or uuid.UUID(int=0), partition_errors=tuple(
            control.LeaderAndIsrPartitionError(partition_index=p, error_code=code) for p, code in errors))
        for topic_id, errors in topics))


@pytest.mark.parametrize("topics", [
    [],
    [(TOPIC_IDS[0], [])],
    [(TOPIC_IDS[0], [(0, ErrorCode.none)])],
    [(TOPIC_IDS[1], [(7, ErrorCode.stale_controller_epoch), (2**31 - 1, ErrorCode.kafka_storage_error)])],
    # more than 127 entries: multi-byte compact array lengths
    [(TOPIC_IDS[2], [(p, ErrorCode.none) for p in range(300)]), (TOPIC_IDS[0], [(1, ErrorCode.none)])],
    [(uuid.uuid4(), [(p, ErrorCode.unknown_topic_or_partition)]) for p in range(200)],
])
@pytest.mark.parametrize("error_code", [ErrorCode.none, ErrorCode.stale_broker_epoch])
def test_the_body_and_the_frame_are_kios(topics, error_code):
    direct = leader_and_isr_response_body(error_code.value,
                                          [(t, [(p, c.value) for p, c in errors]) for t, errors in topics])
    expected = kio_response(error_code, topics)
    assert direct == encode_body(expected)
    response = framed(42, direct)
    assert b"".join(response.parts) == encode_response(expected, 42) and response.size == len(b"".join(response.parts))

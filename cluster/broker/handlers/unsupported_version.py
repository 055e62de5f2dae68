"""UNSUPPORTED_VERSION answers to versions Kafka 2.8 serves and this broker cannot.

Produce v0-2 and Fetch v0-3 carry message sets of magic 0 and 1. Kafka 2.8
converts them (up on produce, down on fetch); this broker's log holds magic
2 batches only and sends them from the segment files unconverted, so these
versions are read only to be refused, in the request's own layout: each
partition named gets UNSUPPORTED_VERSION, as Kafka's error responses for
these APIs mirror the request's partitions. A client that never asked
ApiVersions (kafka-python's SimpleClient, clients pinned to an old
api_version) then raises a clear, non-retriable error rather than
reconnecting again and again to a broker that closes on it.

Nothing is appended, read, or waited for.
"""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.handlers.produce import CloseConnection
from kafkactl.cluster.protocol.apis import FETCH, PRODUCE
from kafkactl.cluster.protocol.build import make, nested
from kafkactl.cluster.protocol.codec import response_class

_NO_THROTTLE = datetime.timedelta(0)


def produce(services, header, request):
    if request.acks == 0:
        # No response exists to carry the error: close, as Kafka does for
        # any acks=0 produce it refuses (handlers/produce.py).
        raise CloseConnection(f"acks=0 Produce v{header.api_version} (correlation id {header.correlation_id}) "
                              "refused: this broker takes record batches (magic 2, Produce v3+) only")
    cls = response_class(PRODUCE, header.api_version)
    topics = tuple(
        nested(cls, "TopicProduceResponse", name=topic.name, partition_responses=tuple(
            nested(cls, "PartitionProduceResponse", index=partition.index, error_code=ErrorCode.unsupported_version,
                   base_offset=-1, log_append_time=None)
            for partition in topic.partition_data))
        for topic in request.topic_data)
    return make(cls, responses=topics, throttle_time=_NO_THROTTLE)


def fetch(services, header, request):
    cls = response_class(FETCH, header.api_version)
    topics = tuple(
        nested(cls, "FetchableTopicResponse", topic=topic.topic, partitions=tuple(
            nested(cls, "PartitionData", partition_index=partition.partition,
                   error_code=ErrorCode.unsupported_version, high_watermark=-1, records=b"")
            for partition in topic.partitions))
        for topic in request.topics)
    return make(cls, throttle_time=_NO_THROTTLE, responses=topics)


HANDLERS = {PRODUCE: produce, FETCH: fetch}

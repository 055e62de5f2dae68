"""Bad input on the wire: each gets Kafka's error code or a closed connection,
the broker keeps serving everyone else, and nothing acknowledged is lost."""

from __future__ import annotations

import datetime
import os
import struct
import time

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.list_offsets.v7 import request as list_offsets7
from kio.schema.metadata.v12 import request as metadata12
from kio.schema.produce.v9 import request as produce9

from kafkactl.cluster.broker.broker_client import decode_response
from kafkactl.cluster.protocol.codec import response_class
from kafkactl.cluster.protocol.record_batch import build_batch
from support.wire import WireClient, api_versions, client, create_topic, latest_offset

MAX_REQUEST_BYTES = 200_000
MESSAGE_MAX_BYTES = 50_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kafkactl.cluster.local import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("bad-input") / "cluster")
    status = cluster.up(brokers=1, overrides={
        "socket.request.max.bytes": str(MAX_REQUEST_BYTES),
        "message.max.bytes": str(MESSAGE_MAX_BYTES),
        "auto.create.topics.enable": "true",
    })
    yield status.broker(1)
    cluster.down()


def produce(c: WireClient, topic: str, partition: int, records: bytes, acks: int = -1):
    request = produce9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=partition, records=records),)),),
    )
    response = c.request(request)
    return response.responses[0].partition_responses[0]


def batch(n: int = 3, value_size: int = 10) -> bytes:
    return build_batch([(b"k%d" % i, os.urandom(value_size), [("h", b"v")], 1_700_000_000_000 + i) for i in range(n)])


def test_frame_over_socket_request_max_bytes_closes_only_that_connection(broker):
    bad, good = client(broker), client(broker)
    bad.send_raw(struct.pack(">i", MAX_REQUEST_BYTES + 1) + b"\x00" * 100)
    assert bad.closed_by_peer()
    assert api_versions(good).error_code == ErrorCode.none


def test_truncated_and_garbage_frames(broker):
    truncated = client(broker)
    truncated.send_raw(struct.pack(">i", 100) + b"\x00\x03\x00\x0c")
    truncated.close()  # the broker must not wait forever or crash
    garbage = client(broker)
    garbage.send_raw(struct.pack(">i", 64) + os.urandom(64))
    assert garbage.closed_by_peer()
    tiny = client(broker)
    tiny.send_raw(struct.pack(">i", 3) + b"abc")
    assert tiny.closed_by_peer()
    assert api_versions(client(broker)).error_code == ErrorCode.none


def test_unknown_api_key_closes_the_connection(broker):
    c = client(broker)
    c.send_raw(struct.pack(">ihhih", 10, 999, 0, 1, -1))
    assert c.closed_by_peer()


def test_unsupported_api_versions_version_gets_v0_fallback(broker):
    c = client(broker)
    c.send_raw(c.frame(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                       api_version_override=99))
    response = c.read_response(18, 0, header_flexible=False)
    assert response.error_code == ErrorCode.unsupported_version
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys[0] == (0, 9) and keys[1][0] == 4 and 10 in keys


def test_produce_v2_gets_unsupported_version_and_the_connection_stays_open(broker):
    # Kafka 2.8 serves v0-v2 (message format 0/1); this broker answers each
    # partition UNSUPPORTED_VERSION in v2's layout rather than closing.
    c = client(broker)
    c.correlation_id += 1
    body = struct.pack(">hi", 1, 1000) + struct.pack(">ih", 1, 3) + b"old" + struct.pack(">iii", 1, 0, -1)
    header = struct.pack(">hhih", 0, 2, c.correlation_id, 4) + b"test"
    c.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
    response = decode_response(c.read_frame(), response_class(0, 2), c.correlation_id)
    [[partition]] = [t.partition_responses for t in response.responses]
    assert (partition.index, partition.error_code, partition.base_offset) == (0, ErrorCode.unsupported_version, -1)
    assert api_versions(c).error_code == ErrorCode.none   # same connection


def test_a_produce_version_beyond_kafka_2_8_closes_connection(broker):
    c = client(broker)
    request = produce9.ProduceRequest(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1), topic_data=())
    c.send_raw(c.frame(request, api_version_override=10))
    assert c.closed_by_peer()


def test_unknown_topic_and_partition(broker):
    c = client(broker)
    assert produce(c, "no-such-topic-xyz", 0, batch()).error_code == ErrorCode.unknown_topic_or_partition
    create_topic(c, "known")
    assert produce(c, "known", 7, batch()).error_code == ErrorCode.unknown_topic_or_partition


def test_invalid_topic_name_in_metadata(broker):
    c = client(broker)
    request = metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name="bad name!"),),
        allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    assert c.request(request).topics[0].error_code == ErrorCode.invalid_topic_exception


def test_corrupt_and_oversized_batches_store_nothing(broker):
    c = client(broker)
    create_topic(c, "guarded")
    first = produce(c, "guarded", 0, batch())
    assert first.error_code == ErrorCode.none and first.base_offset == 0
    before = latest_offset(c, "guarded")

    corrupt = bytearray(batch())
    corrupt[-1] ^= 0xFF
    assert produce(c, "guarded", 0, bytes(corrupt)).error_code == ErrorCode.corrupt_message
    # a good batch followed by a corrupt one: the whole request is refused
    # (INVALID_RECORD: a partition carries one batch per request, as in Kafka)
    assert produce(c, "guarded", 0, batch() + bytes(corrupt)).error_code == ErrorCode.invalid_record
    truncated = batch()[:-5]
    assert produce(c, "guarded", 0, truncated).error_code == ErrorCode.corrupt_message
    too_large = batch(n=2, value_size=MESSAGE_MAX_BYTES)
    assert produce(c, "guarded", 0, too_large).error_code == ErrorCode.message_too_large
    assert latest_offset(c, "guarded") == before

    after = produce(c, "guarded", 0, batch())
    assert after.error_code == ErrorCode.none and after.base_offset == before


def test_invalid_required_acks(broker):
    c = client(broker)
    create_topic(c, "acks")
    assert produce(c, "acks", 0, batch(), acks=5).error_code == ErrorCode.invalid_required_acks
    assert latest_offset(c, "acks") == 0


def test_fetch_with_stale_leader_epoch_is_fenced(start_cluster):
    cluster, status = start_cluster(brokers=2, overrides={"zookeeper.session.timeout.ms": "4000",
                                                         "default.replication.factor": "2"})
    c = client(status.broker(1))
    create_topic(c, "fenced")
    # A leader change makes an epoch older than the current one exist
    # (epoch -1 means "no check"): stop whichever broker leads.
    def leader_and_epoch(conn):
        metadata = conn.request(metadata12.MetadataRequest(
            topics=(metadata12.MetadataRequestTopic(topic_id=None, name="fenced"),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        partition = metadata.topics[0].partitions[0]
        return partition.leader_id, partition.leader_epoch

    first_leader, _ = leader_and_epoch(c)
    survivor = 2 if first_leader == 1 else 1
    c.close()
    cluster.stop_broker(first_leader)
    c = client(status.broker(survivor))
    deadline = time.monotonic() + 30
    while leader_and_epoch(c) != (survivor, 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    leader, epoch = leader_and_epoch(c)
    assert (leader, epoch) == (survivor, 1)
    assert produce(c, "fenced", 0, batch()).error_code == ErrorCode.none

    def fetch(current_leader_epoch):
        request = fetch12.FetchRequest(
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
            isolation_level=0, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic="fenced", partitions=(fetch12.FetchPartition(
                partition=0, current_leader_epoch=current_leader_epoch, fetch_offset=0,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20),)),),
            forgotten_topics_data=(), rack_id="")
        return c.request(request).responses[0].partitions[0]

    assert fetch(epoch).error_code == ErrorCode.none
    assert fetch(epoch).records
    assert fetch(epoch - 1).error_code == ErrorCode.fenced_leader_epoch
    assert fetch(epoch + 1).error_code == ErrorCode.unknown_leader_epoch

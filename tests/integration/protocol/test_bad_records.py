"""Batches with a valid CRC over bad contents (issue 11, part 2), on real brokers.

Each bad batch gets Kafka's error code and a message naming what is wrong,
the log end offset does not move, and a good batch after them is
acknowledged; kcat and kafka-python then read every acknowledged record and
nothing else. Before issue 11 every one of these batches was acknowledged
and replicated, and the readers stopped at them.
"""

from __future__ import annotations

import datetime
import struct
import subprocess
import time

import crc32c
import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v4 import request as fetch4
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.produce.v7 import request as produce7
from kio.schema.produce.v9 import request as produce9

from kafkactl.cluster.protocol.record_batch import HEADER_SIZE, build_batch
from support.wire import WireClient, api_versions, create_topic, latest_offset

BASE_TIMESTAMP = 1_700_000_000_000


# --- literal edits of a valid batch, CRC recomputed --------------------------------

def good_batch(tag: str, count: int = 3) -> tuple[bytes, list[bytes]]:
    values = [f"{tag}-{i}".encode() for i in range(count)]
    entries = [(b"k%d" % i, value, [("h", b"v")], BASE_TIMESTAMP + i) for i, value in enumerate(values)]
    return build_batch(entries), values


def edit(batch: bytes, *, count: int | None = None, attributes: int | None = None,
         payload: bytes | None = None, producer_id: int | None = None) -> bytes:
    """`batch` with header fields or the records replaced; batchLength and CRC follow."""
    data = bytearray(batch[:HEADER_SIZE]) + (batch[HEADER_SIZE:] if payload is None else payload)
    struct.pack_into(">i", data, 8, len(data) - 12)
    if count is not None:
        struct.pack_into(">i", data, 23, count - 1)    # lastOffsetDelta
        struct.pack_into(">i", data, 57, count)        # recordCount
    if attributes is not None:
        struct.pack_into(">h", data, 21, attributes)
    if producer_id is not None:
        struct.pack_into(">q", data, 43, producer_id)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def bad_batches() -> list[tuple[str, bytes, ErrorCode, str]]:
    """(name, batch, Kafka's error code, words its message must contain)."""
    one, _ = good_batch("bad", 1)
    three, _ = good_batch("bad", 3)
    length = one[HEADER_SIZE] >> 1   # the record's length: a 1-byte zigzag varint
    longer = (length + 100) << 1     # zigzag, two varint bytes
    past_the_end = (one[:HEADER_SIZE] + bytes([(longer & 0x7F) | 0x80, longer >> 7])
                    + one[HEADER_SIZE + 1:])
    return [
        ("1 record declaring 1,000", edit(one, count=1_000), ErrorCode.invalid_record,
         "declares 1000 records"),
        ("1 record declaring 2^31-1", edit(one, count=2**31 - 1), ErrorCode.invalid_record,
         "declares 2147483647 records"),
        ("3 records declaring 1", edit(three, count=1), ErrorCode.invalid_record,
         "bytes after the last of its 1 records"),
        ("record length past the batch", edit(past_the_end), ErrorCode.invalid_record,
         "runs past the end of the batch"),
        ("every byte after the header 0xff", edit(one, payload=b"\xff" * 40), ErrorCode.invalid_record,
         "longer than 5 bytes"),
        ("gzip bit on plain records", edit(three, attributes=1), ErrorCode.invalid_record,
         "gzip payload does not decompress"),
        ("zstd bit on plain records", edit(three, attributes=4), ErrorCode.invalid_record,
         "zstd payload does not decompress"),
        ("control bit from a client", edit(one, attributes=0x20), ErrorCode.invalid_record,
         "clients are not allowed to write control records"),
        ("transactional bit, producer id -1", edit(one, attributes=0x10, producer_id=-1),
         ErrorCode.invalid_txn_state, "transactional"),
    ]


# --- requests ---------------------------------------------------------------------------

def produce_request(module, partitions: list[tuple[str, int, bytes]], acks: int = -1):
    by_topic: dict[str, list] = {}
    for topic, index, records in partitions:
        by_topic.setdefault(topic, []).append(module.PartitionProduceData(index=index, records=records))
    return module.ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=10),
        topic_data=tuple(module.TopicProduceData(name=name, partition_data=tuple(data))
                         for name, data in by_topic.items()))


def produce(c: WireClient, topic: str, records: bytes, module=produce9):
    response = c.request(produce_request(module, [(topic, 0, records)]))
    [topic_response] = response.responses
    [partition] = topic_response.partition_responses
    return partition


def kcat_values(bootstrap: str, topic: str) -> list[bytes]:
    done = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
                           "-q", "-f", "%o %s\\n"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    lines = done.stdout.decode().splitlines()
    assert [int(line.split(" ")[0]) for line in lines] == list(range(len(lines)))
    return [line.split(" ", 1)[1].encode() for line in lines]


def kafka_python_values(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True, consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        records = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            polled = consumer.poll(timeout_ms=500)
            for batch in polled.values():
                records.extend(batch)
            if len(records) >= expected and not polled:
                break   # everything expected, then an empty poll: nothing else is there
        assert [r.offset for r in records] == list(range(len(records)))
        return [r.value for r in records]
    finally:
        consumer.close()


def assert_refusals_store_nothing(c: WireClient, bootstrap: str, topic: str) -> None:
    """Every bad batch refused with its code and message, none stored, then a
    good batch acknowledged; both readers see exactly the acknowledged records."""
    first, first_values = good_batch("before")
    assert produce(c, topic, first).error_code == ErrorCode.none
    end = latest_offset(c, topic)
    assert end == 3
    for name, batch, code, words in bad_batches():
        answer = produce(c, topic, batch)
        assert answer.error_code == code, f"{name}: {answer}"
        assert words in (answer.error_message or ""), f"{name}: {answer.error_message}"
        assert latest_offset(c, topic) == end, f"{name} moved the log end offset"
    after, after_values = good_batch("after")
    acknowledged = produce(c, topic, after)
    assert acknowledged.error_code == ErrorCode.none and acknowledged.base_offset == end
    expected = first_values + after_values
    assert kcat_values(bootstrap, topic) == expected
    assert kafka_python_values(bootstrap, topic, len(expected)) == expected


# --- one broker -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kafkactl.cluster.local import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("bad-records") / "cluster")
    status = cluster.up(brokers=1, overrides={"auto.create.topics.enable": "true"})
    yield status
    cluster.down()


def connect(status, broker_id: int = 1) -> WireClient:
    broker = status.broker(broker_id)
    return WireClient(broker.host, broker.port)


def test_bad_batches_get_kafkas_codes_and_store_nothing(broker):
    c = connect(broker)
    create_topic(c, "bad-records")
    assert_refusals_store_nothing(c, broker.bootstrap_servers, "bad-records")


def test_record_errors_name_the_record(broker):
    c = connect(broker)
    create_topic(c, "record-errors")
    one, _ = good_batch("x", 1)
    answer = produce(c, "record-errors", edit(one, count=5))
    assert answer.error_code == ErrorCode.invalid_record
    [record_error] = answer.record_errors   # Kafka's batch_index: the record's index in its batch
    assert record_error.batch_index == 1
    assert "record 1" in record_error.batch_index_error_message


def test_produce_v7_gets_the_code_without_record_errors(broker):
    c = connect(broker)
    create_topic(c, "v7")
    one, _ = good_batch("x", 1)
    answer = produce(c, "v7", edit(one, attributes=0x20), module=produce7)
    assert answer.error_code == ErrorCode.invalid_record
    assert latest_offset(c, "v7") == 0


def test_two_batches_for_one_partition_are_refused(broker):
    c = connect(broker)
    create_topic(c, "two-batches")
    first, _ = good_batch("a")
    second, _ = good_batch("b")
    answer = produce(c, "two-batches", first + second)
    assert answer.error_code == ErrorCode.invalid_record
    assert "exactly one record batch per partition" in answer.error_message
    assert latest_offset(c, "two-batches") == 0


def test_the_same_partition_twice_keeps_the_last(broker):
    c = connect(broker)
    create_topic(c, "twice")
    earlier, _ = good_batch("earlier", 2)
    later, later_values = good_batch("later", 3)
    response = c.request(produce_request(produce9, [("twice", 0, earlier), ("twice", 0, later)]))
    [topic_response] = response.responses
    [answer] = topic_response.partition_responses   # one answer for the partition, as Kafka
    assert answer.error_code == ErrorCode.none and answer.base_offset == 0
    assert latest_offset(c, "twice") == 3
    assert kcat_values(broker.bootstrap_servers, "twice") == later_values


def test_acks_0_failure_closes_the_connection(broker):
    c = connect(broker)
    create_topic(c, "acks0")
    good, _ = good_batch("ok")
    c.send_raw(c.frame(produce_request(produce9, [("acks0", 0, good)], acks=0)))
    assert api_versions(c).error_code == ErrorCode.none   # a good acks=0 produce: still open
    one, _ = good_batch("bad", 1)
    c.send_raw(c.frame(produce_request(produce9, [("acks0", 0, edit(one, count=9))], acks=0)))
    assert c.closed_by_peer()
    c = connect(broker)
    assert latest_offset(c, "acks0") == 3
    c.send_raw(c.frame(produce_request(produce9, [("no-such-topic-x", 7, good)], acks=0)))
    assert c.closed_by_peer()   # any refused partition, as Kafka


@pytest.mark.parametrize("version", [4, 12])
def test_fetch_with_an_unknown_isolation_level(broker, version):
    c = connect(broker)
    create_topic(c, "isolation")
    if version == 12:
        request = fetch12.FetchRequest(
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
            isolation_level=2, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic="isolation", partitions=(fetch12.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1 << 20),)),),
            forgotten_topics_data=(), rack_id="")
    else:
        request = fetch4.FetchRequest(
            replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20, isolation_level=7,
            topics=(fetch4.FetchTopic(topic="isolation", partitions=(fetch4.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))
    response = c.request(request)
    if version == 12:
        assert response.error_code == ErrorCode.unknown_server_error
    [topic] = response.responses
    [partition] = topic.partitions
    assert partition.error_code == ErrorCode.unknown_server_error
    assert api_versions(c).error_code == ErrorCode.none


def test_a_zstd_bomb_is_refused_and_the_broker_stays_small(broker):
    import zstandard

    c = connect(broker)
    create_topic(c, "bomb")
    one, _ = good_batch("x", 1)
    # 256 MiB of zeros in ~8 KiB, no content size in the frame header
    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(256 << 20))
    pid = broker.broker(1).pid
    before = _peak_rss_mib(pid)
    answer = produce(c, "bomb", edit(one, attributes=4, payload=bomb))
    assert answer.error_code == ErrorCode.invalid_record
    assert "zstd payload does not decompress" in answer.error_message
    assert latest_offset(c, "bomb") == 0
    # at most the 64 MiB bound was decompressed, never the 256 MiB
    assert _peak_rss_mib(pid) - before < 128


def _peak_rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


# --- three brokers, acks=-1 -----------------------------------------------------------------

def test_three_brokers_acks_all(start_cluster):
    _, status = start_cluster(brokers=3, overrides={"default.replication.factor": "3",
                                                     "min.insync.replicas": "2"})
    c = connect(status)
    create_topic(c, "replicated")
    leader = c.request(_metadata("replicated")).topics[0].partitions[0].leader_id
    c.close()
    c = connect(status, leader)
    assert_refusals_store_nothing(c, status.bootstrap_servers, "replicated")
    # every replica holds exactly the two acknowledged batches, nothing of the refused ones
    for broker_id in (1, 2, 3):
        assert _stored(status, broker_id, "replicated") == [(0, 3), (3, 3)], f"broker {broker_id}"


def _metadata(topic: str):
    from kio.schema.metadata.v12 import request as metadata12

    return metadata12.MetadataRequest(
        topics=(metadata12.MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def _stored(status, broker_id: int, topic: str) -> list[tuple[int, int]]:
    """(base offset, record count) of each batch in the replica's segment files."""
    from pathlib import Path

    from kafkactl.cluster.protocol.record_batch import validate_batches

    [directory] = [Path(d) / f"{topic}-0" for d in status.broker(broker_id).log_dirs
                   if (Path(d) / f"{topic}-0").is_dir()]
    data = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
    return [(h.base_offset, h.record_count)
            for h in validate_batches(data, 1 << 30, strict_counts=False, allow_partial_tail=True)]

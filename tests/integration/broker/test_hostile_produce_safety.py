"""Data safety under hostile produce requests: an acks=-1 producer runs while
edited record batches (CRC recomputed, so only the records are wrong) go to
the leader. Every acknowledged record is read back by kafka-python and kcat,
and every offset in the log is explained by an acknowledgement: nothing of a
refused request was appended.
"""

from __future__ import annotations

import random
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from support.broker_support import kafka_python_consume, wait_for_leaders, watermarks
from support.producers import BackgroundProducer
from support.waiting import wait_for
from kio.index import load_response_schema

from kafkactl.cluster.broker.broker_client import decode_response
from kafkactl.cluster.protocol.bounds import length_positions, read_uvarint
from kafkactl.cluster.protocol.codec import request_class
from kafkactl.cluster.protocol.record_batch import parse_header
from support.broker_fuzz import capture_client_frames
from support.frame_fuzz import BATCH_EDITS, mutate_batch
from support.sockets import read_exactly

pytestmark = pytest.mark.slow

TOPIC = "safe"
CASES_PER_EDIT = 12
# Edits no valid batch survives: Kafka refuses each of them whatever the batch was.
ALWAYS_REFUSED = {"record_count", "batch_length", "magic", "control", "transactional", "all_ff", "trailing"}


def create_topic(status) -> None:
    kafkactl = str(Path(sys.executable).parent / "kafkactl")
    subprocess.run([kafkactl, "-z", status.zookeeper_connect,
                    "topics", "create", TOPIC, "--replica-assignment", "1:2:3",
                    "--config", "min.insync.replicas=2"], check=True, capture_output=True, timeout=60)


def produce_answer(broker, data: bytes) -> tuple[int, int] | None:
    """(error_code, base_offset) of the one partition a Produce request names,
    or None when the broker closed the connection without answering."""
    api_version, correlation_id = struct.unpack_from(">hi", data, 6)
    with socket.create_connection((broker.host, broker.port), timeout=30) as sock:
        sock.sendall(data)
        try:
            size = struct.unpack(">i", read_exactly(sock, 4))[0]
            frame = read_exactly(sock, size)
        except ConnectionError:
            return None
    response = decode_response(frame, load_response_schema(0, api_version), correlation_id)
    partition = response.responses[0].partition_responses[0]
    return int(partition.error_code), int(partition.base_offset)


def records_in(data: bytes) -> int:
    """The records a Produce request's batches declare (what an append would add)."""
    frame = memoryview(data[4:])
    api_version = struct.unpack_from(">h", frame, 2)[0]
    cls = request_class(0, api_version)
    (client_id_length,) = struct.unpack_from(">h", frame, 8)
    offset = 10 + max(client_id_length, 0) + (1 if cls.__flexible__ else 0)
    total = 0
    for position, kind, compact in length_positions(cls, frame, offset):
        if kind != "bytes":
            continue
        length, start = _records_length(frame, position, compact)
        end, cursor = start + length, start
        while end - cursor >= 61:
            header = parse_header(frame, cursor)
            total += max(header.last_offset_delta + 1, 0)
            cursor += max(header.size_bytes, 61)
    return total


def _records_length(frame, position: int, compact: bool) -> tuple[int, int]:
    """(length, where the records start) of a records field's length prefix."""
    if not compact:
        return struct.unpack_from(">i", frame, position)[0], position + 4
    value, start = read_uvarint(frame, position, len(frame))
    return value - 1, start


def test_edited_batches_next_to_an_acks_all_producer_lose_and_leak_nothing(start_cluster):
    cluster, status = start_cluster(brokers=3)
    create_topic(status)
    wait_for_leaders(status.bootstrap_servers, TOPIC)
    leader = status.broker(1)
    corpus = capture_client_frames({b.id: (b.host, b.port) for b in status.brokers}, TOPIC)
    produce_frames = [f for f in corpus if struct.unpack_from(">h", f, 0)[0] == 0]
    assert len(produce_frames) >= 5, "the clients sent too few produce requests"
    captured_end = watermarks(status.bootstrap_servers, TOPIC)[1]

    producer = BackgroundProducer(status.bootstrap_servers, TOPIC, lambda i: b"stream-%08d" % i,
                                  linger_ms=2, burst=50, pause_s=0.01)
    producer.start()
    accepted: list[tuple[int, int, str]] = []   # (base offset, records, edit made)
    refused: dict[str, int] = {}
    try:
        wait_for(lambda: producer.acked_count() >= 200, 60, what="the producer's first acknowledgements")
        for edit in BATCH_EDITS:
            for case in range(CASES_PER_EDIT):
                rng = random.Random(f"{edit}:{case}")
                data, what = mutate_batch(rng.choice(produce_frames), rng, edit)
                answer = produce_answer(leader, data)
                if answer is not None and answer[0] == 0:
                    accepted.append((answer[1], records_in(data), f"{edit}: {what}"))
                else:
                    refused[edit] = refused.get(edit, 0) + 1
        wait_for(lambda: producer.acked_count() >= 400, 60, what="acknowledgements after the edits")
    finally:
        remaining = producer.stop_and_flush(60)
    assert remaining == 0 and producer.errors == [], (remaining, producer.errors[:5])

    never_refused = {edit for edit in ALWAYS_REFUSED if refused.get(edit, 0) != CASES_PER_EDIT}
    assert never_refused == set(), (f"acknowledged edits Kafka refuses: "
                                    f"{[a for a in accepted if a[2].split(':')[0] in never_refused][:5]}")

    latest = watermarks(status.bootstrap_servers, TOPIC)[1]
    records = kafka_python_consume(status.bootstrap_servers, TOPIC, latest)   # CRCs checked
    assert [r.offset for r in records] == list(range(latest)), "offsets with gaps or repeats"
    by_offset = {r.offset: r for r in records}
    lost = [(i, o) for i, o in producer.acknowledged.items() if by_offset[o].value != producer.value(i)]
    assert lost == [], f"acknowledged records not at their offsets: {lost[:5]}"

    explained = set(range(captured_end)) | set(producer.acknowledged.values())
    for base_offset, count, _ in accepted:
        explained |= set(range(base_offset, base_offset + count))
    leaked = sorted(set(range(latest)) - explained)
    assert leaked == [], f"offsets no acknowledgement explains (from refused requests): {leaked[:10]}"

    kcat = subprocess.run(["kcat", "-b", status.bootstrap_servers, "-C", "-t", TOPIC, "-p", "0",
                           "-e", "-o", "beginning", "-f", "%o\n"], capture_output=True, timeout=60)
    assert kcat.returncode == 0, kcat.stderr.decode()[-500:]
    assert [int(line) for line in kcat.stdout.split()] == list(range(latest))

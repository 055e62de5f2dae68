"""Helpers for the broker integration tests: segment files, clients, waiting.

Imported by the test modules of this folder (its conftest puts the folder on
sys.path). Everything here reads what a user or an operator could see: files
in the log dirs, records through real clients, the `kafkactl` CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from support.producers import BackgroundProducer  # noqa: F401  (re-exported for the broker tests)

KAFKACTL = Path(sys.executable).parent / "kafkactl"

# Record batch (magic v2) header layout, see wire-compat.md.
BATCH_HEADER_BYTES = 61
LOG_OVERHEAD = 12
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def require_tools(*names: str) -> None:
    import pytest

    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.fail(f"missing tools {missing}: run `make setup`")


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(condition, timeout_s: float, interval_s: float = 0.1, what: str = "condition"):
    """Poll until condition() is truthy; return its value or fail with `what`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


# ---- segment files --------------------------------------------------------

@dataclass(frozen=True)
class StoredBatch:
    segment: Path
    position: int        # byte position of the batch in its segment file
    size: int            # bytes the batch occupies (batchLength + 12)
    base_offset: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    base_sequence: int
    record_count: int

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def partition_dir(status, topic: str, partition: int = 0, broker_id: int = 1) -> Path:
    """The `<topic>-<partition>` dir in whichever log dir of the broker holds it."""
    found = [Path(d) / f"{topic}-{partition}" for d in status.broker(broker_id).log_dirs
             if (Path(d) / f"{topic}-{partition}").is_dir()]
    assert len(found) == 1, f"{topic}-{partition} in {len(found)} log dirs: {found}"
    return found[0]


def segment_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def read_batches(segment: Path) -> list[StoredBatch]:
    """Every whole batch header of one `.log` file (a torn tail is ignored)."""
    data = segment.read_bytes()
    batches = []
    position = 0
    while position + BATCH_HEADER_BYTES <= len(data):
        (base_offset, batch_length, _epoch, magic, _crc, attributes, last_offset_delta,
         _base_ts, max_ts, producer_id, _producer_epoch, base_sequence,
         record_count) = struct.unpack_from(">qiibIhiqqqhii", data, position)
        assert magic == 2, f"{segment}@{position}: magic {magic}"
        size = batch_length + LOG_OVERHEAD
        if position + size > len(data):
            break
        batches.append(StoredBatch(segment, position, size, base_offset, attributes,
                                   last_offset_delta, max_ts, producer_id, base_sequence,
                                   record_count))
        position += size
    return batches


def stored_batches(directory: Path) -> list[StoredBatch]:
    return [batch for segment in segment_files(directory) for batch in read_batches(segment)]


def assert_contiguous(batches: list[StoredBatch], start: int = 0) -> int:
    """Batches cover start.. without gaps or overlaps; returns the next offset."""
    expected = start
    for batch in batches:
        assert batch.base_offset == expected, (
            f"batch at {batch.segment.name}@{batch.position} starts at {batch.base_offset}, "
            f"expected {expected}")
        assert batch.record_count == batch.last_offset_delta + 1
        expected = batch.last_offset + 1
    return expected


# ---- clients --------------------------------------------------------------

def kafka_python_consume(bootstrap: str, topic: str, count: int, partition: int = 0,
                         start: int | None = None, timeout_s: float = 30.0, **config) -> list:
    """`count` records with kafka-python (assign, CRCs checked), from `start` or the beginning."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True, **config)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        if start is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, start)
        records = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        assert len(records) >= count, f"consumed {len(records)} of {count} records of {topic}"
        return records
    finally:
        consumer.close()


def confluent_consume(bootstrap: str, topic: str, count: int, partition: int = 0,
                      timeout_s: float = 30.0, **config) -> list:
    """`count` messages with confluent-kafka from the beginning (assign, CRCs checked)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                         "enable.auto.commit": False, "check.crcs": True, **config})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        messages = []
        deadline = time.monotonic() + timeout_s
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, f"consumer error: {message.error()}"
            messages.append(message)
        assert len(messages) >= count, f"consumed {len(messages)} of {count} messages of {topic}"
        return messages
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    """(earliest, latest) via ListOffsets, as confluent-kafka asks for them."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g")})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


def wait_for_leaders(bootstrap: str, *topics: str, timeout_s: float = 15.0) -> None:
    """Wait until each topic's partition 0 answers ListOffsets without error.

    A (re)started broker registers in ZooKeeper, which is all `cluster.up()`
    waits for, and takes leadership a moment later; until then requests get
    NOT_LEADER_OR_FOLLOWER, which clients retry but a single request does not.
    """
    from confluent_kafka import KafkaException

    def answers(topic: str) -> bool:
        try:
            watermarks(bootstrap, topic)
            return True
        except KafkaException:
            return False

    for topic in topics:
        wait_until(lambda: answers(topic), timeout_s, what=f"a leader for {topic}-0")


# ---- the CLI --------------------------------------------------------------

def kafkactl_up(cluster_dir: Path, config_home: Path, timeout_s: float = 120) -> dict:
    """`kafkactl cluster up --dir DIR -o json`, with its own config file."""
    env = {**os.environ, "KAFKACTL_CONFIG": str(config_home / "config.json")}
    done = subprocess.run([str(KAFKACTL), "cluster", "up", "--dir", str(cluster_dir), "-o", "json"],
                          capture_output=True, text=True, env=env, timeout=timeout_s)
    assert done.returncode == 0, f"kafkactl cluster up failed ({done.returncode}):\n{done.stderr}"
    return json.loads(done.stdout)


def log_tail(path: str, lines: int = 40) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(cannot read {path}: {error})"


# ---- raw protocol (kio entities over a socket) ----------------------------

class RawClient:
    """One connection speaking kio request entities; for timing single requests."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0) -> None:
        import socket

        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def send(self, request) -> None:
        import io

        from kio.serial import entity_writer

        self.correlation_id += 1
        client_id = b"broker-tests"
        header = struct.pack(">hhih", request.__api_key__, request.__version__,
                             self.correlation_id, len(client_id)) + client_id
        if request.__flexible__:
            header += b"\x00"  # request header v2: no tagged fields
        body = io.BytesIO()
        entity_writer(type(request))(body, request)
        payload = header + body.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def receive(self, request):
        from kio.index import load_response_schema
        from kio.serial import entity_reader

        size = struct.unpack(">i", self._read_exactly(4))[0]
        frame = self._read_exactly(size)
        assert struct.unpack_from(">i", frame)[0] == self.correlation_id
        cls = load_response_schema(request.__api_key__, request.__version__)
        flexible_header = cls.__flexible__ and request.__api_key__ != 18
        response, _ = entity_reader(cls)(frame, 5 if flexible_header else 4)
        return response

    def request(self, request):
        self.send(request)
        return self.receive(request)

    def _read_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            data += chunk
        return bytes(data)


def fetch_request(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1,
                  partition: int = 0, max_bytes: int = 1 << 20, version: int = 11):
    """A consumer's Fetch (replica id -1) for one partition."""
    import datetime
    import sys as _sys

    from kio.index import load_request_schema
    from kio.schema.types import BrokerId, TopicName

    cls = load_request_schema(1, version)
    module = _sys.modules[cls.__module__]
    fields = {f for f in cls.__dataclass_fields__}
    values = dict(replica_id=BrokerId(-1), max_wait=datetime.timedelta(milliseconds=max_wait_ms),
                  min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0, session_id=0,
                  session_epoch=-1, forgotten_topics_data=(), rack_id="",
                  topics=(module.FetchTopic(topic=TopicName(topic), partitions=(
                      module.FetchPartition(partition=partition, current_leader_epoch=-1,
                                            fetch_offset=offset, log_start_offset=-1,
                                            partition_max_bytes=max_bytes),)),))
    return cls(**{k: v for k, v in values.items() if k in fields})


def _varint(value: int) -> bytes:
    """Zigzag varint, as record fields use."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_batch(values: list[bytes], producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, timestamp_ms: int | None = None) -> bytes:
    """An uncompressed magic-v2 record batch (offsets from 0), written from the spec."""
    import crc32c

    timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    records = bytearray()
    for delta, value in enumerate(values):
        body = (b"\x00" + _varint(0) + _varint(delta) + _varint(-1)  # attributes, ts, offset, null key
                + _varint(len(value)) + value + _varint(0))           # value, no headers
        records += _varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, timestamp, timestamp, producer_id,
                            producer_epoch, base_sequence, len(values)) + records
    crc = crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length

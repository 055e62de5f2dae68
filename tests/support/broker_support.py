"""Helpers for the broker integration tests: segment files, clients, the CLI.

Everything here reads what a user or an operator could see: files in the log
dirs, records through real clients, the `kafkactl` CLI. Single requests on a
raw connection are in support.wire and support.raw_requests.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from support.names import unique_topic
from support.waiting import wait_for

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
        wait_for(lambda: answers(topic), timeout_s, f"a leader for {topic}-0")


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

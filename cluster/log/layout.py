"""What a log dir holds, by name: Kafka's layout, and how each name is parsed.

Each log dir (`log.dirs`):
    .lock                               held (flock) while a manager uses the dir
    .kafka_cleanshutdown                written by shutdown(), removed by startup()
    recovery-point-offset-checkpoint    offsets below which each log is fsynced
    log-start-offset-checkpoint         each log's log_start_offset
    replication-offset-checkpoint       high watermarks, written for the broker
    cleaner-offset-checkpoint           each compacted log's first dirty offset (cleaner.py)
    <topic>-<partition>/                one Log (its files: segment.py, leader_epoch.py)
    <topic>-<partition>.<id>-delete/    a deleted log awaiting purge_deleted()
    <topic>-<partition>.<id>-future/    a copy being made of a log in another dir
                                        (AlterReplicaLogDirs, KIP-113; future_logs.py)
      future-complete                   in a future dir: caught up, may replace the current log

Rules: every name of a log dir is made and parsed here, nowhere else. A
parser answers None for any name not its own, so a dir is read by trying
each in turn; `<id>` is a random hex id, so a partition deleted or moved
twice never meets its own earlier remains.
"""

from __future__ import annotations

import re
import uuid

from kafkactl.cluster.log.checkpoint import TopicPartition

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DIR_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
                   CLEANER_OFFSET_CHECKPOINT)
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
FUTURE_COMPLETE_MARKER = "future-complete"

_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def is_valid_topic(topic: str) -> bool:
    """Kafka's legal topic names: 1-249 of [a-zA-Z0-9._-]."""
    return bool(_TOPIC.match(topic))


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """(topic, partition) of `<topic>-<partition>`, None for any other name."""
    topic, _, partition = name.rpartition("-")
    if not topic or not partition.isdigit() or not is_valid_topic(topic):
        return None
    return topic, int(partition)


def future_dir_name(topic: str, partition: int) -> str:
    return f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_future_dir_name(name: str) -> TopicPartition | None:
    """(topic, partition) of `<topic>-<partition>.<id>-future`, else None."""
    if not name.endswith(FUTURE_DIR_SUFFIX):
        return None
    base, _, unique_id = name[:-len(FUTURE_DIR_SUFFIX)].rpartition(".")
    if not unique_id or not all(c in "0123456789abcdef" for c in unique_id):
        return None
    return parse_partition_dir_name(base)


def deleted_dir_path(path: str) -> str:
    """Where the log dir `path` (current or future) goes to await deletion."""
    return f"{path}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def is_deleted_dir_name(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX)

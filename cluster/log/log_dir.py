"""One log dir's own files and listing: its lock, its clean-shutdown marker,
its offset checkpoints, and which of its dirs are logs.

Rules:
- a dir is used by one manager at a time: `.lock` is flocked (exclusive,
  non-blocking) while a manager uses it; the lock dies with the process, so
  a killed broker's dirs are free again at once;
- the dir counts as cleanly shut down iff `.kafka_cleanshutdown` exists;
  start-up removes it (durably) once the dir's logs are loaded, so a crash
  from then on counts as unclean; shutdown writes it (durably) last;
- a malformed recovery-point or log-start-offset checkpoint is reported and
  read as empty, which is safe: recovery point 0 rescans every segment, and
  a log's start offset falls back to its first segment;
- at start-up, `.tmp` checkpoint writes and `-delete` dirs a crash left
  are removed; any other dir not named as a log is reported and left alone.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile, TopicPartition, remove_stale_tmp_files
from kafkactl.cluster.log.durable import create_marker, fsync_dir
from kafkactl.cluster.log.errors import CheckpointFormatError, LogDirLockedError
from kafkactl.cluster.log.layout import (
    CLEAN_SHUTDOWN_FILE,
    DIR_CHECKPOINTS,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    is_deleted_dir_name,
    parse_future_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
)

logger = logging.getLogger(__name__)


class DirState(NamedTuple):
    """What a log dir says about its logs before they are opened."""

    clean_shutdown: bool
    recovery_points: dict[TopicPartition, int]
    log_start_offsets: dict[TopicPartition, int]


class FoundLog(NamedTuple):
    path: str
    topic_partition: TopicPartition
    is_future: bool


def lock_dir(path: str) -> int:
    """flock the dir's `.lock`; the descriptor holds the lock until closed."""
    fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLockedError(f"log dir {path} is in use by another broker") from None
    return fd


def read_dir_state(path: str) -> DirState:
    remove_stale_tmp_files(path, DIR_CHECKPOINTS)
    return DirState(os.path.exists(os.path.join(path, CLEAN_SHUTDOWN_FILE)),
                    _read_or_empty(path, RECOVERY_POINT_CHECKPOINT),
                    _read_or_empty(path, LOG_START_OFFSET_CHECKPOINT))


def _read_or_empty(path: str, name: str) -> dict[TopicPartition, int]:
    try:
        return OffsetCheckpointFile(os.path.join(path, name)).read()
    except CheckpointFormatError as error:
        logger.error("ignoring malformed checkpoint: %s", error)
        return {}


def found_logs(path: str, futures: Mapping[str, TopicPartition]) -> Iterator[FoundLog]:
    """The logs of the dir, in name order: its `<topic>-<partition>` dirs, and
    the future dirs among `futures` (settled before: future_logs.py).
    Removes `-delete` dirs as it meets them."""
    for name in sorted(os.listdir(path)):
        partition_path = os.path.join(path, name)
        if not os.path.isdir(partition_path):
            continue
        if is_deleted_dir_name(name):
            shutil.rmtree(partition_path)
            continue
        if partition_path in futures:
            yield FoundLog(partition_path, futures[partition_path], True)
            continue
        if parse_future_dir_name(name) is not None:
            continue   # settled (promoted or discarded) before loading
        topic_partition = parse_partition_dir_name(name)
        if topic_partition is None:
            logger.warning("log dir %s: ignoring %s, not <topic>-<partition>", path, name)
            continue
        yield FoundLog(os.path.join(path, partition_dir_name(*topic_partition)), topic_partition, False)


def finish_loading(path: str, state: DirState) -> None:
    """Every log of the dir is open: from now on a crash counts as unclean."""
    if state.clean_shutdown:
        os.unlink(os.path.join(path, CLEAN_SHUTDOWN_FILE))
        fsync_dir(path)
    logger.info("log dir %s: loaded (%s shutdown)", path, "clean" if state.clean_shutdown else "unclean")


def mark_clean_shutdown(path: str) -> None:
    create_marker(os.path.join(path, CLEAN_SHUTDOWN_FILE))

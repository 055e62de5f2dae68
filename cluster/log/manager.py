"""All logs of a broker, spread over its log dirs (`log.dirs`).

Layout of each log dir, Kafka's:
    .lock                               held (flock) while a manager uses the dir
    .kafka_cleanshutdown                written by shutdown(), removed by startup()
    recovery-point-offset-checkpoint    offsets below which each log is fsynced
    log-start-offset-checkpoint         each log's log_start_offset
    replication-offset-checkpoint       high watermarks, written for the broker
    <topic>-<partition>/                one Log
    <topic>-<partition>.<id>-delete/    a deleted log awaiting purge_deleted()
    <topic>-<partition>.<id>-future/    a copy being made of a log in another dir
                                        (AlterReplicaLogDirs, KIP-113)

Future logs: a move between log dirs copies the partition's log into a
future log in the wanted dir, then swaps them (replace_current_with_future).
The current log stays authoritative until the swap's rename of the current
dir; a future log is promoted at start-up only if it carries the
`future-complete` marker (written once it was caught up with appends
stopped, and fsynced) and its current log is gone. Any other future log
is resumed when its current log exists, or discarded when it does not.

The broker drives time: it should call flush_due() about every second,
run_retention() every few minutes (log.retention.check.interval.ms),
purge_deleted() every few seconds, checkpoint_recovery_points() and
checkpoint_log_start_offsets() every minute, and write_high_watermarks()
every few seconds (replica.high.watermark.checkpoint.interval.ms).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kafkactl.cluster.log.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    remove_stale_tmp_files,
)
from kafkactl.cluster.log.config import NO_LIMIT, LogConfig
from kafkactl.cluster.log.durable import create_marker, fsync_dir, remove_if_present
from kafkactl.cluster.log.errors import (
    CheckpointFormatError,
    KafkaStorageError,
    LogClosedError,
    LogDirLockedError,
)
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.log import Log, partition_dir_name
from kafkactl.cluster.log.media import MEDIA_CLASSES, detect_media_class

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
FUTURE_COMPLETE_MARKER = "future-complete"
MAX_PREFERRED_DIRS = 100_000    # AlterReplicaLogDirs for replicas not hosted yet
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

TopicPartition = tuple[str, int]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    media: str | None = None  # "ssd" / "hdd"; None: detected from the block device


class DirUsage(NamedTuple):
    path: str
    media: str
    capacity_bytes: int
    used_bytes: int       # bytes of the logs in the dir
    partition_count: int


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """(topic, partition) of `<topic>-<partition>`, None for any other name."""
    topic, _, partition = name.rpartition("-")
    if not topic or not partition.isdigit() or not _TOPIC.match(topic):
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


PLACEMENT_USAGE_MAX_AGE_MS = 1000
SHUTDOWN_FLUSH_THREADS = 8


class LogManager:
    def __init__(self, log_dirs: list[LogDir], default_config: LogConfig,
                 clock_ms: Callable[[], int]) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.default_config = default_config
        self._clock_ms = clock_ms
        self._dirs: list[LogDir] = []
        for log_dir in log_dirs:
            os.makedirs(log_dir.path, exist_ok=True)
            path = os.path.abspath(log_dir.path)
            self._dirs.append(LogDir(path, detect_media_class(path, log_dir.media)))
        self._lock = threading.Lock()
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self._future_logs: dict[TopicPartition, Log] = {}
        self._future_dir_of: dict[TopicPartition, str] = {}
        self._preferred_dirs: dict[TopicPartition, str] = {}   # where a log not hosted yet must go
        self._topic_configs: dict[str, LogConfig] = {}
        self._deleted_dirs: list[tuple[int, str]] = []
        self._lock_files: dict[str, int] = {}
        # Placement reads every log's size; a LeaderAndIsr creating thousands
        # of logs reuses one reading for up to PLACEMENT_USAGE_MAX_AGE_MS.
        self._placement_usage: dict[str, list[int]] = {}   # path -> [used bytes, partitions]
        self._placement_usage_ms = 0
        # Logs with periodic work to do (Log.needs_attention), by kind.
        self._attention: dict[str, set[Log]] = {"flush": set(), "purge": set()}
        self._attention_lock = threading.Lock()

    @property
    def log_dirs(self) -> list[LogDir]:
        return list(self._dirs)

    # --- startup and shutdown --------------------------------------------------

    def startup(self, topic_configs: Mapping[str, LogConfig] | None = None) -> None:
        """Lock every log dir and load every `<topic>-<partition>` found in it.

        A dir is treated as cleanly shut down iff its `.kafka_cleanshutdown`
        marker exists; the marker is removed once the dir's logs are loaded,
        so a crash from now on counts as unclean.
        """
        self._topic_configs.update(topic_configs or {})
        for log_dir in self._dirs:
            self._lock_dir(log_dir.path)
        futures = self._settle_future_dirs()
        for log_dir in self._dirs:
            self._load_dir(log_dir.path, futures)

    def _lock_dir(self, path: str) -> None:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(f"log dir {path} is in use by another broker") from None
        self._lock_files[path] = fd

    def _settle_future_dirs(self) -> dict[str, TopicPartition]:
        """Decide the fate of every future log dir before anything is loaded.

        Returns the future dirs to load (path -> partition). A complete future
        whose current log is gone (a swap cut short after the current dir was
        renamed away) is promoted to `<topic>-<partition>`; an incomplete one
        without its current log is discarded; a second future of the same
        partition is discarded.
        """
        current: set[TopicPartition] = set()
        futures: dict[TopicPartition, list[str]] = {}
        for log_dir in self._dirs:
            for name in sorted(os.listdir(log_dir.path)):
                if not os.path.isdir(os.path.join(log_dir.path, name)):
                    continue
                if (tp := parse_partition_dir_name(name)) is not None:
                    current.add(tp)
                elif (tp := parse_future_dir_name(name)) is not None:
                    futures.setdefault(tp, []).append(os.path.join(log_dir.path, name))
        kept: dict[str, TopicPartition] = {}
        for tp, paths in futures.items():
            first, extra = paths[0], paths[1:]
            for path in extra:
                logger.warning("discarding extra future log %s of %s-%d", path, *tp)
                _discard_dir(path)
            complete = os.path.exists(os.path.join(first, FUTURE_COMPLETE_MARKER))
            if tp in current:
                kept[first] = tp          # resumed: the current log is authoritative
            elif complete:
                self._promote_future_dir(first, tp)
            else:
                logger.warning("discarding incomplete future log %s: its current log is gone", first)
                _discard_dir(first)
        return kept

    def _promote_future_dir(self, path: str, tp: TopicPartition) -> None:
        parent = os.path.dirname(path)
        target = os.path.join(parent, partition_dir_name(*tp))
        logger.warning("%s-%d: finishing an interrupted move: %s becomes the current log", *tp, path)
        os.rename(path, target)
        fsync_dir(parent)

    def _load_dir(self, path: str, futures: Mapping[str, TopicPartition] | None = None) -> None:
        futures = futures or {}
        marker = os.path.join(path, CLEAN_SHUTDOWN_FILE)
        clean_shutdown = os.path.exists(marker)
        remove_stale_tmp_files(path, (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                      REPLICATION_OFFSET_CHECKPOINT))
        recovery_points = self._read_or_recover(path, RECOVERY_POINT_CHECKPOINT)
        log_start_offsets = self._read_or_recover(path, LOG_START_OFFSET_CHECKPOINT)
        for name in sorted(os.listdir(path)):
            partition_path = os.path.join(path, name)
            if not os.path.isdir(partition_path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(partition_path)
                continue
            if partition_path in futures:
                self._load_future_log(path, partition_path, futures[partition_path], clean_shutdown,
                                      recovery_points, log_start_offsets)
                continue
            if parse_future_dir_name(name) is not None:
                continue   # settled (promoted or discarded) before loading
            topic_partition = parse_partition_dir_name(name)
            if topic_partition is None:
                logger.warning("log dir %s: ignoring %s, not <topic>-<partition>", path, name)
                continue
            self._load_log(path, topic_partition, clean_shutdown,
                           recovery_points.get(topic_partition, 0),
                           log_start_offsets.get(topic_partition))
        if clean_shutdown:
            os.unlink(marker)
            fsync_dir(path)
        logger.info("log dir %s: loaded (%s shutdown)", path, "clean" if clean_shutdown else "unclean")

    def _read_or_recover(self, path: str, name: str) -> dict[TopicPartition, int]:
        """A dir checkpoint; a malformed one is reported and treated as empty.

        Empty is safe: recovery point 0 rescans every segment, and the log
        start offset falls back to each log's first segment.
        """
        try:
            return OffsetCheckpointFile(os.path.join(path, name)).read()
        except CheckpointFormatError as error:
            logger.error("ignoring malformed checkpoint: %s", error)
            return {}

    def _load_log(self, dir_path: str, topic_partition: TopicPartition, clean_shutdown: bool,
                  recovery_point: int, log_start_offset: int | None) -> None:
        topic, partition = topic_partition
        if topic_partition in self._logs:
            raise KafkaStorageError(
                f"{topic}-{partition} exists in both {self._dir_of[topic_partition]} and {dir_path}")
        log_path = os.path.join(dir_path, partition_dir_name(topic, partition))
        remove_if_present(os.path.join(log_path, FUTURE_COMPLETE_MARKER))   # left by a promotion
        log = Log.open(log_path, topic, partition, self._config_for(topic), self._clock_ms, recovery_point,
                       clean_shutdown, log_start_offset)
        self._logs[topic_partition] = self._watch(log)
        self._dir_of[topic_partition] = dir_path

    def _load_future_log(self, dir_path: str, log_path: str, tp: TopicPartition, clean_shutdown: bool,
                         recovery_points: Mapping[TopicPartition, int],
                         log_start_offsets: Mapping[TopicPartition, int]) -> None:
        """A future log whose current log exists: resumed (the mover copies on from its end)."""
        remove_if_present(os.path.join(log_path, FUTURE_COMPLETE_MARKER))   # complete only for that swap
        log = Log.open(log_path, tp[0], tp[1], self._config_for(tp[0]), self._clock_ms,
                       recovery_points.get(tp, 0), clean_shutdown, log_start_offsets.get(tp))
        self._future_logs[tp] = self._watch(log)
        self._future_dir_of[tp] = dir_path
        logger.info("%s-%d: resuming the move to %s at offset %d", *tp, dir_path, log.log_end_offset)

    def shutdown(self, high_watermarks: Mapping[TopicPartition, int] | None = None) -> None:
        """Flush every log, write the checkpoints and the clean-shutdown markers."""
        with self._lock:
            logs = list(self._logs.values()) + list(self._future_logs.values())
        # fsync releases the interpreter: several at once make a broker with
        # thousands of logs stop in a fraction of the time (Kafka's
        # num.recovery.threads.per.data.dir plays this part).
        with ThreadPoolExecutor(max_workers=SHUTDOWN_FLUSH_THREADS, thread_name_prefix="shutdown-flush") as pool:
            for _ in pool.map(Log.flush, logs):
                pass
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        if high_watermarks is not None:
            self.write_high_watermarks(high_watermarks)
        for log in logs:
            log.close()
        for log_dir in self._dirs:
            if log_dir.path not in self._lock_files:
                continue
            create_marker(os.path.join(log_dir.path, CLEAN_SHUTDOWN_FILE))
            os.close(self._lock_files.pop(log_dir.path))
        with self._lock:
            self._logs.clear()
            self._dir_of.clear()
            self._future_logs.clear()
            self._future_dir_of.clear()

    # --- logs ------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None,
                          preferred_media: str | None = None) -> Log:
        """The partition's log, created in the least-used dir if it does not exist.

        A new log goes to the dir AlterReplicaLogDirs asked for, if it did
        (maybe_update_preferred_log_dir); otherwise it goes to the dir of class `preferred_media` with the fewest
        bytes of logs, ties broken by fewer partitions, then by dir order; with
        no dir of that class (or none preferred), any dir qualifies.
        """
        if not _TOPIC.match(topic) or partition < 0:
            raise ValueError(f"invalid topic partition {topic!r} {partition}")
        if preferred_media is not None and preferred_media not in MEDIA_CLASSES:
            raise ValueError(f"media class must be one of {MEDIA_CLASSES}, not {preferred_media!r}")
        with self._lock:
            if config is not None:
                self._topic_configs[topic] = config
            existing = self._logs.get((topic, partition))
            if existing is None:
                dir_path = self._preferred_dirs.pop((topic, partition), None) or self._choose_dir(preferred_media)
                log = Log.open(os.path.join(dir_path, partition_dir_name(topic, partition)), topic,
                               partition, self._config_for(topic), self._clock_ms, 0, True)
                self._logs[(topic, partition)] = self._watch(log)
                self._dir_of[(topic, partition)] = dir_path
                logger.info("created log %s-%d in %s", topic, partition, dir_path)
                return log
        # A log loaded at start-up has the broker defaults of server.properties;
        # its topic's overrides and the dynamic broker defaults are known now.
        if config is not None and existing.config != config:
            existing.update_config(config)
        return existing

    def _choose_dir(self, preferred_media: str | None) -> str:
        candidates = [d for d in self._dirs if d.media == preferred_media] or self._dirs
        if len(candidates) == 1:
            return candidates[0].path
        now = self._clock_ms()
        if not self._placement_usage or now - self._placement_usage_ms >= PLACEMENT_USAGE_MAX_AGE_MS:
            self._placement_usage = {path: [used, count] for path, used, count in self._log_bytes_locked()}
            self._placement_usage_ms = now
        usage = self._placement_usage
        order = {d.path: i for i, d in enumerate(self._dirs)}
        chosen = min(candidates, key=lambda d: (usage[d.path][0], usage[d.path][1], order[d.path]))
        usage[chosen.path][1] += 1
        return chosen.path

    def dir_of(self, topic: str, partition: int) -> str | None:
        return self._dir_of.get((topic, partition))

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log and rename its dir to `<name>.<id>-delete` for purge_deleted().

        A future log of the partition goes first: a future log without its
        current log must only ever mean an interrupted swap."""
        self.delete_future_log(topic, partition)
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            dir_path = self._dir_of.pop((topic, partition), None)
            self._preferred_dirs.pop((topic, partition), None)
        if log is None or dir_path is None:
            return False
        self._retire(log, dir_path)
        logger.info("deleted log %s-%d (files go after file.delete.delay.ms)", topic, partition)
        return True

    def _retire(self, log: Log, dir_path: str) -> None:
        log.close()
        deleted_path = f"{log.dir_path}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        os.rename(log.dir_path, deleted_path)
        fsync_dir(dir_path)
        with self._lock:
            self._deleted_dirs.append((self._clock_ms() + log.config.file_delete_delay_ms, deleted_path))

    # --- moves between log dirs (KIP-113) ---------------------------------------

    def configured_dir(self, path: str) -> str | None:
        """The log dir `path` names (absolute, normalised), None if it is not one of ours."""
        if not os.path.isabs(path):
            return None
        wanted = os.path.normpath(path)
        return next((d.path for d in self._dirs if d.path == wanted), None)

    def maybe_update_preferred_log_dir(self, topic: str, partition: int, dir_path: str) -> bool:
        """Remember where the log of a partition not hosted yet must be created.

        False when too many are remembered already (each entry goes when its
        log is created or deleted)."""
        with self._lock:
            key = (topic, partition)
            if key not in self._preferred_dirs and len(self._preferred_dirs) >= MAX_PREFERRED_DIRS:
                return False
            self._preferred_dirs[key] = dir_path
            return True

    def preferred_dir_of(self, topic: str, partition: int) -> str | None:
        return self._preferred_dirs.get((topic, partition))

    def future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    def future_dir_of(self, topic: str, partition: int) -> str | None:
        return self._future_dir_of.get((topic, partition))

    def all_future_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._future_logs)

    def placements(self) -> list[tuple[TopicPartition, Log, str, bool]]:
        """(partition, log, its dir, is future) of every log, current and
        future, read at one instant: never both or neither during a swap."""
        with self._lock:
            return ([(tp, log, self._dir_of[tp], False) for tp, log in self._logs.items()]
                    + [(tp, log, self._future_dir_of[tp], True) for tp, log in self._future_logs.items()])

    def create_future_log(self, topic: str, partition: int, dir_path: str) -> Log:
        """An empty future log in `dir_path` (another dir than the current log's),
        starting at the current log's start offset; an existing future log in
        that dir is returned as it is, one in another dir is deleted first."""
        key = (topic, partition)
        with self._lock:
            current = self._logs.get(key)
            if current is None:
                raise KafkaStorageError(f"{topic}-{partition} has no log here to move")
            if self._dir_of[key] == dir_path:
                raise ValueError(f"{topic}-{partition} is already in {dir_path}")
            existing, existing_dir = self._future_logs.get(key), self._future_dir_of.get(key)
            if existing is not None and existing_dir == dir_path:
                return existing
        if existing is not None:
            self.delete_future_log(topic, partition)
        with self._lock:
            log = Log.open(os.path.join(dir_path, future_dir_name(topic, partition)), topic, partition,
                           self._config_for(topic), self._clock_ms, 0, True, current.log_start_offset)
            self._future_logs[key] = self._watch(log)
            self._future_dir_of[key] = dir_path
        logger.info("%s-%d: moving from %s to %s", topic, partition, self._dir_of.get(key), dir_path)
        return log

    def delete_future_log(self, topic: str, partition: int) -> bool:
        """Abandon a move: the future log goes the way of a deleted log."""
        with self._lock:
            log = self._future_logs.pop((topic, partition), None)
            dir_path = self._future_dir_of.pop((topic, partition), None)
        if log is None or dir_path is None:
            return False
        self._retire(log, dir_path)
        logger.info("%s-%d: abandoned the future log in %s", topic, partition, dir_path)
        return True

    def replace_current_with_future(self, topic: str, partition: int,
                                    fault: Callable[[str], None] | None = None) -> Log:
        """Swap a caught-up future log in as the partition's log; returns the new Log.

        The caller must have stopped every append and truncation of both logs
        (and checked that the future log ends where the current one does).
        On disk, in this order, each step durable before the next:
          1. "mark-complete": fsync the future log, write its marker;
          2. "retire-current": rename the current dir to `.<id>-delete`;
          3. "promote-future": rename the future dir to `<topic>-<partition>`.
        A crash before 2 keeps the current log (the future is resumed); after
        2 start-up promotes the marked future (see _settle_future_dirs).
        `fault(step)` is called after each step (tests simulate crashes).
        """
        key = (topic, partition)
        with self._lock:
            current, future = self._logs.get(key), self._future_logs.get(key)
            source_dir, target_dir = self._dir_of.get(key), self._future_dir_of.get(key)
            if current is None or future is None:
                raise KafkaStorageError(f"{topic}-{partition}: no move to finish")
            invariant(future.log_end_offset == current.log_end_offset,
                      f"{topic}-{partition}: future log ends at {future.log_end_offset}, "
                      f"current at {current.log_end_offset}")
            future.flush()
            create_marker(os.path.join(future.dir_path, FUTURE_COMPLETE_MARKER))
            _step(fault, "mark-complete")
            current.close()     # before the rename: closing writes by path; fetches keep their files
            retired_path = f"{current.dir_path}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
            os.rename(current.dir_path, retired_path)
            fsync_dir(source_dir)
            _step(fault, "retire-current")
            log_path = os.path.join(target_dir, partition_dir_name(topic, partition))
            os.rename(future.dir_path, log_path)
            fsync_dir(target_dir)
            _step(fault, "promote-future")
            remove_if_present(os.path.join(log_path, FUTURE_COMPLETE_MARKER))
            # The future log stays open under its new name: no reopen, so no
            # rescan of the active segment while appends wait.
            future.relocate(log_path)
            log = future
            self._logs[key] = self._watch(log)
            self._dir_of[key] = target_dir
            del self._future_logs[key], self._future_dir_of[key]
            self._deleted_dirs.append((self._clock_ms() + current.config.file_delete_delay_ms, retired_path))
        logger.info("%s-%d: moved from %s to %s (log end offset %d)", topic, partition, source_dir, target_dir,
                    log.log_end_offset)
        return log

    def update_config(self, topic: str, config: LogConfig) -> None:
        with self._lock:
            self._topic_configs[topic] = config
            logs = [log for (t, _), log in self._logs.items() if t == topic]
        for log in logs:
            log.update_config(config)

    def update_default_config(self, default: LogConfig, topic_configs: Mapping[str, LogConfig]) -> None:
        """New broker-wide defaults (a dynamic broker config): `topic_configs`
        resolves every hosted topic again; one pass over the logs, not one per topic."""
        with self._lock:
            self.default_config = default
            self._topic_configs.update(topic_configs)
            logs = [(log, self._config_for(t)) for (t, _), log in self._logs.items()]
        for log, config in logs:
            if log.config != config:
                log.update_config(config)

    def _config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    # --- checkpoints -----------------------------------------------------------

    def _logs_by_dir(self, with_futures: bool = True) -> dict[str, dict[TopicPartition, Log]]:
        """Each dir's logs; future logs too unless told otherwise (a dir never
        holds both the current and the future log of a partition)."""
        with self._lock:
            result: dict[str, dict[TopicPartition, Log]] = {d.path: {} for d in self._dirs}
            for topic_partition, log in self._logs.items():
                result[self._dir_of[topic_partition]][topic_partition] = log
            if with_futures:
                for topic_partition, log in self._future_logs.items():
                    result[self._future_dir_of[topic_partition]][topic_partition] = log
            return result

    def write_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Each dir's replication-offset-checkpoint, with the partitions living there."""
        for path, logs in self._logs_by_dir(with_futures=False).items():
            entries = {tp: hw for tp, hw in high_watermarks.items() if tp in logs}
            OffsetCheckpointFile(os.path.join(path, REPLICATION_OFFSET_CHECKPOINT)).write(entries)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of every dir's replication-offset-checkpoint."""
        result: dict[TopicPartition, int] = {}
        for log_dir in self._dirs:
            result.update(OffsetCheckpointFile(
                os.path.join(log_dir.path, REPLICATION_OFFSET_CHECKPOINT)).read())
        return result

    def checkpoint_recovery_points(self) -> None:
        for path, logs in self._logs_by_dir().items():
            OffsetCheckpointFile(os.path.join(path, RECOVERY_POINT_CHECKPOINT)).write(
                {tp: log.recovery_point for tp, log in logs.items()})

    def checkpoint_log_start_offsets(self) -> None:
        for path, logs in self._logs_by_dir().items():
            OffsetCheckpointFile(os.path.join(path, LOG_START_OFFSET_CHECKPOINT)).write(
                {tp: log.log_start_offset for tp, log in logs.items()})

    # --- periodic work ---------------------------------------------------------

    def _note_attention(self, log: Log, kind: str) -> None:
        with self._attention_lock:
            self._attention[kind].add(log)

    def _take_attention(self, kind: str) -> list[Log]:
        with self._attention_lock:
            logs, self._attention[kind] = self._attention[kind], set()
        return list(logs)

    def _watch(self, log: Log) -> Log:
        log.needs_attention = self._note_attention
        self._note_attention(log, "flush")   # a loaded log may have epochs to write
        return log

    def _each_open_log(self, action: Callable[[Log], int | None], logs: Iterable[Log] | None = None) -> int:
        """Apply `action` to every log (or to `logs`), skipping logs deleted
        meanwhile; sums the results."""
        total = 0
        for log in self.all_logs().values() if logs is None else logs:
            if log.closed:      # deleted, or replaced by a move between log dirs
                continue
            try:
                total += action(log) or 0
            except LogClosedError:
                continue  # delete_log raced this periodic task
        return total

    def run_retention(self) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        return self._each_open_log(Log.delete_retained_segments)

    def flush_due(self, now_ms: int | None = None) -> int:
        """fsync logs whose flush.ms elapsed, and segments rolled since the
        last flush; write leader-epoch checkpoints noted meanwhile. Only logs
        that asked for it are visited, unless some topic sets flush.ms."""
        now = self._clock_ms() if now_ms is None else now_ms

        def flush(log: Log) -> int:
            log.write_epoch_checkpoint()
            if now - log.last_flush_ms >= log.config.flush_ms:
                log.flush()
                return 1
            log.flush_rolled_segments()
            return 0

        noted = self._take_attention("flush")
        with self._lock:
            timed = any(c.flush_ms < NO_LIMIT for c in (self.default_config, *self._topic_configs.values()))
        return self._each_open_log(flush, None if timed else noted)

    def purge_deleted(self, now_ms: int | None = None) -> int:
        """Unlink deleted segments and log dirs whose file.delete.delay.ms passed."""
        now = self._clock_ms() if now_ms is None else now_ms
        pending = self._take_attention("purge")
        purged = self._each_open_log(lambda log: log.purge_deleted(now), pending)
        for log in pending:
            if log.has_pending_deletions and not log.closed:
                self._note_attention(log, "purge")   # not due yet
        with self._lock:
            due = [path for due_ms, path in self._deleted_dirs if due_ms <= now]
            self._deleted_dirs = [(d, p) for d, p in self._deleted_dirs if d > now]
        for path in due:
            shutil.rmtree(path, ignore_errors=True)
        return purged + len(due)

    def dir_usage(self) -> list[DirUsage]:
        with self._lock:
            return self._usage_locked()

    def _log_bytes_locked(self) -> list[tuple[str, int, int]]:
        """(path, bytes of logs, partition count) of every dir, in dir order."""
        used = {d.path: 0 for d in self._dirs}
        counts = {d.path: 0 for d in self._dirs}
        for topic_partition, log in self._logs.items():
            path = self._dir_of[topic_partition]
            used[path] += log.size_bytes
            counts[path] += 1
        return [(d.path, used[d.path], counts[d.path]) for d in self._dirs]

    def _usage_locked(self) -> list[DirUsage]:
        result = []
        for log_dir, (path, used, count) in zip(self._dirs, self._log_bytes_locked()):
            stats = os.statvfs(path)
            result.append(DirUsage(path, log_dir.media or "hdd", stats.f_blocks * stats.f_frsize, used, count))
        return result


def _step(fault: Callable[[str], None] | None, name: str) -> None:
    if fault is not None:
        fault(name)


def _discard_dir(path: str) -> None:
    """Rename a log dir out of the way (durably), then remove it."""
    deleted = f"{path}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    os.rename(path, deleted)
    fsync_dir(os.path.dirname(path))
    shutil.rmtree(deleted, ignore_errors=True)

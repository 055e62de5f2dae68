"""All logs of a broker, spread over its log dirs (`log.dirs`): which log lives where.

The LogManager owns the maps of partitions to logs and dirs (current logs,
and the future logs of moves between dirs) and one lock over them; the
rules live beside it: names in a log dir in layout.py, a dir's own files
(lock, clean-shutdown marker, checkpoints) in log_dir.py, where a new log
goes in placement.py, the steps of a move and their crash rules in
future_logs.py, periodic passes in housekeeping.py.

Rules of its own:
- a partition lives in one dir; found in two at start-up, it is an error;
- a deleted log's dir is renamed `.<id>-delete` at once (durably) and
  removed after file.delete.delay.ms, so a fetch still sending from it is
  never cut; a partition's future log is deleted before its current log;
- a move's swap changes the maps under the lock, with the disk: a reader
  of placements() sees the current log or the new one, never both, never
  neither;
- a dir that met an I/O error is offline (dir_failures.py): no new log is
  placed in it, no checkpoint or clean-shutdown marker is written to it, and
  once the broker's failure handler calls handle_log_dir_failure its logs
  leave the maps and are closed, best effort.

The broker drives time: it should call flush_due() about every second,
run_retention() every few minutes (log.retention.check.interval.ms),
purge_deleted() every few seconds, checkpoint_recovery_points() and
checkpoint_log_start_offsets() every minute, and write_high_watermarks()
every few seconds (replica.high.watermark.checkpoint.interval.ms).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.checkpoint import OffsetCheckpointFile, TopicPartition
from kafkactl.cluster.log.config import NO_LIMIT, LogConfig
from kafkactl.cluster.log.dir_failures import LogDirFailureChannel, is_io_error
from kafkactl.cluster.log.durable import rename_durably
from kafkactl.cluster.log.errors import KafkaStorageError, LogDirFailedError
from kafkactl.cluster.log.future_logs import Fault, forget_completion, settle_future_dirs, swap_in_future
from kafkactl.cluster.log.housekeeping import FLUSH, PURGE, Attention, each_open_log, flush_if_due
from kafkactl.cluster.log.layout import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    deleted_dir_path,
    future_dir_name,
    is_valid_topic,
    partition_dir_name,
)
from kafkactl.cluster.log.log import Log
from kafkactl.cluster.log.log_dir import finish_loading, found_logs, lock_dir, mark_clean_shutdown, read_dir_state
from kafkactl.cluster.log.media import MEDIA_CLASSES, detect_media_class
from kafkactl.cluster.log.placement import DirUsage, Placement, dir_usage

MAX_PREFERRED_DIRS = 100_000    # AlterReplicaLogDirs for replicas not hosted yet
SHUTDOWN_FLUSH_THREADS = 8

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    media: str | None = None  # "ssd" / "hdd"; None: detected from the block device


class LogManager:
    def __init__(self, log_dirs: list[LogDir], default_config: LogConfig,
                 clock_ms: Callable[[], int], failures: LogDirFailureChannel | None = None) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.failures = failures or LogDirFailureChannel()
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
        self._placement = Placement([(d.path, d.media or "hdd") for d in self._dirs])
        self._attention = Attention()   # logs with periodic work to do

    @property
    def log_dirs(self) -> list[LogDir]:
        return list(self._dirs)

    def is_dir_online(self, path: str) -> bool:
        return not self.failures.is_offline(path)

    def live_log_dirs(self) -> list[str]:
        offline = self.failures.offline_dirs
        return [d.path for d in self._dirs if d.path not in offline]

    def _io_failed(self, path: str, message: str, error: BaseException | None = None) -> None:
        """Any thread that met an I/O error in `path` (Log.io_failed, or here)."""
        self.failures.maybe_add_offline_log_dir(path, message, error)

    def handle_log_dir_failure(self, path: str) -> list[TopicPartition]:
        """The failure handler's thread, once per offline dir: every log in
        it (current and future) leaves the maps and is closed, best effort
        (the disk may fail the closing too). Returns the partitions whose
        current log was there. (The broker's handler halts it when no dir is
        left: broker/log_dir_failure.py.)"""
        with self._lock:
            current = [tp for tp, d in self._dir_of.items() if d == path]
            futures = [tp for tp, d in self._future_dir_of.items() if d == path]
            closing = [self._logs.pop(tp) for tp in current] + [self._future_logs.pop(tp) for tp in futures]
            for tp in current:
                del self._dir_of[tp]
            for tp in futures:
                del self._future_dir_of[tp]
            for tp in [tp for tp, d in self._preferred_dirs.items() if d == path]:
                del self._preferred_dirs[tp]
        for log in closing:
            try:
                log.close()
            except Exception as error:   # best effort: the files may be beyond reach
                logger.warning("closing %s in offline log dir %s: %s", log, path, error)
        logger.error("stopped serving %d logs (and %d future logs) in offline log dir %s",
                     len(current), len(futures), path)
        return current

    # --- startup and shutdown --------------------------------------------------

    def startup(self, topic_configs: Mapping[str, LogConfig] | None = None) -> None:
        """Lock every log dir, settle its future dirs, and load every log found
        in it (log_dir.py, future_logs.py)."""
        self._topic_configs.update(topic_configs or {})
        for log_dir in self._dirs:
            self._lock_files[log_dir.path] = lock_dir(log_dir.path)
        futures = settle_future_dirs(d.path for d in self._dirs)
        for log_dir in self._dirs:
            self._load_dir(log_dir.path, futures)

    def _load_dir(self, path: str, futures: Mapping[str, TopicPartition]) -> None:
        state = read_dir_state(path)
        for log_path, tp, is_future in found_logs(path, futures):
            if not is_future and tp in self._logs:
                raise KafkaStorageError(f"{tp[0]}-{tp[1]} exists in both {self._dir_of[tp]} and {path}")
            forget_completion(log_path)   # a promoted or resumed future's marker: complete only for its swap
            log = Log.open(log_path, tp[0], tp[1], self._config_for(tp[0]), self._clock_ms,
                           state.recovery_points.get(tp, 0), state.clean_shutdown, state.log_start_offsets.get(tp))
            logs, dirs = (self._future_logs, self._future_dir_of) if is_future else (self._logs, self._dir_of)
            logs[tp] = self._watch(log)
            dirs[tp] = path
            if is_future:   # its current log exists: the mover copies on from its end
                logger.info("%s-%d: resuming the move to %s at offset %d", *tp, path, log.log_end_offset)
        finish_loading(path, state)

    def shutdown(self, high_watermarks: Mapping[TopicPartition, int] | None = None) -> None:
        """Flush every log, write the checkpoints and the clean-shutdown markers."""
        with self._lock:
            logs = list(self._logs.values()) + list(self._future_logs.values())
        # fsync releases the interpreter: several at once make a broker with
        # thousands of logs stop in a fraction of the time (Kafka's
        # num.recovery.threads.per.data.dir plays this part).
        with ThreadPoolExecutor(max_workers=SHUTDOWN_FLUSH_THREADS, thread_name_prefix="shutdown-flush") as pool:
            for _ in pool.map(_flush_unless_dir_failed, logs):
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
            lock_file = self._lock_files.pop(log_dir.path)
            try:
                if self.is_dir_online(log_dir.path):   # an offline dir is recovered at the next start
                    mark_clean_shutdown(log_dir.path)
            except OSError as error:
                self._io_failed(log_dir.path, f"marking {log_dir.path} cleanly shut down failed: {error}", error)
            finally:
                os.close(lock_file)
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
        (maybe_update_preferred_log_dir); otherwise placement.py chooses, by
        `preferred_media` and the dirs' usage.
        """
        if not is_valid_topic(topic) or partition < 0:
            raise ValueError(f"invalid topic partition {topic!r} {partition}")
        if preferred_media is not None and preferred_media not in MEDIA_CLASSES:
            raise ValueError(f"media class must be one of {MEDIA_CLASSES}, not {preferred_media!r}")
        with self._lock:
            if config is not None:
                self._topic_configs[topic] = config
            existing = self._logs.get((topic, partition))
            if existing is None:
                offline = self.failures.offline_dirs
                dir_path = (self._preferred_dirs.pop((topic, partition), None)
                            or self._placement.choose(preferred_media, self._clock_ms(), self._log_bytes_locked,
                                                      offline))
                if dir_path is None or dir_path in offline:
                    raise KafkaStorageError(f"cannot create the log of {topic}-{partition}: "
                                            f"{'log dir ' + dir_path if dir_path else 'every log dir'} is offline")
                try:
                    log = Log.open(os.path.join(dir_path, partition_dir_name(topic, partition)), topic,
                                   partition, self._config_for(topic), self._clock_ms, 0, True)
                except (OSError, KafkaStorageError) as error:
                    if not is_io_error(error):
                        raise
                    message = f"creating the log of {topic}-{partition} in {dir_path} failed: {error}"
                    self._io_failed(dir_path, message, error)
                    raise LogDirFailedError(message) from error
                self._logs[(topic, partition)] = self._watch(log)
                self._dir_of[(topic, partition)] = dir_path
                logger.info("created log %s-%d in %s", topic, partition, dir_path)
                return log
        # A log loaded at start-up has the broker defaults of server.properties;
        # its topic's overrides and the dynamic broker defaults are known now.
        if config is not None and existing.config != config:
            existing.update_config(config)
        return existing

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
        self._retire(log)
        logger.info("deleted log %s-%d (files go after file.delete.delay.ms)", topic, partition)
        return True

    def _retire(self, log: Log) -> None:
        """Close the log and rename its dir away (durably); the dir goes after file.delete.delay.ms."""
        log.close()
        deleted_path = deleted_dir_path(log.dir_path)
        rename_durably(log.dir_path, deleted_path)
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
        self._retire(log)
        logger.info("%s-%d: abandoned the future log in %s", topic, partition, dir_path)
        return True

    def replace_current_with_future(self, topic: str, partition: int, fault: Fault | None = None) -> Log:
        """Swap a caught-up future log in as the partition's log; returns the new Log.

        The caller must have stopped every append and truncation of both logs
        (and checked that the future log ends where the current one does).
        On disk, future_logs.swap_in_future: "mark-complete", "retire-current",
        "promote-future", each durable before the next, so a crash at any
        point leaves one log that start-up takes (future_logs.settle_future_dirs).
        `fault(step)` is called after each step (tests simulate crashes).
        The maps change under the lock with the disk: placements() never sees
        both logs, nor neither.
        """
        key = (topic, partition)
        with self._lock:
            current, future = self._logs.get(key), self._future_logs.get(key)
            source_dir, target_dir = self._dir_of.get(key), self._future_dir_of.get(key)
            if current is None or future is None or target_dir is None:
                raise KafkaStorageError(f"{topic}-{partition}: no move to finish")
            invariant(future.log_end_offset == current.log_end_offset,
                      f"{topic}-{partition}: future log ends at {future.log_end_offset}, "
                      f"current at {current.log_end_offset}")
            retired_path = swap_in_future(current, future, fault)
            self._logs[key] = self._watch(future)
            self._dir_of[key] = target_dir
            del self._future_logs[key], self._future_dir_of[key]
            self._deleted_dirs.append((self._clock_ms() + current.config.file_delete_delay_ms, retired_path))
        logger.info("%s-%d: moved from %s to %s (log end offset %d)", topic, partition, source_dir, target_dir,
                    future.log_end_offset)
        return future

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

    def _write_dir_checkpoints(self, name: str, with_futures: bool,
                               offsets: Callable[[dict[TopicPartition, Log]], dict[TopicPartition, int]]) -> None:
        """Each online dir's checkpoint `name`; a dir whose write fails goes offline, the others go on."""
        for path, logs in self._logs_by_dir(with_futures).items():
            if self.failures.is_offline(path):
                continue
            try:
                OffsetCheckpointFile(os.path.join(path, name)).write(offsets(logs))
            except OSError as error:
                self._io_failed(path, f"writing {name} in {path} failed: {error}", error)

    def write_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Each dir's replication-offset-checkpoint, with the partitions living there."""
        self._write_dir_checkpoints(REPLICATION_OFFSET_CHECKPOINT, False,
                                    lambda logs: {tp: hw for tp, hw in high_watermarks.items() if tp in logs})

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermarks of every dir's replication-offset-checkpoint."""
        result: dict[TopicPartition, int] = {}
        for log_dir in self._dirs:
            result.update(OffsetCheckpointFile(
                os.path.join(log_dir.path, REPLICATION_OFFSET_CHECKPOINT)).read())
        return result

    def checkpoint_recovery_points(self) -> None:
        self._write_dir_checkpoints(RECOVERY_POINT_CHECKPOINT, True,
                                    lambda logs: {tp: log.recovery_point for tp, log in logs.items()})

    def checkpoint_log_start_offsets(self) -> None:
        self._write_dir_checkpoints(LOG_START_OFFSET_CHECKPOINT, True,
                                    lambda logs: {tp: log.log_start_offset for tp, log in logs.items()})

    # --- periodic work ---------------------------------------------------------

    def _watch(self, log: Log) -> Log:
        log.io_failed = self._io_failed
        return self._attention.watch(log)

    def run_retention(self) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        return each_open_log(self.all_logs().values(), Log.delete_retained_segments)

    def flush_due(self, now_ms: int | None = None) -> int:
        """fsync logs whose flush.ms elapsed, and segments rolled since the
        last flush; write leader-epoch checkpoints noted meanwhile. Only logs
        that asked for it are visited, unless some topic sets flush.ms."""
        now = self._clock_ms() if now_ms is None else now_ms
        noted = self._attention.take(FLUSH)
        with self._lock:
            timed = any(c.flush_ms < NO_LIMIT for c in (self.default_config, *self._topic_configs.values()))
        return each_open_log(self.all_logs().values() if timed else noted, lambda log: flush_if_due(log, now))

    def purge_deleted(self, now_ms: int | None = None) -> int:
        """Unlink deleted segments and log dirs whose file.delete.delay.ms passed."""
        now = self._clock_ms() if now_ms is None else now_ms
        pending = self._attention.take(PURGE)
        purged = each_open_log(pending, lambda log: log.purge_deleted(now))
        for log in pending:
            if log.has_pending_deletions and not log.closed:
                self._attention.note(log, PURGE)   # not due yet
        with self._lock:
            due = [path for due_ms, path in self._deleted_dirs if due_ms <= now]
            self._deleted_dirs = [(d, p) for d, p in self._deleted_dirs if d > now]
        for path in due:
            shutil.rmtree(path, ignore_errors=True)
        return purged + len(due)

    def dir_usage(self) -> list[DirUsage]:
        with self._lock:
            return [dir_usage(path, log_dir.media or "hdd", used, count)
                    for log_dir, (path, used, count) in zip(self._dirs, self._log_bytes_locked())]

    def _log_bytes_locked(self) -> list[tuple[str, int, int]]:
        """(path, bytes of logs, partition count) of every dir, in dir order."""
        used = {d.path: 0 for d in self._dirs}
        counts = {d.path: 0 for d in self._dirs}
        for topic_partition, log in self._logs.items():
            path = self._dir_of[topic_partition]
            used[path] += log.size_bytes
            counts[path] += 1
        return [(d.path, used[d.path], counts[d.path]) for d in self._dirs]


def _flush_unless_dir_failed(log: Log) -> None:
    """A shutdown flush; a dir failing now goes offline (reported) and the other logs still flush."""
    try:
        log.flush()
    except LogDirFailedError:
        pass

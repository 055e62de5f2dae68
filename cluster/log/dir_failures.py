"""Log dirs that fail while the broker runs (Kafka's KIP-112, JBOD): which
ones, and who hears of it first.

Rules:
- an I/O error (an OSError: ENOSPC, EIO, EROFS, ...) met in any file of a
  log dir takes the whole dir offline, not only the log that met it: the
  disk under it can no longer be trusted (Kafka's LogDirFailureChannel);
- a dir goes offline once: the first report logs an error naming the dir
  and the cause, and queues the dir for the broker's failure handler (one
  thread, which takes its partitions offline and tells the controller);
  later reports of the same dir change nothing;
- a dir never comes back while the process runs: an operator repairs the
  disk and restarts the broker, as with Kafka;
- the operation that met the error fails with LogDirFailedError (a
  KafkaStorageError: its request is answered KAFKA_STORAGE_ERROR).

`reports_io_errors` wraps the Log's methods that touch files: the log
reports its own dir (the parent of its partition dir) through the callback
the LogManager gave it (`Log.io_failed`).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading

from kafkactl.cluster.log.errors import KafkaStorageError, LogDirFailedError

logger = logging.getLogger(__name__)


def is_io_error(error: BaseException) -> bool:
    """An OSError, or a KafkaStorageError a lower layer raised from one (a
    segment's failed append is reported as such, after cutting its tail)."""
    if isinstance(error, OSError):
        return True
    return isinstance(error, KafkaStorageError) and isinstance(error.__cause__, OSError)


def reports_io_errors(method):
    """A Log method whose I/O errors take the log's dir offline (see the module doc)."""
    action = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except LogDirFailedError:
            raise                      # reported already (a nested call)
        except (OSError, KafkaStorageError) as error:
            if not is_io_error(error):
                raise
            raise self.io_error(action, error) from error
    return wrapper


class LogDirFailureChannel:
    """The offline dirs (read without a lock: a frozenset replaced whole) and
    the queue of dirs the failure handler has yet to take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: frozenset[str] = frozenset()
        self._pending: queue.Queue[str] = queue.Queue()

    @property
    def offline_dirs(self) -> frozenset[str]:
        return self._offline

    def is_offline(self, path: str) -> bool:
        return path in self._offline

    def maybe_add_offline_log_dir(self, path: str, message: str, error: BaseException | None = None) -> bool:
        """Take `path` offline; True the first time (only then is it logged and queued)."""
        with self._lock:
            if path in self._offline:
                return False
            self._offline = self._offline | {path}
        logger.error("log dir %s is offline: %s", path, message, exc_info=error)
        self._pending.put(path)
        return True

    def take(self, timeout_s: float) -> str | None:
        """The next dir that went offline, or None after `timeout_s`."""
        try:
            return self._pending.get(timeout=timeout_s)
        except queue.Empty:
            return None

"""The log dir failure handler (Kafka's ReplicaManager.LogDirFailureHandler).

A log dir that meets an I/O error goes offline at once, on whatever thread
met it (cluster/log/dir_failures.py: the error is logged, the dir queued).
This one thread then does the rest, once per dir:

1. the partitions whose log is in the dir stop fetching and go offline
   (ReplicaManager.handle_log_dir_failure: answered KAFKA_STORAGE_ERROR from
   now on), and the dir's logs are closed, best effort;
2. if no log dir is left, the broker halts: it can store nothing, and
   another broker must lead what it led (Kafka: "Shutdown broker because
   all log dirs in ... have failed", then a halt with a non-zero status);
3. otherwise it tells the controller: a persistent sequential znode
   /log_dir_event_notification/log_dir_event_<seq> naming this broker. The
   controller sends LeaderAndIsr for every replica here; the answers name
   the offline ones (KAFKA_STORAGE_ERROR), which it takes offline. The
   write is retried (doubling backoff) until ZooKeeper takes it: without
   it the controller would keep this broker's dead replicas as leaders and
   in ISRs.

ZooKeeper is written here, never on a request thread, with the zk-agent's
bounded calls (a timeout on each).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kafkactl.cluster import fatal
from kafkactl.cluster.log.dir_failures import LogDirFailureChannel

log = logging.getLogger(__name__)

TAKE_TIMEOUT_S = 0.5
NOTIFY_BACKOFF_INITIAL_S = 0.1
NOTIFY_BACKOFF_MAX_S = 5.0


class LogDirFailureHandler:
    def __init__(self, broker_id: int, failures: LogDirFailureChannel, replica_manager,
                 notify_controller: Callable[[], None],
                 halt: Callable[[str], None] = fatal.halt) -> None:
        self.broker_id = broker_id
        self._failures = failures
        self._replica_manager = replica_manager
        self._notify_controller = notify_controller
        self._halt = halt
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-dir-failure-handler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            path = self._failures.take(TAKE_TIMEOUT_S)
            if path is None:
                continue
            try:
                self.handle(path)
            except Exception as error:   # keep handling the next dirs
                fatal.halt_if_fatal(error, "log dir failure handler")
                log.exception("handling the failure of log dir %s failed", path)

    def handle(self, path: str) -> None:
        replica_manager = self._replica_manager
        replica_manager.handle_log_dir_failure(path)
        log_manager = replica_manager.log_manager
        if not log_manager.live_log_dirs():
            dirs = ", ".join(d.path for d in log_manager.log_dirs)
            self._halt(f"Shutdown broker because all log dirs in {dirs} have failed")
            return
        self._notify_with_retries(path)

    def _notify_with_retries(self, path: str) -> None:
        backoff_s = NOTIFY_BACKOFF_INITIAL_S
        while not self._stopping.is_set():
            try:
                self._notify_controller()
                log.info("broker %s told the controller that log dir %s failed", self.broker_id, path)
                return
            except Exception as error:   # ZooKeeper unreachable or slow: try again
                fatal.halt_if_fatal(error, "log dir event notification")
                log.warning("cannot write the log dir event notification for %s (%s); retrying in %.1f s",
                            path, error, backoff_s)
            self._stopping.wait(backoff_s)
            backoff_s = min(backoff_s * 2, NOTIFY_BACKOFF_MAX_S)

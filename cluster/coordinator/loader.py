"""Loading and unloading `__consumer_offsets` partitions as this broker gains
and loses their leadership; one thread, in the order the roles changed.

1. Leadership gained (`on_election`): the partition is marked loading (its
   groups are answered COORDINATOR_LOAD_IN_PROGRESS), its log is read from
   the log start to the log end offset at that moment (everything earlier
   leaders wrote; the new leader's log is the partition's truth), replayed
   (loading.py), and each owner thread is handed its groups. The loading
   mark goes only after every owner has the hand-over queued, so a request
   queued behind it finds its group installed.
2. Leadership lost (`on_resignation`): each owner drops the partition's
   groups (their parked requests hear NOT_COORDINATOR).
3. A load that fails (the log closed under it as the replica moved or was
   deleted) leaves the partition unserved (NOT_COORDINATOR) and is logged;
   the next election loads it again.
The control thread that delivers the events never waits for a load.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator

from kafkactl.cluster import fatal
from kafkactl.cluster.coordinator.loading import LoadedPartition, replay
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC
from kafkactl.cluster.errors import KafkaError
from kafkactl.cluster.log.errors import LogError
from kafkactl.cluster.protocol.record_batch import CONTROL_MASK, HEADER_SIZE, iter_records, parse_header

log = logging.getLogger(__name__)

LOAD_BUFFER_BYTES = 5 * 1024 * 1024       # offsets.load.buffer.size
EVENT_BOUND = 10_000


def log_records(partition_log, end_offset: int) -> Iterator[tuple[bytes | None, bytes | None]]:
    """(key, value) of every data record from the log start up to `end_offset`."""
    offset = partition_log.log_start_offset
    while offset < end_offset:
        found = partition_log.read(offset, LOAD_BUFFER_BYTES, None, True)
        if found is None:
            return
        data = found.region.read_bytes()
        position = 0
        moved = False
        while len(data) - position >= HEADER_SIZE:
            header = parse_header(data, position)
            if header.size_bytes > len(data) - position:
                break
            batch = data[position:position + header.size_bytes]
            position += header.size_bytes
            if header.next_offset <= offset:
                continue
            if not header.attributes & CONTROL_MASK:
                for record in iter_records(batch):
                    if offset <= record.offset < end_offset:
                        yield record.key, record.value
            offset = header.next_offset
            moved = True
        if not moved:
            return


class PartitionLoader:
    """`install(partition, loaded)` and `unload(partition)` hand the result to
    the owners; `loading` is the set of partitions being loaded (read by
    request threads under the lock)."""

    def __init__(self, replica_manager, install: Callable[[int, LoadedPartition], None],
                 unload: Callable[[int], None]) -> None:
        self._replica_manager = replica_manager
        self._install = install
        self._unload = unload
        self._events: queue.Queue = queue.Queue(maxsize=EVENT_BOUND)
        self._lock = threading.Lock()
        self._loading: set[int] = set()
        self._thread = threading.Thread(target=self._run, name="coordinator-loader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._events.put(None)
        self._thread.join(timeout=5)

    def is_loading(self, partition: int) -> bool:
        with self._lock:
            return partition in self._loading

    # --- LeadershipListener (role_changes.py): called on the control thread

    def on_election(self, topic: str, partition: int, leader_epoch: int) -> None:
        with self._lock:
            self._loading.add(partition)
        self._events.put(("load", partition, leader_epoch))

    def on_resignation(self, topic: str, partition: int, *args) -> None:
        self._events.put(("unload", partition, None))

    # --- the loader thread

    def _run(self) -> None:
        try:
            while True:
                event = self._events.get()
                if event is None:
                    return
                kind, partition, _ = event
                if kind == "load":
                    self._load(partition)
                else:
                    self._unload(partition)
        except BaseException as error:
            fatal.halt_if_fatal(error, "loading group coordinator partitions")
            log.exception("the group coordinator's loader stopped")
            raise

    def _load(self, partition: int) -> None:
        started = time.monotonic()
        try:
            loaded = self._read(partition)
            if loaded is not None:
                self._install(partition, loaded)
                log.info("loaded %s-%d: %d groups, %d with offsets, %d records skipped, in %.3f s",
                         OFFSETS_TOPIC, partition, len(loaded.groups), len(loaded.offsets), loaded.skipped,
                         time.monotonic() - started)
        except (LogError, KafkaError, OSError) as error:
            log.warning("cannot load %s-%d: %s", OFFSETS_TOPIC, partition, error)
        finally:
            with self._lock:
                self._loading.discard(partition)

    def _read(self, partition: int) -> LoadedPartition | None:
        hosted = self._replica_manager.get(OFFSETS_TOPIC, partition)
        if hosted is None:
            return None
        partition_log = hosted.log
        return replay(log_records(partition_log, partition_log.log_end_offset))

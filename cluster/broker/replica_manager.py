"""The partitions this broker hosts: their role, their logs, appends and reads.

Request handler threads call `append` and `read`; the zk-agent thread calls
`apply_metadata`. Each `Partition` guards its role and high watermark with
its own lock. Long-polling fetches wait on one condition that every append
and every high-watermark advance notifies.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.metadata import MetadataSnapshot
from kafkactl.cluster.broker.topic_config import log_config_for
from kafkactl.cluster.invariant import invariant

log = logging.getLogger(__name__)

# Kafka's ListOffsets sentinels.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


@dataclass(slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    last_offset: int = -1


@dataclass(slots=True)
class ReadResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    region: object | None = None   # a file region of whole batches, or None
    size: int = 0


class Partition:
    def __init__(self, topic: str, index: int, log, broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.broker_id = broker_id
        self.lock = threading.Lock()
        self.leader_id = -1
        self.leader_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.high_watermark = 0

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def update_role(self, leader_id: int, leader_epoch: int, isr: list[int], replicas: list[int]) -> None:
        with self.lock:
            if leader_epoch < self.leader_epoch:
                return  # a stale view: leader epochs never go back
            became_leader = leader_id == self.broker_id and not (
                self.is_leader and self.leader_epoch == leader_epoch
            )
            self.leader_id, self.leader_epoch = leader_id, leader_epoch
            self.isr, self.replicas = tuple(isr), tuple(replicas)
            if became_leader:
                self._on_become_leader()
            self._advance_high_watermark()

    def _on_become_leader(self) -> None:
        # Batches appended from now on carry this epoch; the cache maps it to
        # the next offset so followers can later truncate by epoch.
        self.log.maybe_assign_epoch_start_offset(self.leader_epoch, self.log.log_end_offset)
        log.info("%s-%s: leader at epoch %s", self.topic, self.index, self.leader_epoch)

    def _advance_high_watermark(self) -> None:
        # With the leader alone in the ISR, everything it has is committed.
        # Followers (issue 3) will report their log end offsets here.
        if self.is_leader and self.isr == (self.broker_id,):
            new_high_watermark = self.log.log_end_offset
        else:
            new_high_watermark = min(self.high_watermark, self.log.log_end_offset)
        invariant(
            new_high_watermark >= self.high_watermark or not self.is_leader,
            f"{self.topic}-{self.index}: high watermark went back",
        )
        self.high_watermark = new_high_watermark

    def append_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int) -> AppendResult:
        with self.lock:
            if not self.is_leader:
                return AppendResult(ErrorCode.not_leader_or_follower)
            if required_acks == -1 and len(self.isr) < min_insync_replicas:
                return AppendResult(ErrorCode.not_enough_replicas)
            try:
                info = self.log.append_as_leader(records, self.leader_epoch)
            except Exception as error:
                code = getattr(error, "error_code", None)
                if code is None:
                    raise
                return AppendResult(ErrorCode(code), message=str(error))
            self._advance_high_watermark()
            return AppendResult(ErrorCode.none, info.first_offset, self.log.log_start_offset,
                                last_offset=info.last_offset)


class ReplicaManager:
    def __init__(self, config: BrokerConfig, log_manager, clock_ms: Callable[[], int]) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.log_manager = log_manager
        self.clock_ms = clock_ms
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._partitions_lock = threading.Lock()
        self.data_arrived = threading.Condition()
        # Read once: the checkpoint only seeds partitions created after start-up.
        self._checkpointed_high_watermarks = log_manager.read_high_watermarks()

    # --- metadata (zk-agent thread)

    def apply_metadata(self, snapshot: MetadataSnapshot, granted: set[tuple[str, int]]) -> None:
        """Host the partitions assigned here; lead those whose leadership was granted.

        A state znode naming this broker as leader may be left from an earlier
        incarnation: only leadership granted to this incarnation (`granted`)
        makes it act as leader, so it never appends under a stale epoch.
        """
        for name, topic in snapshot.topics.items():
            if name in snapshot.deleting_topics:
                continue
            if topic.config != self.topic_configs.get(name):
                self._update_topic_config(name, topic.config)
            for index, replicas in topic.assignment.partitions.items():
                if self.broker_id not in replicas:
                    continue
                partition = self._get_or_create(name, index)
                state = topic.states.get(index)
                if state is not None:
                    leader = state.leader
                    if leader == self.broker_id and (name, index) not in granted:
                        leader = -1
                    partition.update_role(leader, state.leader_epoch, state.isr, replicas)
        self._notify_data()

    def _update_topic_config(self, topic: str, overrides: dict[str, str]) -> None:
        self.topic_configs[topic] = dict(overrides)
        config = log_config_for(self.config, overrides)
        for (name, _), partition in list(self.partitions.items()):
            if name == topic:
                self.log_manager.update_config(topic, config)
                break

    def _get_or_create(self, topic: str, index: int) -> Partition:
        key = (topic, index)
        partition = self.partitions.get(key)
        if partition is None:
            config = log_config_for(self.config, self.topic_configs.get(topic, {}))
            log_ = self.log_manager.get_or_create_log(
                topic, index, config, self.config.log_dirs_preferred_media
            )
            partition = Partition(topic, index, log_, self.broker_id)
            partition.high_watermark = min(
                self._checkpointed_high_watermarks.get(key, 0), log_.log_end_offset
            )
            with self._partitions_lock:
                self.partitions[key] = partition
        return partition

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    # --- produce

    def append(self, topic: str, index: int, records: bytes, required_acks: int) -> AppendResult:
        partition = self.partitions.get((topic, index))
        if partition is None:
            return AppendResult(ErrorCode.unknown_topic_or_partition)
        min_isr = log_config_for(self.config, self.topic_configs.get(topic, {})).min_insync_replicas
        result = partition.append_as_leader(records, required_acks, min_isr)
        if result.error == ErrorCode.none:
            self._notify_data()
        return result

    def wait_for_commit(self, topic: str, index: int, last_offset: int, deadline: float) -> bool:
        """True once the high watermark passes last_offset (acks=-1)."""
        partition = self.partitions.get((topic, index))
        with self.data_arrived:
            while partition is not None and partition.high_watermark <= last_offset:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not partition.is_leader:
                    return False
                self.data_arrived.wait(remaining)
        return partition is not None

    def _notify_data(self) -> None:
        with self.data_arrived:
            self.data_arrived.notify_all()

    # --- fetch

    def read(self, topic: str, index: int, fetch_offset: int, max_bytes: int,
             current_leader_epoch: int, min_one_batch: bool) -> ReadResult:
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ReadResult(ErrorCode.unknown_topic_or_partition)
        with partition.lock:
            error = _check_epoch(partition, current_leader_epoch)
            high_watermark = partition.high_watermark
        if error is not None:
            return ReadResult(error)
        log_ = partition.log
        if fetch_offset < log_.log_start_offset or fetch_offset > log_.log_end_offset:
            return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
        if fetch_offset >= high_watermark:
            # Between the HW and the LEO there is nothing a consumer may see
            # yet: answer empty, not out of range (seed 000, discussion 7).
            return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset)
        try:
            data = log_.read(fetch_offset, max_bytes, high_watermark, min_one_batch)
        except Exception as error:
            if getattr(error, "error_code", None) == ErrorCode.offset_out_of_range.value:
                return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
            raise
        region = getattr(data, "region", data) if data is not None else None
        size = region.length if region is not None else 0
        return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, region if size else None, size)

    def wait_for_data(self, timeout_s: float) -> None:
        if timeout_s <= 0:
            return
        with self.data_arrived:
            self.data_arrived.wait(timeout_s)

    # --- list offsets

    def offset_for(self, topic: str, index: int, timestamp: int, current_leader_epoch: int):
        """(error, offset, timestamp) for ListOffsets, read_uncommitted."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ErrorCode.unknown_topic_or_partition, -1, -1
        with partition.lock:
            error = _check_epoch(partition, current_leader_epoch)
            high_watermark = partition.high_watermark
        if error is not None:
            return error, -1, -1
        log_ = partition.log
        if timestamp == EARLIEST_TIMESTAMP:
            return ErrorCode.none, log_.log_start_offset, -1
        if timestamp == LATEST_TIMESTAMP:
            return ErrorCode.none, high_watermark, -1
        if timestamp == MAX_TIMESTAMP:
            found = log_.offset_of_max_timestamp()
        else:
            found = log_.offset_for_timestamp(timestamp)
        if found is None or found[0] >= high_watermark:
            return ErrorCode.none, -1, -1
        return ErrorCode.none, found[0], found[1]

    # --- checkpoints

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {key: p.high_watermark for key, p in list(self.partitions.items())}


def _check_epoch(partition: Partition, current_leader_epoch: int) -> ErrorCode | None:
    """Fence requests made with another leader epoch (KIP-320); -1 means unchecked."""
    if not partition.is_leader:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch == -1 or current_leader_epoch == partition.leader_epoch:
        return None
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


def monotonic_deadline(timeout_ms: int) -> float:
    return time.monotonic() + max(0, timeout_ms) / 1000

"""The broker's group coordinator: the owner threads, the partition loader
and the commit watcher, wired together, and the calls request handlers make.

Every call returns at once with a Future the handler's PendingAnswer waits
on; the work runs on the group's owner thread (owner.py, shard.py). When an
owner's queue is full the Future is answered COORDINATOR_NOT_AVAILABLE at
once (`busy`), which clients retry.

Two periodic tasks run on every owner: the expiry of offsets
(offsets.retention.check.interval.ms) and the check for subscribed topics
that gained partitions (seed 003, every PARTITION_CHECK_INTERVAL_MS).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future

from kio.schema.errors import ErrorCode

from kafkactl.cluster.coordinator import group_requests
from kafkactl.cluster.coordinator.group import GroupConfig
from kafkactl.cluster.coordinator.group_requests import GroupDescription, OffsetCommitRequest
from kafkactl.cluster.coordinator.loader import PartitionLoader
from kafkactl.cluster.coordinator.loading import LoadedPartition
from kafkactl.cluster.coordinator.messages import (
    HeartbeatRequest, JoinRequest, JoinResponse, LeaveResponse, MemberIdentity, SyncRequest, SyncResponse)
from kafkactl.cluster.coordinator.offsets import TopicPartition
from kafkactl.cluster.coordinator.owner import OwnerThread
from kafkactl.cluster.coordinator.placement import OFFSETS_TOPIC, partition_for
from kafkactl.cluster.coordinator.shard import CoordinatorContext, GroupShard
from kafkactl.cluster.coordinator.store import RecordWriter

log = logging.getLogger(__name__)

OWNER_THREADS = 2
PARTITION_CHECK_INTERVAL_MS = 1000
HAND_OVER_TIMEOUT_S = 30.0


def group_config_from(config) -> GroupConfig:
    return GroupConfig(min_session_timeout_ms=config.group_min_session_timeout_ms,
                       max_session_timeout_ms=config.group_max_session_timeout_ms,
                       initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                       max_size=config.group_max_size)


class GroupCoordinator:
    def __init__(self, config, replica_manager, metadata, clock_ms: Callable[[], int],
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()), owner_threads: int = OWNER_THREADS) -> None:
        self._config = config
        self._metadata = metadata
        self._replica_manager = replica_manager
        self._clock_ms = clock_ms
        self.writer = RecordWriter(replica_manager, clock_ms, config.offsets_commit_timeout_ms)
        self.loader = PartitionLoader(replica_manager, self._install, self._unload)
        context = CoordinatorContext(
            config=group_config_from(config), clock_ms=clock_ms, new_uuid=new_uuid, writer=self.writer,
            partition_for=self.partition_for, is_loading=self.loader.is_loading,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            offsets_retention_ms=config.offsets_retention_ms,
            topic_known=self._topic_known, partition_count=self._partition_count)
        self._owners = [OwnerThread(f"group-owner-{i}", clock_ms) for i in range(owner_threads)]
        self._shards = [GroupShard(owner, context) for owner in self._owners]

    # --- life cycle

    def start(self) -> None:
        self.writer.start()
        self.loader.start()
        for owner, shard in zip(self._owners, self._shards):
            owner.start()
            owner.submit_waiting(lambda shard=shard: self._schedule_periodic(shard), HAND_OVER_TIMEOUT_S)
        self._replica_manager.add_leadership_listener(self.loader, [OFFSETS_TOPIC])

    def stop(self) -> None:
        self.loader.stop()
        for owner in self._owners:
            owner.stop()
        self.writer.stop()

    def _schedule_periodic(self, shard: GroupShard) -> None:
        now_ms = self._clock_ms()

        def expire() -> None:
            group_requests.expire_offsets(shard)
            shard.owner.at(self._clock_ms() + self._config.offsets_retention_check_interval_ms, expire)

        def check_growth() -> None:
            shard.check_partition_growth()
            shard.owner.at(self._clock_ms() + PARTITION_CHECK_INTERVAL_MS, check_growth)

        shard.owner.at(now_ms + self._config.offsets_retention_check_interval_ms, expire)
        shard.owner.at(now_ms + PARTITION_CHECK_INTERVAL_MS, check_growth)

    # --- placement

    def offsets_partitions(self) -> int:
        """The partition count of `__consumer_offsets`: the topic's own when it
        exists, else offsets.topic.num.partitions (what it will be created with)."""
        topic = self._metadata.snapshot.topics.get(OFFSETS_TOPIC)
        if topic is not None and topic.assignment.partitions:
            return len(topic.assignment.partitions)
        return self._config.offsets_topic_num_partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.offsets_partitions())

    def _topic_known(self, topic: str, partition: int) -> bool:
        known = self._metadata.snapshot.topics.get(topic)
        return known is not None and partition in known.assignment.partitions

    def _partition_count(self, topic: str) -> int | None:
        known = self._metadata.snapshot.topics.get(topic)
        return None if known is None else len(known.assignment.partitions)

    # --- loading (the loader's thread)

    def _install(self, partition: int, loaded: LoadedPartition) -> None:
        by_shard: dict[int, list[str]] = {}
        for group_id in loaded.group_ids():
            by_shard.setdefault(self._shard_index(group_id), []).append(group_id)
        for index, shard in enumerate(self._shards):
            group_ids = by_shard.get(index, [])
            if not shard.owner.submit_waiting(lambda s=shard, g=group_ids: s.install(partition, loaded, g),
                                              HAND_OVER_TIMEOUT_S):
                log.error("group owner %s did not take %s-%d's groups", shard.owner.name, OFFSETS_TOPIC, partition)

    def _unload(self, partition: int) -> None:
        for shard in self._shards:
            if not shard.owner.submit_waiting(lambda s=shard: s.unload(partition), HAND_OVER_TIMEOUT_S):
                log.error("group owner %s did not unload %s-%d", shard.owner.name, OFFSETS_TOPIC, partition)

    # --- requests (request threads; never wait)

    def _shard_index(self, group_id: str) -> int:
        return hash(group_id) % len(self._shards)

    def _submit(self, group_id: str, work: Callable[[GroupShard, Future], None], busy) -> Future:
        future: Future = Future()
        shard = self._shards[self._shard_index(group_id)]
        if not shard.owner.submit(lambda: work(shard, future)):
            future.set_result(busy)
        return future

    def join(self, request: JoinRequest) -> Future:
        return self._submit(request.group_id, lambda s, f: s.join(request, f),
                            JoinResponse(ErrorCode.coordinator_not_available, request.member_id))

    def sync(self, request: SyncRequest) -> Future:
        return self._submit(request.group_id, lambda s, f: s.sync(request, f),
                            SyncResponse(ErrorCode.coordinator_not_available))

    def heartbeat(self, request: HeartbeatRequest) -> Future:
        return self._submit(request.group_id, lambda s, f: s.heartbeat(request, f),
                            ErrorCode.coordinator_not_available)

    def leave(self, group_id: str, members: tuple[MemberIdentity, ...]) -> Future:
        return self._submit(group_id, lambda s, f: s.leave(group_id, members, f),
                            LeaveResponse(ErrorCode.coordinator_not_available))

    def commit_offsets(self, request: OffsetCommitRequest) -> Future:
        return self._submit(request.group_id, lambda s, f: group_requests.commit(s, request, f),
                            {tp: ErrorCode.coordinator_not_available for tp in request.offsets})

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None) -> Future:
        wanted = None if partitions is None else list(partitions)
        return self._submit(group_id, lambda s, f: group_requests.fetch(s, group_id, wanted, f),
                            (ErrorCode.coordinator_not_available, {}))

    def describe(self, group_id: str) -> Future:
        return self._submit(group_id, lambda s, f: group_requests.describe(s, group_id, f),
                            GroupDescription(ErrorCode.coordinator_not_available, group_id))

    def delete_group(self, group_id: str) -> Future:
        return self._submit(group_id, lambda s, f: group_requests.delete_group(s, group_id, f),
                            ErrorCode.coordinator_not_available)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> Future:
        wanted = list(partitions)
        return self._submit(group_id, lambda s, f: group_requests.delete_offsets(s, group_id, wanted, f),
                            (ErrorCode.coordinator_not_available, {}))

    def list_groups(self) -> list[Future]:
        """One Future per owner, each answered with [(group_id, protocol_type, state)]."""
        futures = []
        for shard in self._shards:
            future: Future = Future()
            if not shard.owner.submit(lambda s=shard, f=future: group_requests.list_groups(s, f)):
                future.set_result(None)
            futures.append(future)
        return futures

    def any_loading(self) -> bool:
        return any(self.loader.is_loading(p) for p in range(self.offsets_partitions()))

"""The partitions this broker hosts, and the entry points of appends and reads.

The broker's replication, by module:
- partition.py: one partition's role, ISR and high watermark, under its lock;
- role_changes.py: the controller's LeaderAndIsr and StopReplica applied,
  with fencing, and the leadership listeners (became leader / stopped leading);
- isr_writer.py: the leaders' ISR changes, written to ZooKeeper by one
  thread, never on a request thread;
- waiters.py: acks=-1 producers and long polls waiting for partitions to change;
- quota.py: replication throttles; replica_fetcher.py: the follower side;
- handlers/control.py: the control requests adapted to the calls below.

Who calls what here:
- the controller's commands (through the LeaderAndIsr / StopReplica
  handlers): `apply_leader_and_isr`, `stop_replicas`, `delete_strays`;
  UpdateMetadata feeds `update_broker_endpoints`.
- the zk-agent: `update_topic_configs` (from /config/topics),
  `update_broker_defaults`.
- request handler threads: `append`/`await_commit` (Produce), `read`
  (consumer Fetch), `begin_follower_fetches`/`read_for_follower`/
  `end_follower_fetch` (follower Fetch), `end_offset_for_epoch`
  (OffsetForLeaderEpoch); ListOffsets reads the partitions through `get`.
- the broker's housekeeping: `maybe_shrink_isr` (every tick), and
  `high_watermarks` for the checkpoint.
- the log dir failure handler (broker/log_dir_failure.py):
  `handle_log_dir_failure`, once per dir that went offline.

A partition whose log was in an offline dir is offline here (Kafka's
HostedPartition.Offline): it leaves `partitions` for `offline_partitions`,
every request for it is answered KAFKA_STORAGE_ERROR (so is a LeaderAndIsr
naming it: the controller then takes the replica offline), and no new log
is created for it elsewhere while the process runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Callable

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker import isr as isr_rules
from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.fetch_session import PartitionChanges
from kafkactl.cluster.broker.isr_writer import IsrProposal, IsrWriter, PartitionStateStore
from kafkactl.cluster.broker.partition import (
    AppendResult, FollowerFetch, Partition, ReadResult, check_epoch,
)
from kafkactl.cluster.broker.quota import ReplicationThrottles
from kafkactl.cluster.broker.replica_fetcher import FetcherConfig, ReplicaFetcherManager, fetcher_config_from
from kafkactl.cluster.broker.role_changes import (
    LeaderAndIsrState, LeadershipEvents, LeadershipListener, RoleChanges,
)
from kafkactl.cluster.broker.topic_config import log_config_for
from kafkactl.cluster.broker.waiters import Waiters
from kafkactl.cluster.log.errors import LogError
from kafkactl.cluster.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

log = logging.getLogger(__name__)


class ReplicaManager:
    def __init__(self, config: BrokerConfig, log_manager, clock_ms: Callable[[], int],
                 partition_state_store: PartitionStateStore | None = None,
                 fetcher_config: FetcherConfig | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.log_manager = log_manager
        self.clock_ms = clock_ms
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Partitions whose log dir failed; replaced whole, so read without a lock.
        self.offline_partitions: frozenset[tuple[str, int]] = frozenset()
        self._partitions_lock = threading.Lock()   # writers of `partitions`; readers take a snapshot
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._min_insync_cache: dict[str, int] = {}   # topic -> min.insync.replicas, until its config changes
        self.waiters = Waiters(monotonic)
        self.throttles = ReplicationThrottles(lambda topic: self.topic_configs.get(topic, {}), self._isr_of,
                                              config.broker_id)
        self.fetchers = ReplicaFetcherManager(config.broker_id, fetcher_config or fetcher_config_from(config),
                                              throttle=self.throttles.follower)
        self.changes = PartitionChanges()   # what fetch sessions must read again (fetch_session.py)
        self.leadership = LeadershipEvents()
        self.role_changes = RoleChanges(self)
        self.isr_writer = IsrWriter(partition_state_store, clock_ms, self._reapply_isr_rules, self._isr_changed)
        if partition_state_store is not None:
            self.isr_writer.start()
        # Called after a LeaderAndIsr that created partitions or changed the role
        # of many (the broker freezes the garbage collector's heap then, see broker.py).
        self.after_large_change: Callable[[], None] | None = None
        # Read once: the checkpoint only seeds partitions created after start-up.
        self._checkpointed_high_watermarks = log_manager.read_high_watermarks()

    def set_partition_state_store(self, store: PartitionStateStore) -> None:
        """Wire the zk-agent's ZooKeeper calls (the agent is built after this manager)."""
        self.isr_writer.set_store(store)
        self.isr_writer.start()

    @property
    def partition_state_store(self) -> PartitionStateStore | None:
        return self.isr_writer.store

    def shutdown(self) -> None:
        """Stop every replica fetcher and the ISR writer; call before the logs are closed."""
        self.fetchers.shutdown()
        self.isr_writer.stop()

    def add_leadership_listener(self, listener: LeadershipListener, topics: Iterable[str] | None = None) -> None:
        """`listener.on_election(topic, partition, leader_epoch)` when this broker
        becomes leader of a partition (of `topics`, or any), `on_resignation`
        when it stops leading one (see role_changes.py)."""
        self.leadership.add_listener(listener, topics)

    # --- controller commands (role_changes.py)

    def apply_leader_and_isr(self, controller_id: int, controller_epoch: int,
                             partition_states: Iterable[LeaderAndIsrState],
                             live_leaders: Mapping[int, tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """Become leader or follower as the controller says (seed C, with leader epochs).

        Raises StaleControllerEpochError if `controller_epoch` is older than
        one seen before (the whole request is refused). Per partition: NONE
        when applied; STALE_CONTROLLER_EPOCH when its leader epoch is not
        newer than the current one (ignored, as Kafka does);
        UNKNOWN_TOPIC_OR_PARTITION when this broker is not among its
        replicas; KAFKA_STORAGE_ERROR when its log cannot be opened.
        `live_leaders` maps broker id to (host, port) for followers' fetchers.
        """
        return self.role_changes.apply_leader_and_isr(controller_id, controller_epoch, partition_states,
                                                      live_leaders)

    def stop_replicas(self, partitions: Mapping[tuple[str, int], int], delete: bool,
                      controller_epoch: int | None = None,
                      controller_id: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """StopReplica: stop fetching and serving `partitions`; delete their logs if `delete`.

        `partitions` maps (topic, partition) to the request's leader epoch:
        -1 or -2 (deletion) stop whatever the epoch; otherwise only an epoch
        newer than the current one does (FENCED_LEADER_EPOCH if not).
        Raises StaleControllerEpochError like apply_leader_and_isr.
        """
        return self.role_changes.stop_replicas(partitions, delete, controller_epoch, controller_id)

    def delete_strays(self, assigned: set[tuple[str, int]]) -> list[tuple[str, int]]:
        """After a full LeaderAndIsr (seed E, KIP-516): delete the local logs of
        partitions no longer assigned here (deleted or moved away while this
        broker was down). Returns what was deleted."""
        return self.role_changes.delete_strays(assigned)

    def update_broker_endpoints(self, endpoints: Mapping[int, tuple[str, int]]) -> None:
        """Where brokers listen (UpdateMetadata's live brokers): used for new fetchers."""
        self.role_changes.update_broker_endpoints(endpoints)

    # --- the registry

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def get_or_create(self, topic: str, index: int) -> Partition:
        """The hosted partition, its log opened or created (the control thread)."""
        key = (topic, index)
        partition = self.partitions.get(key)
        if partition is None:
            used = (self.config, self.topic_configs.get(topic))
            config = log_config_for(used[0], used[1] or {})
            log_ = self.log_manager.get_or_create_log(
                topic, index, config, self.config.log_dirs_preferred_media
            )
            partition = Partition(topic, index, log_, self.broker_id)
            partition.changes = self.changes
            partition.leadership = self.leadership
            future = self.log_manager.future_log(topic, index)
            if future is not None:     # a move interrupted by a restart: the mover goes on with it
                partition.attach_future(future)
            partition.high_watermark = min(
                self._checkpointed_high_watermarks.get(key, 0), log_.log_end_offset
            )
            with self._partitions_lock:
                self.partitions[key] = partition
            self.changes.note(key)   # a session may hold it from before (UNKNOWN_TOPIC_OR_PARTITION then)
            if self.config is not used[0] or self.topic_configs.get(topic) is not used[1]:
                # The zk-agent changed a config meanwhile and may have looked
                # at the hosted partitions before this one was among them.
                self.log_manager.update_config(topic, log_config_for(self.config, self.topic_configs.get(topic) or {}))
        return partition

    def handle_log_dir_failure(self, path: str) -> list[tuple[str, int]]:
        """The failure handler's thread (Kafka's ReplicaManager.handleLogDirFailure):
        the partitions whose log is in `path` stop fetching and go offline,
        then the dir's logs are closed. Under the control lock, so no
        LeaderAndIsr or StopReplica changes them meanwhile. Returns them."""
        with self.role_changes.control_lock:
            placements = [(key, is_future) for key, _, dir_path, is_future in self.log_manager.placements()
                          if dir_path == path]
            keys = [key for key, is_future in placements if not is_future]
            for key in [key for key, is_future in placements if is_future]:
                partition = self.partitions.get(key)
                if partition is not None:         # a move into the failed dir is abandoned
                    with partition.log_move_lock:
                        partition.attach_future(None)
            self.fetchers.remove_partitions(keys)
            with self._partitions_lock:
                stopped = [self.partitions.pop(key) for key in keys if key in self.partitions]
                self.offline_partitions = self.offline_partitions | set(keys)
            self.changes.note_many(keys)   # fetch sessions holding them answer their error
            for partition in stopped:
                partition.stop()           # a leader resigns (the leadership listeners hear of it)
            self.log_manager.handle_log_dir_failure(path)
        self.waiters.notify()              # acks=-1 producers and long polls waiting on them
        self.leadership.deliver()
        log.error("broker %s stopped serving %d replicas in offline log dir %s: %s", self.broker_id, len(keys),
                  path, ", ".join(f"{t}-{p}" for t, p in sorted(keys)[:20]) + (" ..." if len(keys) > 20 else ""))
        return keys

    def missing_error(self, topic: str, index: int) -> ErrorCode:
        """The error for a partition not in `partitions`: KAFKA_STORAGE_ERROR
        when its log dir failed, else UNKNOWN_TOPIC_OR_PARTITION."""
        if (topic, index) in self.offline_partitions:
            return ErrorCode.kafka_storage_error
        return ErrorCode.unknown_topic_or_partition

    def delete_partition(self, key: tuple[str, int]) -> ErrorCode:
        """StopReplica with deletion (the control thread): forget it, delete its log."""
        with self._partitions_lock:
            self.partitions.pop(key, None)
        self.changes.note(key)   # sessions holding it answer its error
        try:
            self.log_manager.delete_log(*key)
        except (LogError, OSError) as error:
            log.error("cannot delete the log of %s-%s: %s", key[0], key[1], error)
            return ErrorCode.kafka_storage_error
        return ErrorCode.none

    def note_log_start_offsets_moved(self) -> None:
        """Retention moved log start offsets (which partitions, the log manager
        does not say): fetch sessions look at every partition once, as a
        session without change tracking does at every fetch."""
        self.changes.note_many(list(self.partitions))

    def delete_records(self, topic: str, index: int, offset: int) -> tuple[ErrorCode, int]:
        """DeleteRecords on a partition this broker leads: (error, offset asked);
        the long polls are woken (followers learn the new log start offset
        from their next fetch answer)."""
        partition = self.get(topic, index)
        if partition is None:
            return ErrorCode.not_leader_or_follower, -1
        result = partition.delete_records_on_leader(offset)
        if result[0] == ErrorCode.none:
            self.waiters.notify(commits=False)
        return result

    def low_watermark(self, topic: str, index: int, live_brokers) -> int | None:
        partition = self.get(topic, index)
        return None if partition is None else partition.low_watermark_if_leader(live_brokers)

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {key: p.high_watermark for key, p in list(self.partitions.items())}

    def _isr_of(self, topic: str, index: int) -> tuple[int, ...] | None:
        partition = self.partitions.get((topic, index))
        return None if partition is None else partition.isr

    # --- topic configs and broker defaults (zk-agent thread)

    def update_topic_configs(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """Topic config overrides from /config/topics (the controller does not send them)."""
        for topic, overrides in configs.items():
            if dict(overrides) != self.topic_configs.get(topic):
                self._update_topic_config(topic, dict(overrides))

    def _update_topic_config(self, topic: str, overrides: dict[str, str]) -> None:
        self.topic_configs[topic] = dict(overrides)
        self._min_insync_cache = {}   # after the change, see _min_insync_replicas
        config = log_config_for(self.config, overrides)
        for (name, _), partition in list(self.partitions.items()):
            if name == topic:
                self.log_manager.update_config(topic, config)
                break

    def update_broker_defaults(self, config: BrokerConfig) -> None:
        """Dynamic broker defaults of the logs (log.retention.ms, min.insync.replicas, ...),
        on the zk-agent thread as topic configs are: every hosted topic's log
        config is resolved again; a topic's own overrides still win."""
        self.config = config
        self._min_insync_cache = {}   # after the config, see _min_insync_replicas
        hosted = {topic for topic, _ in list(self.partitions)}
        self.log_manager.update_default_config(
            config.default_log_config(),
            {topic: log_config_for(config, self.topic_configs.get(topic, {})) for topic in hosted})

    def _min_insync_replicas(self, topic: str) -> int:
        # Asked twice per acks=-1 produce: parsing the topic's overrides into
        # a LogConfig each time cost a few percent of a leader's Python time.
        # The cache is read before the configs: a config change replaces the
        # cache after changing the config, so a value computed from an old
        # config can only land in a cache that is already discarded.
        cache = self._min_insync_cache
        value = cache.get(topic)
        if value is None:
            value = log_config_for(self.config, self.topic_configs.get(topic, {})).min_insync_replicas
            cache[topic] = value
        return value

    # --- replication throttles (quota.py; the fetch handler asks `throttles`)

    def set_throttle_rates(self, leader_rate: int, follower_rate: int) -> None:
        self.throttles.set_rates(leader_rate, follower_rate)

    # --- ISR maintenance (proposals; isr_writer.py writes them)

    def maybe_shrink_isr(self, now_ms: int | None = None) -> None:
        """Propose dropping followers that have not caught up for
        replica.lag.time.max.ms (housekeeping); never waits for ZooKeeper."""
        if self.isr_writer.store is None:
            return
        now_ms = self.clock_ms() if now_ms is None else now_ms
        proposals = []
        for partition in list(self.partitions.values()):
            if not partition.is_leader:   # unlocked peek; propose_shrink checks again
                continue
            proposal = partition.propose_shrink(now_ms, self.config.replica_lag_time_max_ms,
                                                self.config.follower_fetch_pending_reads_insync_enable)
            if proposal is not None:
                log.info("%s-%s: shrinking ISR from %s to %s", partition.topic, partition.index,
                         list(partition.isr), list(proposal.isr))
                proposals.append(proposal)
        self._submit(proposals)

    def _submit(self, proposals: list[IsrProposal]) -> None:
        for proposal in proposals:
            if not self.isr_writer.submit(proposal):
                log.warning("%s-%s: ISR writer full; the ISR change is proposed again later",
                            proposal.partition.topic, proposal.partition.index)
                proposal.partition.withdraw_isr_change(proposal)

    def _reapply_isr_rules(self, partition: Partition, now_ms: int) -> IsrProposal | None:
        """The ISR writer's thread, after a conflict left the partition ours."""
        proposal = partition.propose_by_rules(now_ms, self.config.replica_lag_time_max_ms,
                                              self.config.follower_fetch_pending_reads_insync_enable)
        if proposal is not None:
            log.info("%s-%s: proposing ISR %s again after a conflict", partition.topic, partition.index,
                     list(proposal.isr))
        return proposal

    def _isr_changed(self, _partitions: list[Partition]) -> None:
        """The ISR writer's thread: ISRs changed or leaders stepped down."""
        self.waiters.notify()
        self.leadership.deliver()

    # --- produce

    def append(self, topic: str, index: int, records: bytes, required_acks: int) -> AppendResult:
        partition = self.partitions.get((topic, index))
        if partition is None:
            return AppendResult(self.missing_error(topic, index))
        high_watermark = partition.high_watermark
        result = partition.append_as_leader(records, required_acks, self._min_insync_replicas(topic))
        if result.error == ErrorCode.none:
            # An append wakes the followers' long polls (they fetch it at
            # once); consumers (who read below the high watermark) and acks=-1
            # producers only if it moved the high watermark (an ISR of the
            # leader alone): otherwise nothing they wait for changed.
            moved = partition.high_watermark != high_watermark
            self.waiters.notify(commits=moved, consumers=moved)
        return result

    def await_commit(self, topic: str, index: int, last_offset: int, deadline: float,
                     leader_epoch: int = -1) -> ErrorCode:
        """acks=-1: wait until the high watermark passes last_offset.

        NONE; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is below
        min.insync.replicas by then; NOT_LEADER_OR_FOLLOWER if leadership
        moved since the append (`leader_epoch`: the AppendResult's);
        REQUEST_TIMED_OUT at the deadline (on the waiters' monotonic clock).
        """
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ErrorCode.not_leader_or_follower
        min_isr = self._min_insync_replicas(topic)

        def outcome() -> ErrorCode | None:
            if self.partitions.get((topic, index)) is not partition:
                return ErrorCode.not_leader_or_follower
            return partition.commit_state(last_offset, leader_epoch, min_isr)

        return self.waiters.await_commit(outcome, deadline)

    def commit_outcome(self, topic: str, index: int, last_offset: int, leader_epoch: int) -> ErrorCode | None:
        """await_commit's answer now, without waiting: None while the high
        watermark has not passed `last_offset` (the coordinator's writes)."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ErrorCode.not_leader_or_follower
        return partition.commit_state(last_offset, leader_epoch, self._min_insync_replicas(topic))

    def wait_for_commit(self, topic: str, index: int, last_offset: int, deadline: float) -> bool:
        """True once the high watermark passes last_offset (acks=-1)."""
        return self.await_commit(topic, index, last_offset, deadline) == ErrorCode.none

    # --- fetch (consumers)

    @property
    def data_generation(self) -> int:
        return self.waiters.data_generation

    @property
    def follower_generation(self) -> int:
        return self.waiters.follower_generation

    def wait_for_data(self, timeout_s: float, generation: int, follower: bool = False) -> bool:
        return self.waiters.wait_for_data(timeout_s, generation, follower)

    def read(self, topic: str, index: int, fetch_offset: int, max_bytes: int,
             current_leader_epoch: int, min_one_batch: bool) -> ReadResult:
        """A consumer's read: only up to the high watermark."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ReadResult(self.missing_error(topic, index))
        return partition.read(fetch_offset, max_bytes, current_leader_epoch, min_one_batch, None)

    # --- fetch (followers, on the leader)

    def begin_follower_fetch(self, topic: str, index: int, follower_id: int, fetch_offset: int,
                             follower_log_start_offset: int, current_leader_epoch: int) -> FollowerFetch | None:
        """Record a follower's fetch: its log end offset, caught-up time, HW, ISR expansion.

        Returns a FollowerFetch to pass to end_follower_fetch once the fetch
        is answered, or None when nothing was recorded (errors are reported by
        read_for_follower).
        """
        [fetch] = self.begin_follower_fetches(
            [(topic, index, fetch_offset, follower_log_start_offset, current_leader_epoch)], follower_id)
        return fetch

    def begin_follower_fetches(self, fetches: Iterable[tuple[str, int, int, int, int]],
                               follower_id: int, now_ms: int | None = None,
                               clock: isr_rules.FollowerFetchClock | None = None) -> list[FollowerFetch | None]:
        """begin_follower_fetch for (topic, partition, fetch offset, log start
        offset, current leader epoch) of one fetch; the ISR expansions they
        prove are proposed to the ISR writer (never waited for). `now_ms`:
        when the fetch began (read before its session looked for changes);
        `clock`: its session's."""
        now_ms = self.clock_ms() if now_ms is None else now_ms
        pending_reads = self.config.follower_fetch_pending_reads_insync_enable
        may_change_isr = self.isr_writer.store is not None
        recorded: list[FollowerFetch | None] = []
        proposals = []
        high_watermark_moved = False
        for topic, index, fetch_offset, follower_log_start_offset, current_leader_epoch in fetches:
            partition = self.partitions.get((topic, index))
            outcome = None if partition is None else partition.record_follower_fetch(
                follower_id, fetch_offset, follower_log_start_offset, current_leader_epoch, now_ms, pending_reads,
                clock, may_change_isr)
            if outcome is None:
                recorded.append(None)
                continue
            fetch, moved, proposal = outcome
            recorded.append(fetch)
            high_watermark_moved |= moved
            if proposal is not None:
                log.info("%s-%s: expanding ISR from %s to %s", topic, index, list(partition.isr), list(proposal.isr))
                proposals.append(proposal)
        self._submit(proposals)
        if high_watermark_moved:
            self.waiters.notify(followers=False)   # acks=-1 producers and long-polling consumers
        return recorded

    def read_for_follower(self, topic: str, index: int, follower_id: int, fetch_offset: int, max_bytes: int,
                          current_leader_epoch: int, min_one_batch: bool) -> ReadResult:
        """A follower's read: up to the log end offset, not the high watermark."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ReadResult(self.missing_error(topic, index))
        return partition.read(fetch_offset, max_bytes, current_leader_epoch, min_one_batch, follower_id)

    def end_follower_fetch(self, fetch: FollowerFetch) -> None:
        fetch.partition.complete_follower_fetch(fetch, self.clock_ms())

    def begin_session_fetch(self, clock: isr_rules.FollowerFetchClock, now_ms: int) -> None:
        """A follower's session fetch began at `now_ms` (after its listed and
        changed partitions were recorded): it covers every partition it skips."""
        clock.begin_fetch(now_ms, self.config.follower_fetch_pending_reads_insync_enable)

    def end_session_fetch(self, clock: isr_rules.FollowerFetchClock) -> None:
        clock.end_fetch(self.clock_ms(), self.config.follower_fetch_pending_reads_insync_enable)

    def leave_sessions(self, keys: Iterable[tuple[str, int]], follower_id: int,
                       clock: isr_rules.FollowerFetchClock) -> None:
        """Partitions a follower's session forgot: its fetches stop covering them."""
        for key in keys:
            partition = self.partitions.get(key)
            if partition is not None:
                partition.leave_session(follower_id, clock)

    # --- OffsetForLeaderEpoch

    def end_offset_for_epoch(self, topic: str, index: int, current_leader_epoch: int,
                             leader_epoch: int) -> tuple[ErrorCode, int, int]:
        """(error, epoch, end offset): where `leader_epoch` ends in this leader's log."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return self.missing_error(topic, index), UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        with partition.lock:
            error = check_epoch(partition, current_leader_epoch)
        if error is not None:
            return error, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        epoch, end_offset = partition.log.end_offset_for_epoch(leader_epoch)
        return ErrorCode.none, epoch, end_offset

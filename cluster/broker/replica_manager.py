"""The partitions this broker hosts: roles, logs, replication, ISR, appends and reads.

Who calls what:
- the controller's commands (through the LeaderAndIsr / StopReplica
  handlers): `apply_leader_and_isr`, `stop_replicas`; UpdateMetadata may feed
  `update_broker_endpoints`. Control requests are applied one at a time.
- the zk-agent: `update_topic_configs` (from /config/topics).
- request handler threads: `append`/`await_commit` (Produce), `read`
  (consumer Fetch), `begin_follower_fetch`/`read_for_follower`/
  `end_follower_fetch` (follower Fetch), `end_offset_for_epoch`
  (OffsetForLeaderEpoch), `offset_for` (ListOffsets).
- the broker's housekeeping: `maybe_shrink_isr` (every tick), and
  `high_watermarks` for the checkpoint.
- replica fetcher threads (replica_fetcher.py): the `follower_*` methods of
  `Partition`.

A leader's high watermark is the smallest log end offset in its ISR and never
goes back. The leader changes its ISR itself, with a write of the partition
state znode conditional on its zkVersion (seed 000, discussion 3): while
that write is unresolved the high watermark stays where it is, and a leader
whose write meets a newer leader epoch (or another leader) stops acting as
leader at once, so a leader that was paused past its ZooKeeper session can
never acknowledge an acks=-1 produce that the new leader does not have.

Each `Partition` guards its role, ISR and high watermark with its own lock.
Long-polling fetches and acks=-1 producers wait on one condition that every
append, high-watermark advance and role change notifies.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Callable, NamedTuple

from kio.schema.errors import ErrorCode

from kafkactl.cluster.broker import isr as isr_rules
from kafkactl.cluster.broker.config import BrokerConfig
from kafkactl.cluster.broker.fetch_session import PartitionChanges
from kafkactl.cluster.broker.quota import (
    ReplicationQuota, ThrottledReplicasError, is_throttled, parse_throttled_replicas,
)
from kafkactl.cluster.broker.replica_fetcher import (
    FetcherConfig,
    PartitionFetchState,
    ReplicaFetcherManager,
    fetcher_config_from,
)
from kafkactl.cluster.broker.topic_config import log_config_for
from kafkactl.cluster.invariant import invariant
from kafkactl.cluster.log.errors import LogClosedError, LogError
from kafkactl.cluster.log.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkactl.cluster.zk.codecs import PartitionState

log = logging.getLogger(__name__)

# Kafka's ListOffsets sentinels.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

# A LeaderAndIsr changing at least this many roles leaves tens of thousands of
# new long-lived objects (follower states, partition states) behind.
LARGE_CHANGE_PARTITIONS = 1000

# StopReplica leader-epoch sentinels: stop whatever the current epoch.
STOP_REPLICA_NO_EPOCH = -1
STOP_REPLICA_EPOCH_DURING_DELETE = -2


class StaleControllerEpochError(Exception):
    """A control request from a controller older than one already heard from."""

    error_code = ErrorCode.stale_controller_epoch

    def __init__(self, request: str, controller_id: int, controller_epoch: int, current_epoch: int) -> None:
        super().__init__(f"{request} from controller {controller_id} at epoch {controller_epoch}, "
                         f"older than controller epoch {current_epoch}")
        self.controller_epoch = controller_epoch
        self.current_epoch = current_epoch


class PartitionStateConflict(Exception):
    """The partition state znode is not at the expected zkVersion (ZooKeeper's BadVersion)."""


@dataclass(frozen=True, slots=True)
class PartitionStateStore:
    """The ZooKeeper calls a leader needs to change its ISR (provided by the zk-agent).

    - write_partition_state(topic, partition, new_state, expected_zk_version):
      setData of /brokers/topics/<t>/partitions/<p>/state with
      codecs.encode_partition_state(new_state), conditional on
      expected_zk_version (and on the controller epoch znode, if the agent
      wants); returns the znode's new version. Raises PartitionStateConflict
      on BadVersion (or NoNode); any other exception means "outcome unknown".
    - read_partition_state(topic, partition): the current state, with
      `zk_version` set to the znode's version; None if the znode is absent.
    - notify_isr_change(topic, partition): announce the change under
      /isr_change_notification (batched as the agent likes); best effort.
    - write_partition_states / notify_isr_changes (optional): the same for
      many partitions at once, pipelined; one result per write (the new
      version, or the exception the single write would raise). A broker
      that rejoins takes back thousands of ISRs in one fetch.
    Each call must be bounded by a timeout.
    """

    write_partition_state: Callable[[str, int, PartitionState, int], int]
    read_partition_state: Callable[[str, int], PartitionState | None]
    notify_isr_change: Callable[[str, int], None]
    write_partition_states: Callable[[list[tuple[str, int, PartitionState, int]]], list] | None = None
    notify_isr_changes: Callable[[list[tuple[str, int]]], None] | None = None

    def write_many(self, writes: list[tuple[str, int, PartitionState, int]]) -> list:
        if self.write_partition_states is not None:
            return self.write_partition_states(writes)
        results = []
        for write in writes:
            try:
                results.append(self.write_partition_state(*write))
            except Exception as error:  # reported per write, as the batched call does
                results.append(error)
        return results

    def notify_many(self, partitions: list[tuple[str, int]]) -> None:
        if self.notify_isr_changes is not None:
            self.notify_isr_changes(partitions)
            return
        for topic, partition in partitions:
            self.notify_isr_change(topic, partition)


class LeaderAndIsrPartition(NamedTuple):
    """One partition of a LeaderAndIsr request, with its topic (a tuple: a
    failover brings 10,000s of them)."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int          # the state znode's zkVersion
    replicas: tuple[int, ...]
    is_new: bool = False
    leader_recovery_state: int = 0


def leader_and_isr_partitions(request) -> list[LeaderAndIsrPartition]:
    """The partition states of a control.LeaderAndIsrRequest."""
    return [
        LeaderAndIsrPartition(
            topic=topic.topic_name, partition=p.partition_index, controller_epoch=p.controller_epoch,
            leader=p.leader, leader_epoch=p.leader_epoch, isr=tuple(p.isr),
            partition_epoch=p.partition_epoch, replicas=tuple(p.replicas), is_new=p.is_new,
            leader_recovery_state=p.leader_recovery_state,
        )
        for topic in request.topic_states for p in topic.partition_states
    ]


def live_leader_endpoints(request) -> dict[int, tuple[str, int]]:
    """broker id -> (host, port) of a control.LeaderAndIsrRequest's live leaders."""
    return {leader.broker_id: (leader.host_name, leader.port) for leader in request.live_leaders}


def stop_replica_partitions(request) -> dict[bool, dict[tuple[str, int], int]]:
    """A control.StopReplicaRequest as {delete: {(topic, partition): leader_epoch}}."""
    result: dict[bool, dict[tuple[str, int], int]] = {True: {}, False: {}}
    for topic in request.topic_states:
        for p in topic.partition_states:
            result[p.delete_partition][(topic.topic_name, p.partition_index)] = p.leader_epoch
    return result


@dataclass(slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    last_offset: int = -1
    record_errors: tuple = ()  # record_validation.RecordError: (record index, message)
    leader_epoch: int = -1     # the epoch the batches were appended under


@dataclass(slots=True)
class ReadResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    region: object | None = None   # a file region of whole batches, or None
    size: int = 0
    # The fetcher has everything it may read here (a follower in the ISR at
    # the log end, a consumer at the high watermark): until the partition
    # changes, reading it again can only answer "nothing new".
    settled: bool = False


@dataclass(slots=True, eq=False)
class _IsrWrite:
    """A conditional ISR write sent to ZooKeeper; compared by identity."""

    isr: tuple[int, ...]
    leader_epoch: int
    failed: bool = False   # outcome unknown (not a conflict): resolve by reading the znode


@dataclass(slots=True, eq=False)
class FollowerFetch:
    """A follower's fetch being served by the leader (see begin_follower_fetch)."""

    partition: Partition
    follower_id: int
    leader_epoch: int
    record: isr_rules.FetchRecord


class Partition:
    def __init__(self, topic: str, index: int, log_, broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log_
        self.broker_id = broker_id
        self.lock = threading.Lock()
        # Serialises what changes the log's tail (follower appends,
        # truncation) with the log dir mover's copying and its swap, so a
        # future log never holds batches the current log no longer has.
        # Order: log_move_lock, then lock, then the logs' own locks.
        self.log_move_lock = threading.Lock()
        self.future_log = None                # the copy being made in another log dir, if any
        self.leader_id = -1
        self.leader_epoch = -1
        self.led_since_epoch = -1             # the epoch at which this broker last became leader
        self.controller_epoch = -1            # of the controller that decided the leadership
        self.zk_version = -1                  # the state znode's version (partition epoch)
        self.leader_recovery_state = 0
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.high_watermark = 0
        self.leader_epoch_start_offset = isr_rules.UNKNOWN_OFFSET
        self.followers: dict[int, isr_rules.FollowerState] = {}   # leader only
        self.isr_write: _IsrWrite | None = None
        self.key = (topic, index)
        # Where what fetch sessions must look at again is noted (the replica
        # manager's); None: nobody tracks changes (a bare Partition in tests).
        self.changes: PartitionChanges | None = None

    def _note_change(self) -> None:
        """Under the lock, before the change is visible (see PartitionChanges)."""
        if self.changes is not None:
            self.changes.note(self.key)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def is_following(self, leader_id: int, leader_epoch: int) -> bool:
        return leader_id != self.broker_id and (self.leader_id, self.leader_epoch) == (leader_id, leader_epoch)

    # --- roles from the controller

    def claim_for_controller(self, leader_epoch: int) -> bool:
        """Accept a LeaderAndIsr at `leader_epoch` only if it is newer: epochs never go back.
        Called by the control thread, the only writer of leader_epoch (one
        control request at a time), so the read needs no lock."""
        return leader_epoch > self.leader_epoch

    def make_leader(self, state: LeaderAndIsrPartition, now_ms: int) -> None:
        """The caller noted the change (ReplicaManager: one note for the whole request)."""
        with self.lock:
            is_new_leader = not self.is_leader
            self._take_state(state)
            self.leader_id = self.broker_id
            self._become_leader(now_ms, is_new_leader)

    def make_follower(self, state: LeaderAndIsrPartition) -> None:
        """The caller noted the change, as for make_leader."""
        with self.lock:
            self._take_state(state)
            self.leader_id = state.leader
            self._become_follower()

    def stop(self) -> None:
        """StopReplica: neither lead nor follow until a newer LeaderAndIsr says so."""
        with self.lock:
            self._note_change()
            self.leader_id = -1
            self._become_follower()

    def _take_state(self, state: LeaderAndIsrPartition) -> None:
        invariant(state.leader_epoch > self.leader_epoch,
                  f"{self.topic}-{self.index}: leader epoch {state.leader_epoch} after {self.leader_epoch}")
        self.controller_epoch = state.controller_epoch
        self.leader_epoch = state.leader_epoch
        self.zk_version = state.partition_epoch
        self.leader_recovery_state = state.leader_recovery_state
        self.isr = tuple(state.isr)
        self.replicas = tuple(state.replicas)
        self.isr_write = None  # a write still in flight answers to an older state

    def _become_leader(self, now_ms: int, is_new_leader: bool) -> None:
        if is_new_leader:
            self.led_since_epoch = self.leader_epoch
        # Batches appended from now on carry this epoch; the cache maps it to
        # the next offset so followers can truncate by epoch.
        log_end_offset = self.log.log_end_offset
        self.leader_epoch_start_offset = log_end_offset
        self.log.maybe_assign_epoch_start_offset(self.leader_epoch, log_end_offset)
        self._reset_followers(now_ms, is_new_leader)
        # The HW stays where it was as a follower: what lies between it and
        # the LEO is committed only once every ISR member has it.
        self.high_watermark = min(self.high_watermark, log_end_offset)
        if not is_new_leader or len(self.isr) <= 1:
            # A new leader with other ISR members knows none of their log end
            # offsets yet (reset above): its HW cannot move before they fetch.
            self._maybe_advance_high_watermark()

    def _reset_followers(self, now_ms: int, is_new_leader: bool) -> None:
        followers = {}
        for replica in self.replicas:
            if replica == self.broker_id:
                continue
            in_isr = replica in self.isr
            previous = self.followers.get(replica)
            if is_new_leader or previous is None:
                followers[replica] = isr_rules.reset_on_become_leader(replica, in_isr, now_ms)
            else:
                followers[replica] = previous._replace(last_caught_up_time_ms=now_ms if in_isr else 0, clock=None)
        self.followers = followers

    def _become_follower(self) -> None:
        self.leader_epoch_start_offset = isr_rules.UNKNOWN_OFFSET
        self.followers = {}
        self.isr_write = None
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    # --- the high watermark (leader)

    def _maybe_advance_high_watermark(self) -> bool:
        """Under the lock: move the HW up to the smallest LEO in the ISR; True if it moved."""
        if not self.is_leader or self.isr_write is not None:
            return False  # an unresolved ISR write freezes it (split-brain guard)
        candidate = isr_rules.high_watermark_candidate(
            self.broker_id, self.log.log_end_offset, self.isr, self.followers)
        new_high_watermark = isr_rules.next_high_watermark(self.high_watermark, candidate)
        invariant(new_high_watermark <= self.log.log_end_offset,
                  f"{self.topic}-{self.index}: high watermark {new_high_watermark} beyond the log end")
        moved = new_high_watermark != self.high_watermark
        if moved:
            self._note_change()
        self.high_watermark = new_high_watermark
        return moved

    # --- appends (leader)

    def append_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int) -> AppendResult:
        # Validated before the partition's lock: the record pass costs ~1 µs per
        # record, and followers' fetches and ISR changes wait on that lock.
        try:
            headers = self.log.check_produce(records)
        except Exception as error:
            return _refused(error)
        with self.lock:
            if not self.is_leader:
                return AppendResult(ErrorCode.not_leader_or_follower)
            if required_acks == -1 and len(self.isr) < min_insync_replicas:
                return AppendResult(ErrorCode.not_enough_replicas)
            self._note_change()   # before the log end moves (a failed append only costs a look)
            try:
                info = self.log.append_as_leader(records, self.leader_epoch, headers)
            except Exception as error:
                return _refused(error)
            self._maybe_advance_high_watermark()
            return AppendResult(ErrorCode.none, info.first_offset, self.log.log_start_offset,
                                last_offset=info.last_offset, leader_epoch=self.leader_epoch)

    def commit_state(self, last_offset: int, appended_epoch: int, min_insync_replicas: int) -> ErrorCode | None:
        """acks=-1: None while waiting, else the produce's outcome (Kafka's rules).

        `appended_epoch` (-1: unchecked) is the epoch the batch was appended
        under: if this broker stopped leading since, even if it leads again,
        the offset may now hold other records.
        """
        with self.lock:
            if not self.is_leader or 0 <= appended_epoch < self.led_since_epoch:
                return ErrorCode.not_leader_or_follower
            if self.high_watermark <= last_offset:
                return None
            if len(self.isr) < min_insync_replicas:
                return ErrorCode.not_enough_replicas_after_append
            return ErrorCode.none

    # --- follower fetches (leader)

    def record_follower_fetch(self, follower_id: int, fetch_offset: int, follower_log_start_offset: int,
                              current_leader_epoch: int, now_ms: int, pending_reads_enabled: bool,
                              clock: isr_rules.FollowerFetchClock | None = None):
        """(FollowerFetch, high watermark moved, ISR to propose or None); None if not recordable.
        `clock`: the follower's fetch session's (see isr.FollowerState.clock)."""
        with self.lock:
            if _check_epoch(self, current_leader_epoch) is not None or follower_id not in self.followers:
                return None
            log_end_offset = self.log.log_end_offset
            if not self.log.log_start_offset <= fetch_offset <= log_end_offset:
                return None  # answered OFFSET_OUT_OF_RANGE by the read; proves nothing
            previous = self.followers[follower_id]
            record = isr_rules.record_fetch(previous, fetch_offset, follower_log_start_offset,
                                            log_end_offset, now_ms, pending_reads_enabled, clock)
            self.followers[follower_id] = record.state
            # Only a follower's log end offset moving can move the HW here.
            moved = fetch_offset != previous.log_end_offset and self._maybe_advance_high_watermark()
            proposal = None
            if (follower_id not in self.isr and self.isr_write is None
                    and isr_rules.can_join_isr(record.state, self.high_watermark,
                                               self.leader_epoch_start_offset)):
                proposal = self.isr + (follower_id,)
            return FollowerFetch(self, follower_id, self.leader_epoch, record), moved, proposal

    def leave_session(self, follower_id: int, clock: isr_rules.FollowerFetchClock) -> None:
        """The follower's session dropped this partition: its fetches no longer cover it."""
        with self.lock:
            state = self.followers.get(follower_id)
            if state is not None and state.clock is clock:
                self.followers[follower_id] = isr_rules.settle(state)

    def complete_follower_fetch(self, fetch: FollowerFetch, now_ms: int) -> None:
        with self.lock:
            state = self.followers.get(fetch.follower_id)
            if state is None or not self.is_leader or self.leader_epoch != fetch.leader_epoch:
                return
            self.followers[fetch.follower_id] = isr_rules.complete_fetch(state, fetch.record, now_ms)

    # --- ISR changes (leader)

    def shrink_proposal(self, now_ms: int, replica_lag_time_max_ms: int,
                        pending_reads_enabled: bool) -> tuple[int, ...] | None:
        with self.lock:
            if not self.is_leader or self.isr_write is not None:
                return None
            out = isr_rules.out_of_sync_replicas(self.broker_id, self.isr, self.followers,
                                                 self.log.log_end_offset, now_ms,
                                                 replica_lag_time_max_ms, pending_reads_enabled)
            if not out:
                return None
            return tuple(r for r in self.isr if r not in out)

    def begin_isr_write(self, new_isr: tuple[int, ...]) -> tuple[_IsrWrite, PartitionState, int] | None:
        """Start a conditional ISR write: (write, state to write, expected zkVersion)."""
        with self.lock:
            if not self.is_leader or self.isr_write is not None:
                return None
            write = _IsrWrite(tuple(new_isr), self.leader_epoch)
            self.isr_write = write
            state = PartitionState(leader=self.broker_id, leader_epoch=self.leader_epoch, isr=list(new_isr),
                                   controller_epoch=self.controller_epoch,
                                   leader_recovery_state=self.leader_recovery_state)
            return write, state, self.zk_version

    def finish_isr_write(self, write: _IsrWrite, new_zk_version: int) -> bool:
        with self.lock:
            if self.isr_write is not write:
                return False  # a LeaderAndIsr replaced the state meanwhile
            self._note_change()   # a follower that joined settles; one waiting to join tries again
            self.isr, self.zk_version, self.isr_write = write.isr, new_zk_version, None
            self._maybe_advance_high_watermark()
            return True

    def isr_write_failed(self, write: _IsrWrite) -> None:
        with self.lock:
            if self.isr_write is write:
                write.failed = True

    def resolve_isr_write(self, write: _IsrWrite, current: PartitionState | None) -> bool:
        """Settle a conflicting or failed write from the znode's state; True if superseded."""
        with self.lock:
            if self.isr_write is not write:
                return False
            self._note_change()
            self.isr_write = None
            still_ours = (current is not None and current.leader == self.broker_id
                          and current.leader_epoch == write.leader_epoch)
            if still_ours:
                # The znode holds the truth, e.g. our write landed but its answer was lost.
                self.isr, self.zk_version = tuple(current.isr), current.zk_version
                self._maybe_advance_high_watermark()
                return False
            self.leader_id = -1   # the leader epoch stays: the newer LeaderAndIsr must still apply
            self._become_follower()
            return True

    # --- the follower side (replica fetcher thread)

    def follower_truncate_to(self, offset: int) -> None:
        with self.log_move_lock:
            self.log.truncate_to(offset)
            if self.future_log is not None and self.future_log.log_end_offset > self.log.log_end_offset:
                self.future_log.truncate_to(self.log.log_end_offset)
            with self.lock:
                self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    def follower_truncate_fully_and_start_at(self, offset: int) -> None:
        with self.log_move_lock:
            self.log.truncate_fully_and_start_at(offset)
            if self.future_log is not None:
                self.future_log.truncate_fully_and_start_at(offset)
            with self.lock:
                self.high_watermark = offset

    def follower_append(self, records: bytes):
        with self.log_move_lock:
            return self.log.append_as_follower(records)

    # --- moves between log dirs (log_dir_mover.py)

    def attach_future(self, future_log) -> None:
        """Under log_move_lock: truncations reach `future_log` from now on."""
        self.future_log = future_log

    def replace_log(self, new_log) -> None:
        """Under log_move_lock and lock: the swapped-in log serves everything from now on."""
        self._note_change()
        self.log = new_log
        self.future_log = None

    def follower_update(self, leader_high_watermark: int, leader_log_start_offset: int) -> None:
        """After a fetch: the HW and log start offset follow the leader's, within our log."""
        log_end_offset = self.log.log_end_offset
        if 0 <= leader_log_start_offset <= log_end_offset:
            self.log.maybe_increment_log_start_offset(leader_log_start_offset)
        with self.lock:
            if not self.is_leader and leader_high_watermark >= 0:
                self.high_watermark = min(leader_high_watermark, log_end_offset)


class ReplicaManager:
    def __init__(self, config: BrokerConfig, log_manager, clock_ms: Callable[[], int],
                 partition_state_store: PartitionStateStore | None = None,
                 fetcher_config: FetcherConfig | None = None) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.log_manager = log_manager
        self.clock_ms = clock_ms
        self.partition_state_store = partition_state_store
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._min_insync_cache: dict[str, int] = {}   # topic -> min.insync.replicas, until its config changes
        self.controller_epoch = -1   # the newest controller epoch a control request carried
        self.leader_quota = ReplicationQuota()
        self.follower_quota = ReplicationQuota()
        self.fetchers = ReplicaFetcherManager(config.broker_id, fetcher_config or fetcher_config_from(config),
                                              throttle=_FollowerThrottle(self))
        self._broker_endpoints: dict[int, tuple[str, int]] = {}
        self._partitions_lock = threading.Lock()
        self._control_lock = threading.Lock()   # one control request at a time
        self.data_arrived = threading.Condition()
        self.data_generation = 0      # bumped (under data_arrived) by every notification
        # acks=-1 producers wait apart from the long polls: a leader's append
        # (one per produce request) then wakes only the fetches it feeds.
        self.commit_changed = threading.Condition()
        # Followers' long polls apart from consumers': a follower has nothing
        # new when only the high watermark moves (Kafka's follower fetch is
        # not completed by it either), which happens once per replicated
        # produce, right when its producer is to be answered.
        self.follower_data = threading.Condition()
        self.follower_generation = 0
        self.changes = PartitionChanges()   # what fetch sessions must read again (fetch_session.py)
        # Called after a LeaderAndIsr that created partitions or changed the role
        # of many (the broker freezes the garbage collector's heap then, see broker.py).
        self.after_large_change: Callable[[], None] | None = None
        # Read once: the checkpoint only seeds partitions created after start-up.
        self._checkpointed_high_watermarks = log_manager.read_high_watermarks()

    def set_partition_state_store(self, store: PartitionStateStore) -> None:
        """Wire the zk-agent's ZooKeeper calls (the agent is built after this manager)."""
        self.partition_state_store = store

    def shutdown(self) -> None:
        """Stop every replica fetcher; call before the logs are closed."""
        self.fetchers.shutdown()

    # --- controller commands

    def apply_leader_and_isr(self, controller_id: int, controller_epoch: int,
                             partition_states: Iterable[LeaderAndIsrPartition],
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
        timer = _ApplyTimer(time.monotonic())
        with self._control_lock:
            timer.locked_s = time.monotonic()
            self._check_controller_epoch("LeaderAndIsr", controller_id, controller_epoch)
            self.update_broker_endpoints(live_leaders)
            errors: dict[tuple[str, int], ErrorCode] = {}
            leading, following = [], []
            hosted = len(self.partitions)
            for state in partition_states:
                error, partition = self._accept(state, controller_id)
                errors[(state.topic, state.partition)] = error
                if partition is not None:
                    (leading if state.leader == self.broker_id else following).append((partition, state))
            timer.accepted_s = time.monotonic()
            self._make_leaders(leading, timer)
            self._make_followers(following)
            large = len(self.partitions) > hosted or len(leading) + len(following) >= LARGE_CHANGE_PARTITIONS
        self._notify_data()
        if large and self.after_large_change is not None:
            self.after_large_change()
        return errors

    def stop_replicas(self, partitions: Mapping[tuple[str, int], int], delete: bool,
                      controller_epoch: int | None = None,
                      controller_id: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """StopReplica: stop fetching and serving `partitions`; delete their logs if `delete`.

        `partitions` maps (topic, partition) to the request's leader epoch:
        -1 or -2 (deletion) stop whatever the epoch; otherwise only an epoch
        newer than the current one does (FENCED_LEADER_EPOCH if not).
        Raises StaleControllerEpochError like apply_leader_and_isr.
        """
        with self._control_lock:
            if controller_epoch is not None:
                self._check_controller_epoch("StopReplica", controller_id, controller_epoch)
            errors: dict[tuple[str, int], ErrorCode] = {}
            stopping = []
            for key, request_epoch in partitions.items():
                partition = self.partitions.get(key)
                if partition is None or request_epoch in (STOP_REPLICA_NO_EPOCH, STOP_REPLICA_EPOCH_DURING_DELETE) \
                        or request_epoch > partition.leader_epoch:
                    stopping.append((key, partition))
                    errors[key] = ErrorCode.none
                else:
                    errors[key] = ErrorCode.fenced_leader_epoch
            self.fetchers.remove_partitions([key for key, _ in stopping])
            for key, partition in stopping:
                if partition is not None:
                    partition.stop()
                if delete:
                    errors[key] = self._delete_partition(key)
        self._notify_data()
        return errors

    def delete_strays(self, assigned: set[tuple[str, int]]) -> list[tuple[str, int]]:
        """After a full LeaderAndIsr (seed E, KIP-516): delete the local logs of
        partitions no longer assigned here (deleted or moved away while this
        broker was down). Returns what was deleted."""
        local = set(self.partitions) | set(self.log_manager.all_logs())
        strays = sorted(local - assigned)
        if strays:
            log.info("deleting stray partitions not assigned to broker %s: %s", self.broker_id,
                     ", ".join(f"{t}-{p}" for t, p in strays[:20]))
            self.stop_replicas({key: STOP_REPLICA_EPOCH_DURING_DELETE for key in strays}, delete=True)
        return strays

    def update_broker_endpoints(self, endpoints: Mapping[int, tuple[str, int]]) -> None:
        """Where brokers listen (UpdateMetadata's live brokers): used for new fetchers."""
        self._broker_endpoints.update({b: (str(host), int(port)) for b, (host, port) in endpoints.items()})

    def _check_controller_epoch(self, request: str, controller_id: int, controller_epoch: int) -> None:
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(request, controller_id, controller_epoch, self.controller_epoch)
        self.controller_epoch = controller_epoch

    def _accept(self, state: LeaderAndIsrPartition, controller_id: int) -> tuple[ErrorCode, Partition | None]:
        # Runs for every partition of a failover: the common case (a hosted
        # partition, a newer epoch) formats and locks nothing.
        if self.broker_id not in state.replicas:
            log.warning("ignoring LeaderAndIsr for %s-%s from controller %s: broker %s is not among replicas %s",
                        state.topic, state.partition, controller_id, self.broker_id, list(state.replicas))
            return ErrorCode.unknown_topic_or_partition, None
        partition = self.partitions.get((state.topic, state.partition))
        if partition is None:
            try:
                partition = self._get_or_create(state.topic, state.partition)
            except ValueError as error:
                log.warning("ignoring LeaderAndIsr for %s-%s: %s", state.topic, state.partition, error)
                return ErrorCode.unknown_topic_or_partition, None
            except (LogError, OSError) as error:
                log.error("cannot open the log of %s-%s: %s", state.topic, state.partition, error)
                return ErrorCode.kafka_storage_error, None
        if not partition.claim_for_controller(state.leader_epoch):
            log.info("ignoring LeaderAndIsr for %s-%s from controller %s: leader epoch %s is not newer than %s",
                     state.topic, state.partition, controller_id, state.leader_epoch, partition.leader_epoch)
            return ErrorCode.stale_controller_epoch, None
        return ErrorCode.none, partition

    def _make_leaders(self, leading: list[tuple[Partition, LeaderAndIsrPartition]],
                      timer: "_ApplyTimer | None" = None) -> None:
        if not leading:
            return
        timer = timer or _ApplyTimer(time.monotonic())
        # First stop fetching: nothing from the old leader may be appended
        # once this broker appends as leader.
        self.fetchers.remove_partitions([p.key for p, _ in leading])
        stopped_s = time.monotonic()
        # The ISR's followers count as caught up from when the leadership takes
        # effect, not from the request's arrival: creating thousands of logs
        # before this can take longer than replica.lag.time.max.ms.
        now_ms = self.clock_ms()
        self.changes.note_many([p.key for p, _ in leading])   # before any role changes
        for partition, state in leading:
            partition.make_leader(state, now_ms)
        # "took" counts from the request's arrival in apply_leader_and_isr.
        log.info("leader of %d partitions (took %.0f ms: %s): %s", len(leading),
                 (time.monotonic() - timer.start_s) * 1000, timer.parts(stopped_s), summarize(leading))

    def _make_followers(self, following: list[tuple[Partition, LeaderAndIsrPartition]]) -> None:
        if not following:
            return
        self.fetchers.remove_partitions([p.key for p, _ in following])
        self.changes.note_many([p.key for p, _ in following])   # before any role changes
        by_leader: dict[int, list[PartitionFetchState]] = {}
        for partition, state in following:
            partition.make_follower(state)
            if state.leader < 0:
                continue  # no leader: nothing to fetch until one is elected
            if state.leader not in self._broker_endpoints:
                log.warning("%s-%s: leader %s is not among the live leaders: not fetching",
                            state.topic, state.partition, state.leader)
                continue
            by_leader.setdefault(state.leader, []).append(
                PartitionFetchState(partition, state.leader, state.leader_epoch))
        for leader_id, states in by_leader.items():
            self.fetchers.add_partitions(leader_id, self._broker_endpoints[leader_id], states)
        log.info("follower of %d partitions: %s", len(following), summarize(following))

    def _delete_partition(self, key: tuple[str, int]) -> ErrorCode:
        with self._partitions_lock:
            self.partitions.pop(key, None)
        self.changes.note(key)   # sessions holding it answer its error
        try:
            self.log_manager.delete_log(*key)
        except (LogError, OSError) as error:
            log.error("cannot delete the log of %s-%s: %s", key[0], key[1], error)
            return ErrorCode.kafka_storage_error
        return ErrorCode.none

    # --- topic configs (zk-agent thread)

    # --- replication throttles (KIP-73)

    def set_throttle_rates(self, leader_rate: int, follower_rate: int) -> None:
        """Dynamic leader/follower.replication.throttled.rate (broker.py resolves them)."""
        self.leader_quota.set_rate(leader_rate)
        self.follower_quota.set_rate(follower_rate)

    def throttled_replicas(self, topic: str, direction: str):
        value = self.topic_configs.get(topic, {}).get(f"{direction}.replication.throttled.replicas", "")
        try:
            return parse_throttled_replicas(value)
        except ThrottledReplicasError:
            return frozenset()

    def leader_throttled_replica(self, topic: str, index: int, follower_id: int) -> bool:
        """The follower's replica is throttled and out of sync (ISR members never are)."""
        partition = self.partitions.get((topic, index))
        if partition is None or follower_id in partition.isr:
            return False
        return is_throttled(self.throttled_replicas(topic, "leader"), index, follower_id)

    def leader_throttled(self, topic: str, index: int, follower_id: int) -> bool:
        """Serve this follower nothing now: a throttled replica while over the rate."""
        return self.leader_quota.is_exceeded() and self.leader_throttled_replica(topic, index, follower_id)

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

    def _get_or_create(self, topic: str, index: int) -> Partition:
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

    def note_log_start_offsets_moved(self) -> None:
        """Retention moved log start offsets (which partitions, the log manager
        does not say): fetch sessions look at every partition once, as a
        session without change tracking does at every fetch."""
        self.changes.note_many(list(self.partitions))

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

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

    # --- ISR maintenance

    def maybe_shrink_isr(self, now_ms: int | None = None) -> None:
        """Drop followers that have not caught up for replica.lag.time.max.ms (housekeeping).

        Also settles ISR writes whose outcome was unknown (the HW stays frozen
        until then).
        """
        if self.partition_state_store is None:
            return
        now_ms = self.clock_ms() if now_ms is None else now_ms
        changes: list[tuple[Partition, tuple[int, ...]]] = []
        for partition in list(self.partitions.values()):
            if not partition.is_leader:   # unlocked peek; shrink_proposal checks again
                continue
            write = partition.isr_write
            if write is not None:
                if write.failed:
                    self._resolve_isr_write(partition, write)
                continue
            proposal = partition.shrink_proposal(now_ms, self.config.replica_lag_time_max_ms,
                                                 self.config.follower_fetch_pending_reads_insync_enable)
            if proposal is not None:
                log.info("%s-%s: shrinking ISR from %s to %s", partition.topic, partition.index,
                         list(partition.isr), list(proposal))
                changes.append((partition, proposal))
        self._change_isrs(changes)

    def _change_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> bool:
        return partition in self._change_isrs([(partition, new_isr)])

    def _change_isrs(self, changes: list[tuple[Partition, tuple[int, ...]]]) -> list[Partition]:
        """Write the ISR changes (conditionally, pipelined) and announce the
        ones that went in, in one notification; returns those partitions."""
        store = self.partition_state_store
        if store is None or not changes:
            return []
        begun = [(partition, b) for partition, isr in changes if (b := partition.begin_isr_write(isr)) is not None]
        if not begun:
            return []
        try:
            results = store.write_many([(p.topic, p.index, state, expected) for p, (_, state, expected) in begun])
        except Exception as error:  # the whole batch failed before any answer: every outcome unknown
            results = [error] * len(begun)
        changed = []
        for (partition, (write, _, expected_zk_version)), result in zip(begun, results):
            if isinstance(result, PartitionStateConflict):
                log.warning("%s-%s: partition state changed under us (expected zkVersion %s); re-reading",
                            partition.topic, partition.index, expected_zk_version)
                self._resolve_isr_write(partition, write)
            elif isinstance(result, Exception):   # the agent's ZooKeeper errors vary: outcome unknown
                log.warning("%s-%s: ISR write failed, outcome unknown (high watermark frozen): %s",
                            partition.topic, partition.index, result)
                partition.isr_write_failed(write)
            elif partition.finish_isr_write(write, result):
                changed.append(partition)
        if changed:
            self._announce_isr_changes(changed)
            self._notify_data()
        return changed

    def _resolve_isr_write(self, partition: Partition, write: _IsrWrite) -> None:
        try:
            current = self.partition_state_store.read_partition_state(partition.topic, partition.index)
        except Exception as error:  # as above: retried from maybe_shrink_isr
            log.warning("%s-%s: cannot read the partition state: %s", partition.topic, partition.index, error)
            partition.isr_write_failed(write)
            return
        if partition.resolve_isr_write(write, current):
            log.warning("%s-%s: superseded (leader %s, epoch %s): no longer acting as leader at epoch %s",
                        partition.topic, partition.index, getattr(current, "leader", None),
                        getattr(current, "leader_epoch", None), write.leader_epoch)
        self._notify_data()

    def _announce_isr_changes(self, partitions: list[Partition]) -> None:
        try:
            self.partition_state_store.notify_many([(p.topic, p.index) for p in partitions])
        except Exception as error:  # best effort: the controller also reads the state znodes
            log.warning("ISR change notification of %d partitions failed: %s", len(partitions), error)

    # --- produce

    def append(self, topic: str, index: int, records: bytes, required_acks: int) -> AppendResult:
        partition = self.partitions.get((topic, index))
        if partition is None:
            return AppendResult(ErrorCode.unknown_topic_or_partition)
        high_watermark = partition.high_watermark
        result = partition.append_as_leader(records, required_acks, self._min_insync_replicas(topic))
        if result.error == ErrorCode.none:
            # An append wakes the followers' long polls (they fetch it at
            # once); consumers (who read below the high watermark) and acks=-1
            # producers only if it moved the high watermark (an ISR of the
            # leader alone): otherwise nothing they wait for changed.
            moved = partition.high_watermark != high_watermark
            self._notify_data(commits=moved, consumers=moved)
        return result

    def await_commit(self, topic: str, index: int, last_offset: int, deadline: float,
                     leader_epoch: int = -1) -> ErrorCode:
        """acks=-1: wait until the high watermark passes last_offset.

        NONE; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is below
        min.insync.replicas by then; NOT_LEADER_OR_FOLLOWER if leadership
        moved since the append (`leader_epoch`: the AppendResult's);
        REQUEST_TIMED_OUT at the deadline (time.monotonic()).
        """
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ErrorCode.not_leader_or_follower
        min_isr = self._min_insync_replicas(topic)
        with self.commit_changed:
            while True:
                if self.partitions.get((topic, index)) is not partition:
                    return ErrorCode.not_leader_or_follower
                outcome = partition.commit_state(last_offset, leader_epoch, min_isr)
                if outcome is not None:
                    return outcome
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ErrorCode.request_timed_out
                self.commit_changed.wait(remaining)

    def wait_for_commit(self, topic: str, index: int, last_offset: int, deadline: float) -> bool:
        """True once the high watermark passes last_offset (acks=-1)."""
        return self.await_commit(topic, index, last_offset, deadline) == ErrorCode.none

    def _notify_data(self, commits: bool = True, followers: bool = True, consumers: bool = True) -> None:
        """Wake who may have something new: acks=-1 producers (`commits`), the
        followers' long polls (`followers`: data appended, or anything but a
        high watermark move) and the consumers' (`consumers`: the high
        watermark moved, or anything but an append). A change of role, ISR
        or the hosted partitions wakes all three."""
        # Producers first: a high watermark move is what they wait for.
        if commits:
            with self.commit_changed:
                self.commit_changed.notify_all()
        if followers:
            with self.follower_data:
                self.follower_generation += 1
                self.follower_data.notify_all()
        if consumers:
            with self.data_arrived:
                self.data_generation += 1
                self.data_arrived.notify_all()

    # --- fetch (consumers)

    def read(self, topic: str, index: int, fetch_offset: int, max_bytes: int,
             current_leader_epoch: int, min_one_batch: bool) -> ReadResult:
        """A consumer's read: only up to the high watermark."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ReadResult(ErrorCode.unknown_topic_or_partition)
        return self._read(partition, fetch_offset, max_bytes, current_leader_epoch, min_one_batch, None)

    def wait_for_data(self, timeout_s: float, generation: int, follower: bool = False) -> bool:
        """Wait until something was appended or committed after `generation`
        (read `data_generation`, or `follower_generation` for a follower's
        fetch, before reading the logs, so nothing that happens during the
        read is missed); False when nothing was."""
        if follower:
            with self.follower_data:
                if self.follower_generation == generation and timeout_s > 0:
                    self.follower_data.wait(timeout_s)
                return self.follower_generation != generation
        with self.data_arrived:
            if self.data_generation == generation and timeout_s > 0:
                self.data_arrived.wait(timeout_s)
            return self.data_generation != generation

    def _read(self, partition: Partition, fetch_offset: int, max_bytes: int, current_leader_epoch: int,
              min_one_batch: bool, follower_id: int | None) -> ReadResult:
        with partition.lock:
            error = _check_epoch(partition, current_leader_epoch)
            if error is None and follower_id is not None and follower_id not in partition.followers:
                error = ErrorCode.not_leader_or_follower  # not an assigned replica
            high_watermark = partition.high_watermark
            log_ = partition.log
            # A follower outside the ISR is looked at on every fetch until it joins.
            settled_here = follower_id is None or follower_id in partition.isr
        if error is not None:
            return ReadResult(error)
        if fetch_offset < log_.log_start_offset or fetch_offset > log_.log_end_offset:
            return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
        if follower_id is None and fetch_offset >= high_watermark:
            # Between the HW and the LEO there is nothing a consumer may see
            # yet: answer empty, not out of range (seed 000, discussion 7).
            return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, settled=True)
        if fetch_offset == log_.log_end_offset:   # a caught-up follower: nothing to read
            return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, settled=settled_here)
        max_offset = None if follower_id is not None else high_watermark
        try:
            data = log_.read(fetch_offset, max_bytes, max_offset, min_one_batch)
        except LogClosedError:
            if partition.log is log_:
                raise
            # A move between log dirs swapped the log under this read: read the new one.
            return self._read(partition, fetch_offset, max_bytes, current_leader_epoch, min_one_batch, follower_id)
        except Exception as error:
            if getattr(error, "error_code", None) == ErrorCode.offset_out_of_range.value:
                return ReadResult(ErrorCode.offset_out_of_range, high_watermark, log_.log_start_offset)
            raise
        region = getattr(data, "region", data) if data is not None else None
        size = region.length if region is not None else 0
        return ReadResult(ErrorCode.none, high_watermark, log_.log_start_offset, region if size else None, size)

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
        prove are written together. `now_ms`: when the fetch began (read
        before its session looked for changes); `clock`: its session's."""
        now_ms = self.clock_ms() if now_ms is None else now_ms
        pending_reads = self.config.follower_fetch_pending_reads_insync_enable
        recorded: list[FollowerFetch | None] = []
        expansions = []
        high_watermark_moved = False
        for topic, index, fetch_offset, follower_log_start_offset, current_leader_epoch in fetches:
            partition = self.partitions.get((topic, index))
            outcome = None if partition is None else partition.record_follower_fetch(
                follower_id, fetch_offset, follower_log_start_offset, current_leader_epoch, now_ms, pending_reads,
                clock)
            if outcome is None:
                recorded.append(None)
                continue
            fetch, moved, proposal = outcome
            recorded.append(fetch)
            high_watermark_moved |= moved
            if proposal is not None and self.partition_state_store is not None:
                log.info("%s-%s: expanding ISR from %s to %s", topic, index, list(partition.isr), list(proposal))
                expansions.append((partition, proposal))
        self._change_isrs(expansions)
        if high_watermark_moved:
            self._notify_data(followers=False)   # acks=-1 producers and long-polling consumers
        return recorded

    def read_for_follower(self, topic: str, index: int, follower_id: int, fetch_offset: int, max_bytes: int,
                          current_leader_epoch: int, min_one_batch: bool) -> ReadResult:
        """A follower's read: up to the log end offset, not the high watermark."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            return ReadResult(ErrorCode.unknown_topic_or_partition)
        return self._read(partition, fetch_offset, max_bytes, current_leader_epoch, min_one_batch, follower_id)

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
            return ErrorCode.unknown_topic_or_partition, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        with partition.lock:
            error = _check_epoch(partition, current_leader_epoch)
        if error is not None:
            return error, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        epoch, end_offset = partition.log.end_offset_for_epoch(leader_epoch)
        return ErrorCode.none, epoch, end_offset

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


class _ApplyTimer:
    """Where a LeaderAndIsr's time went, for its log line (a failover of
    thousands of partitions is judged by it)."""

    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self.locked_s = start_s
        self.accepted_s = start_s

    def parts(self, fetchers_stopped_s: float) -> str:
        ms = lambda a, b: (b - a) * 1000  # noqa: E731
        return (f"lock wait {ms(self.start_s, self.locked_s):.0f}, checks {ms(self.locked_s, self.accepted_s):.0f}, "
                f"fetchers stopped {ms(self.accepted_s, fetchers_stopped_s):.0f}, "
                f"leaders {ms(fetchers_stopped_s, time.monotonic()):.0f}")


def _check_epoch(partition: Partition, current_leader_epoch: int) -> ErrorCode | None:
    """Fence requests made with another leader epoch (KIP-320); -1 means unchecked."""
    if not partition.is_leader:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch == -1 or current_leader_epoch == partition.leader_epoch:
        return None
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


def summarize(changes: list[tuple[Partition, LeaderAndIsrPartition]], limit: int = 5) -> str:
    """The first few of a role change, for one log line per request instead
    of one per partition (thousands of lines on a failover)."""
    shown = ", ".join(f"{s.topic}-{s.partition} (leader {s.leader}, epoch {s.leader_epoch})"
                      for _, s in changes[:limit])
    return shown + (f" and {len(changes) - limit} more" if len(changes) > limit else "")


def monotonic_deadline(timeout_ms: int) -> float:
    return time.monotonic() + max(0, timeout_ms) / 1000


class _FollowerThrottle:
    """What the fetcher threads ask about `follower.replication.throttled.*`."""

    def __init__(self, manager: ReplicaManager) -> None:
        self._manager = manager

    def is_throttled(self, partition) -> bool:
        throttled = self._manager.throttled_replicas(partition.topic, "follower")
        return is_throttled(throttled, partition.index, partition.broker_id) \
            and partition.broker_id not in partition.isr

    def exceeded(self) -> bool:
        """Over `follower.replication.throttled.rate`: throttled partitions sit out."""
        return self._manager.follower_quota.is_exceeded()

    def record(self, size_bytes: int) -> None:
        self._manager.follower_quota.record(size_bytes)


def _refused(error: Exception) -> AppendResult:
    """A produce the log refused, with Kafka's error code; other errors propagate."""
    code = getattr(error, "error_code", None)
    if code is None:
        raise error
    return AppendResult(ErrorCode(code), message=str(error),
                        record_errors=tuple(getattr(error, "record_errors", ())))
